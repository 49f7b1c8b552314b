"""Independent checker of the wide-fetch schedule: the single SRAM port, data order and AGG/TB sizes.

Rules
    sram-port-conflict   two SRAM accesses (AGG write or TB read) on one tile in one cycle (single port)
    fetch-before-write   a TB reads a wide word before (or in the cycle) the AGG writes it
    agg-capacity         an aggregator holds more words than its capacity (001:L160)
    tb-capacity          a transpose buffer holds more words than its capacity
"""

from __future__ import annotations

import numpy as np

from solvermap.results import CheckReport


def _peak(starts, ends):
    keep = ends > starts
    if not keep.any():
        return 0
    s, e = np.sort(starts[keep]), np.sort(ends[keep])
    return int((np.arange(1, len(s) + 1) - np.searchsorted(e, s, side="right")).max())


def check(problem, decision) -> CheckReport:
    report = CheckReport()
    per_tile: dict[str, list[np.ndarray]] = {}
    write_time: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for s in problem.streams:
        sigma = int(decision.shifts.get(s.name, 0))
        if sigma < 0:
            report.add("sram-port-conflict", f"{s.name}: negative shift {sigma}")
        for tile, base in s.events.items():
            per_tile.setdefault(tile, []).append(base + sigma if s.write else base - sigma)
        if s.write:
            write_time[s.buffer] = (s.words, s.base + sigma)
            lane_word, lane_avail = s.lanes, s.lane_times
            order = np.argsort(s.words)
            w_sorted = s.words[order]
            pos = np.searchsorted(w_sorted, lane_word)
            occupancy = _peak(lane_avail, (s.base + sigma)[order][pos])
            if occupancy > problem.agg_words:
                report.add("agg-capacity", f"{s.name}: aggregator holds {occupancy} words > {problem.agg_words}")
    for tile, lists in per_tile.items():
        t = np.concatenate(lists)
        uniq, counts = np.unique(t, return_counts=True)
        if (counts > 1).any():
            report.add("sram-port-conflict", f"tile {tile}: {int(counts.max())} SRAM accesses at cycle {int(uniq[counts.argmax()])} "
                                             f"({int((counts > 1).sum())} conflicting cycles)")
    for s in problem.streams:
        if s.write:
            continue
        sigma = int(decision.shifts.get(s.name, 0))
        read = s.base - sigma
        if s.buffer in write_time:
            words, wt = write_time[s.buffer]
            order = np.argsort(words)
            pos = np.searchsorted(words[order], s.words)
            written = wt[order][np.minimum(pos, len(order) - 1)]
            early = read <= written
            if early.any():
                i = int(np.nonzero(early)[0][0])
                report.add("fetch-before-write", f"{s.name}: reads word {int(s.words[i])} at cycle {int(read[i])}, written at "
                                                 f"cycle {int(written[i])}")
        occupancy = problem.fetch_width * _peak(read + problem.read_latency, s.lane_times + 1)
        if occupancy > problem.tb_words:
            report.add("tb-capacity", f"{s.name}: transpose buffer holds {occupancy} words > {problem.tb_words}")
    return report
