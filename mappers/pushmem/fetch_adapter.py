"""Physical buffers placed on tiles → the wide-fetch scheduling problem; the no-shift baseline."""

from __future__ import annotations

import numpy as np

from solvermap.formulations.problems.wide_fetch import FetchStream, WideFetch, WideFetchProblem
from solvermap.mappers.pushmem.physical import PhysicalBuffer
from solvermap.mappers.pushmem.storage import max_live


def tile_of_words(pb: PhysicalBuffer, words: np.ndarray, tile_of_fragment: dict[str, int], cap_words: int) -> np.ndarray:
    slot = words % max(1, pb.modulus)
    frag = slot // cap_words
    lookup = np.array([tile_of_fragment[f] for f in pb.fragments], dtype=np.int64)
    return lookup[np.minimum(frag, len(lookup) - 1)]


def visits(pb: PhysicalBuffer, times: np.ndarray, elements: np.ndarray):
    """Runs of consecutive reads (in time) of one wide word: (word, first read, last read)."""
    order = np.argsort(times, kind="stable")
    t, w = times[order], pb.word(elements[order])
    if not len(t):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.r_[True, w[1:] != w[:-1]]
    idx = np.nonzero(start)[0]
    end = np.r_[idx[1:], len(t)] - 1
    return w[idx], t[idx], t[end]


def wide_fetch_problem(buffers: list[PhysicalBuffer], tile_of_fragment: dict[str, int], spec) -> WideFetchProblem:
    fw, lat, smax = spec.fetch_width, spec.sram_read_latency, spec.fetch_slack
    cap = spec.tile_words // fw
    streams = []
    for pb in buffers:
        w_words = pb.word(pb.write.elements)
        ids, pos = np.unique(w_words, return_inverse=True)
        ready = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(ready, pos, pb.write.times)
        ready = ready + 1
        tiles = tile_of_words(pb, ids, tile_of_fragment, cap)
        costs = []
        for s in range(smax + 1):
            occ = max_live(pb.write.times, ready[pos] + s)
            costs.append(occ if occ <= spec.agg_words else -1)
        order = np.argsort(ready, kind="stable")
        events = {str(t): np.sort(ready[tiles == t]) for t in np.unique(tiles)}
        streams.append(FetchStream(f"{pb.name}|agg", True, events, ids[order], ready[order], w_words, pb.write.times,
                                   tuple(costs), pb.name))
        for r in pb.reads:
            vw, first, last = visits(pb, r.times, r.elements)
            base = first - lat
            tiles = tile_of_words(pb, vw, tile_of_fragment, cap)
            costs = []
            for s in range(smax + 1):
                occ = fw * max_live(base - s + lat, last + 1)
                costs.append(occ if occ <= spec.tb_words else -1)
            events = {str(t): np.sort(base[tiles == t]) for t in np.unique(tiles)}
            streams.append(FetchStream(f"{pb.name}|{r.name}", False, events, vw, base, vw, last, tuple(costs), pb.name))
    return WideFetchProblem(tuple(streams), smax, fw, lat, spec.agg_words, spec.tb_words)


def no_shift(problem: WideFetchProblem) -> WideFetch:
    """Baseline: every AGG writes as soon as its word is full, every TB reads one cycle before use."""
    return WideFetch({s.name: 0 for s in problem.streams}, source="no-shift")
