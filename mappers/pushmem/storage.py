"""Liveness and storage minimisation (seed 001 D5/D9, 001:L276-L280), plus the physical buffers.

* :func:`max_live` — most values live at once, with half-open lifetimes [available, last read): a value
  read in the cycle it becomes available needs no storage, a delay of δ cycles at one value per cycle
  needs δ words (the seed's "memory that delays by 64 cycles", 001:L256).
* :func:`circular_modulus` — the smallest modulus M such that the circular address ``id mod M`` never
  gives two simultaneously live wide words the same address (001:L280: "storage minimization infers that a
  circular buffer must be implemented"). The layout vector is row-major with the innermost dimension
  padded to a multiple of fetch width × banks, so each wide word holds ``fw`` consecutive elements and
  a bank's local address is ``lin // N`` (001:L276-L278, Eq. 4). Lifetimes are taken per wide word —
  first lane available to last lane read — which covers every AGG/TB shift the wide-fetch step makes.
"""

from __future__ import annotations

import numpy as np


def max_live(starts: np.ndarray, ends: np.ndarray) -> int:
    """Most half-open intervals [start, end) alive at one cycle."""
    keep = ends > starts
    if not keep.any():
        return 0
    s, e = np.sort(starts[keep]), np.sort(ends[keep])
    # at each start, how many have started minus how many have ended by then
    alive = np.arange(1, len(s) + 1) - np.searchsorted(e, s, side="right")
    return int(alive.max())


def padded_shape(shape: tuple[int, ...], fw: int, banks: int = 1) -> tuple[int, ...]:
    unit = fw * banks
    return tuple(shape[:-1]) + (-(-shape[-1] // unit) * unit,)


def linear_address(shape: tuple[int, ...], elements: np.ndarray, fw: int, banks: int = 1) -> np.ndarray:
    """Row-major address in the padded layout (the offset vector of Eq. 4)."""
    idx = np.unravel_index(elements, shape)
    return np.ravel_multi_index(idx, padded_shape(shape, fw, banks))


def circular_modulus(word_ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, limit: int | None = None) -> int:
    """Smallest M ≥ max live such that words with equal ``id mod M`` have disjoint lifetimes."""
    if len(word_ids) == 0:
        return 0
    lower = max(1, max_live(starts, ends))
    span = int(word_ids.max() - word_ids.min() + 1)
    upper = span if limit is None else min(span, limit)
    m = lower
    while m < upper:
        if _disjoint(word_ids % m, starts, ends):
            return m
        m += 1 if m < lower + 256 else max(1, m // 16)
    return upper


def _disjoint(addr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    order = np.lexsort((starts, addr))
    a, s, e = addr[order], starts[order], ends[order]
    same = a[1:] == a[:-1]
    return not bool(np.any(same & (s[1:] < e[:-1])))


def word_lifetimes(word_ids: np.ndarray, write_times: np.ndarray, read_ids: np.ndarray, read_times: np.ndarray):
    """Per wide word: (id, first lane available, last lane read (or last write + 1 if never read))."""
    ids = np.unique(word_ids)
    first = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
    last_w = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    pos = np.searchsorted(ids, word_ids)
    np.minimum.at(first, pos, write_times)
    np.maximum.at(last_w, pos, write_times)
    end = last_w + 1
    if len(read_ids):
        rpos = np.searchsorted(ids, read_ids)
        ok = (rpos < len(ids)) & (ids[np.minimum(rpos, len(ids) - 1)] == read_ids)
        np.maximum.at(end, rpos[ok], read_times[ok])
    return ids, first, end
