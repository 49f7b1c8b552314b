"""Wide-fetch vectorisation scheduling (seed 001 D8, 001:L260-L272): problem, decision, objective.

Every physical buffer uses a single-port SRAM that fetches ``fw`` words per access. Its input stream
is strip-mined by fw (Eq. 2): an aggregator (AGG) collects the fw lanes of a wide word and writes the word
to SRAM; each output stream is served by a transpose buffer (TB) that receives a wide word per *visit*
(a run of consecutive reads of one wide word) and emits it lane by lane (Eq. 3). With a shift σ ≥ 0 per
stream (the seed "adjusts the schedules of aggregator to SRAM and SRAM to transpose buffer
transactions", 001:L272):

    SRAM write of word w   at  ready_w + σ_write       (ready_w = last lane available + 1)
    SRAM read for visit v  at  need_v − L_read − σ_read  (need_v = first read of the visit)

Constraints: one SRAM access per tile per cycle (single port); a visit's read comes after the word's
write (``σ_w + σ_r ≤ slack``); AGG and TB occupancy within their capacity (001:L160: 4-8 words per port).
The streams keep their raw events so that the checker can recompute everything.

Objective: Σ over streams of the AGG/TB peak occupancy (words) at the chosen shifts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class FetchStream:
    name: str
    write: bool
    events: Mapping[str, np.ndarray] = field(repr=False)  # tile → base times (ready_w or need_v − L_read)
    words: np.ndarray = field(repr=False)  # wide word of each event (all tiles, sorted by base time)
    base: np.ndarray = field(repr=False)  # base time of each event, aligned with ``words``
    lanes: np.ndarray = field(repr=False, default=None)  # write: (word, avail) per lane; read: (word, last use) per visit
    lane_times: np.ndarray = field(repr=False, default=None)
    costs: tuple[int, ...] = ()  # occupancy (words) for σ = 0..max_shift; −1 = over capacity
    buffer: str = ""


@dataclass(frozen=True)
class WideFetchProblem:
    streams: tuple[FetchStream, ...]
    max_shift: int
    fetch_width: int
    read_latency: int
    agg_words: int
    tb_words: int
    name: str = "wide_fetch"


@dataclass(frozen=True)
class WideFetch:
    shifts: Mapping[str, int]
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.shifts)


def event_times(stream: FetchStream, shift: int) -> np.ndarray:
    return stream.base + shift if stream.write else stream.base - shift


def write_read_slack(problem: WideFetchProblem) -> dict[tuple[str, str], int]:
    """Per (write stream, read stream) of one buffer: max σ_w + σ_r keeping every read after its write."""
    out = {}
    writes = {s.buffer: s for s in problem.streams if s.write}
    for r in problem.streams:
        if r.write or r.buffer not in writes:
            continue
        w = writes[r.buffer]
        order = np.argsort(w.words)
        pos = np.searchsorted(w.words[order], r.words)
        ready = w.base[order][np.minimum(pos, len(order) - 1)]
        # read at base_r − σ_r must be ≥ ready + σ_w + 1
        out[(w.name, r.name)] = int((r.base - ready - 1).min()) if len(r.base) else problem.max_shift * 2
    return out


def objective(problem: WideFetchProblem, decision: WideFetch) -> float:
    total = 0
    for s in problem.streams:
        sigma = decision.shifts.get(s.name, 0)
        c = s.costs[sigma] if 0 <= sigma < len(s.costs) else -1
        total += c if c >= 0 else 10 ** 6
    return float(total)
