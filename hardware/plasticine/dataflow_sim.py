"""Cycle-level dataflow simulator of a partitioned / merged VB graph (seed 004 §3.3.3, L255–257, L324).

Model (a streaming RDA, L255): every unit (a VB on its PB) is a pipelined actor with initiation interval
1 and a fixed pipeline ``latency``; it **fires when every input it needs this firing holds a token and
every output it writes this firing has room** (L257, L514). Each channel (one produced value into one
consumer unit) has room for ``depth`` tokens in the consumer's input buffer plus the tokens in flight in
the producer's pipeline and on the network (``latency + delay``), so a producer stalls on backpressure
exactly when the consumer's buffer is full. A token leaves the producer ``latency`` cycles after the
firing and arrives ``delay`` cycles later (the per-hop network delay × hops, or 1 cycle between units
on the same PB).

Rates (cyclo-static): a channel with ``src_every = k`` carries one token every k producer firings (a
per-tile reduction result); ``dst_every = k`` means the consumer reads one token every k firings (a
scalar reused by an inner loop). ``init_tokens`` pre-load loop-carried channels (L535). DRAM stream units
share a byte budget of ``dram_bytes_per_cycle`` (round robin) and add ``dram_latency``.

Scaling: firings of real apps reach 10^6. ``simulate`` runs a *window*: every unit's firings and every
channel's token count are scaled by ``f = window / max firings`` (rates re-derived from the scaled counts
so that no consumer waits for a token that is never sent)
and the steady part of the run is scaled back: ``cycles = fill + (window cycles − fill) / f`` where
``fill`` is the cycle at which the busiest unit first fires. Throughput is the busiest unit's firings per
cycle (1.0 = one firing every cycle).

Deadlock: when no unit can fire and no token is in flight while some unit still has firings left, the
run stops with ``deadlock=True`` and the blocked units and what they wait for.

The interface is the one the network simulator will couple to: :class:`SimGraph` (units, channels,
DRAM) + ``delay`` (an int, or a function of the channel giving its network delay) → :class:`SimResult`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    name: str
    firings: int
    latency: int
    kind: str = "compute"  # compute | memory | dram | host
    pb: str = ""  # physical block; units on the same PB talk in 1 cycle
    bytes_per_firing: int = 64  # DRAM units: bytes moved per firing


@dataclass(frozen=True)
class Channel:
    src: str
    dst: str
    depth: int
    src_every: int = 1
    dst_every: int = 1
    init_tokens: int = 0
    kind: str = "vector"
    name: str = ""


@dataclass(frozen=True)
class SimGraph:
    units: tuple[Unit, ...]
    channels: tuple[Channel, ...]
    dram_bytes_per_cycle: float = math.inf
    dram_latency: int = 0


@dataclass
class SimResult:
    cycles: float  # extrapolated to the full firing counts
    throughput: float  # firings per cycle of the busiest unit (1.0 = full rate)
    deadlock: bool
    window_cycles: int
    scale: float
    fill_cycles: int
    blocked: list[str] = field(default_factory=list)
    firings: dict[str, int] = field(default_factory=dict)
    stalls: dict[str, int] = field(default_factory=dict)
    first_fire: dict[str, int] = field(default_factory=dict)
    last_fire: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"cycles": self.cycles, "throughput": self.throughput, "deadlock": self.deadlock,
                "window_cycles": self.window_cycles, "scale": self.scale, "fill_cycles": self.fill_cycles,
                "blocked": self.blocked[:10]}


class _Chan:
    __slots__ = ("spec", "queue", "cap", "occupied", "src_every", "dst_every", "delay", "dead")

    def __init__(self, spec: Channel, src_every: int, dst_every: int, cap: int, delay: int) -> None:
        self.spec = spec
        self.queue: deque[int] = deque([0] * spec.init_tokens)  # arrival cycles of tokens
        self.cap = cap
        self.occupied = spec.init_tokens  # tokens queued or in flight (reserved at the producer's firing)
        self.src_every = src_every
        self.dst_every = dst_every
        self.delay = delay
        self.dead = False  # consumer finished: the channel sinks everything


def _scaled(graph: SimGraph, window: int) -> tuple[dict[str, int], float]:
    most = max((u.firings for u in graph.units), default=1)
    if most <= window:
        return {u.name: u.firings for u in graph.units}, 1.0
    f = window / most
    return {u.name: max(1, math.ceil(u.firings * f)) for u in graph.units}, f


def _rates(c: Channel, units: dict[str, Unit], firings: dict[str, int], scale: float) -> tuple[int, int]:
    """(src_every, dst_every) of ``c`` in the window: its own rates unscaled, else re-derived from the scaled
    token count so that producers send at least what consumers read."""
    if scale == 1.0:
        return c.src_every, c.dst_every
    tokens = max(1, math.ceil(math.ceil(units[c.dst].firings / c.dst_every) * scale))
    return max(1, firings[c.src] // tokens), max(1, math.ceil(firings[c.dst] / tokens))


def _pipeline_latency(unit: Unit, graph: SimGraph) -> int:
    """Cycles from a firing until its token leaves the unit: the pipeline, plus the DRAM latency of a stream."""
    return unit.latency + (graph.dram_latency if unit.kind == "dram" else 0)


def _inputs_ready(inputs: list[_Chan], k: int, cycle: int) -> bool:
    """Every input the ``k``-th firing reads (one every ``dst_every`` firings) holds a token arrived by ``cycle``."""
    for ch in inputs:
        if k % ch.dst_every == 0 and (not ch.queue or ch.queue[0] > cycle):
            return False
    return True


def _close(inputs: list[_Chan]) -> None:
    """After a unit's last firing its input channels sink every token (their producers never block)."""
    for ch in inputs:
        ch.dead = True
        ch.queue.clear()


def _blocked(order: list[str], done: dict[str, int], firings: dict[str, int], inputs: dict[str, list[_Chan]],
             outputs: dict[str, list[_Chan]]) -> list[str]:
    """The units with firings left, what inputs they wait for and which outputs are full."""
    blocked = []
    for name in order:
        if done[name] < firings[name]:
            waits = [ch.spec.src for ch in inputs[name] if done[name] % ch.dst_every == 0 and not ch.queue]
            full = [ch.spec.dst for ch in outputs[name] if not ch.dead and ch.occupied >= ch.cap]
            blocked.append(f"{name} ({done[name]}/{firings[name]}): waits for {sorted(set(waits))[:3]}, "
                           f"full outputs to {sorted(set(full))[:3]}")
    return blocked


def _extrapolate(graph: SimGraph, scale: float, cycle: int, first_fire: dict[str, int], deadlock: bool,
                 last_fire: dict[str, int] | None = None) -> tuple[float, float, int]:
    """(cycles, throughput, fill) of the full run from a window of ``cycle`` cycles: the fill before the
    busiest unit's first firing is kept, the rest is scaled back by 1 / ``scale``; given ``last_fire``, the
    drain after the busiest unit's last firing is kept too (noc_sim)."""
    busiest = max(graph.units, key=lambda u: u.firings) if graph.units else None
    fill = first_fire.get(busiest.name, 0) if busiest is not None else 0
    end = last_fire.get(busiest.name, cycle) if busiest is not None and last_fire is not None else cycle
    steady = max(end - fill, 0)
    drain = max(cycle - end, 0)
    cycles = float(cycle) if scale == 1.0 else fill + steady / scale + drain
    throughput = (busiest.firings / cycles) if (busiest and cycles > 0 and not deadlock) else 0.0
    return cycles, min(1.0, throughput), fill


def simulate(graph: SimGraph, delay: int | Callable[[Channel], int] = 1, *, window: int = 2048,
             max_cycles: int = 2_000_000) -> SimResult:
    units = {u.name: u for u in graph.units}
    firings, scale = _scaled(graph, window)
    chans: list[_Chan] = []
    inputs: dict[str, list[_Chan]] = {u: [] for u in units}
    outputs: dict[str, list[_Chan]] = {u: [] for u in units}
    for c in graph.channels:
        if c.src == c.dst:
            continue
        se, de = _rates(c, units, firings, scale)
        d = delay(c) if callable(delay) else delay
        if units[c.src].pb and units[c.src].pb == units[c.dst].pb:
            d = 1
        cap = c.depth + _pipeline_latency(units[c.src], graph) + d  # DRAM: requests in flight count too
        ch = _Chan(c, se, de, cap, d)
        chans.append(ch)
        inputs[c.dst].append(ch)
        outputs[c.src].append(ch)
    done = dict.fromkeys(units, 0)
    first_fire: dict[str, int] = {}
    last_fire: dict[str, int] = {}
    stalls = dict.fromkeys(units, 0)
    pending: dict[int, list[_Chan]] = {}  # cycle -> channels receiving a token then
    in_flight = 0
    dram_credit = 0.0
    order = list(units)
    cycle = 0
    idle = 0
    horizon = max([u.latency for u in graph.units] + [0]) + max([c.delay for c in chans] + [1]) + graph.dram_latency + 2
    remaining = sum(firings.values())
    while remaining > 0 and cycle < max_cycles:
        arriving = pending.pop(cycle, None)
        if arriving:
            for ch in arriving:
                ch.queue.append(cycle)
                in_flight -= 1
        if graph.dram_bytes_per_cycle != math.inf:
            dram_credit = min(dram_credit + graph.dram_bytes_per_cycle, 4 * 64 + graph.dram_bytes_per_cycle)
        fired_any = False
        rotate = cycle % max(1, len(order))
        for name in order[rotate:] + order[:rotate]:
            k = done[name]
            if k >= firings[name]:
                continue
            unit = units[name]
            ready = _inputs_ready(inputs[name], k, cycle)
            last = k + 1 == firings[name]
            if ready:
                for ch in outputs[name]:
                    sends = (k + 1) % ch.src_every == 0 or last
                    if sends and not ch.dead and ch.occupied >= ch.cap:
                        ready = False
                        break
            if ready and unit.kind == "dram" and graph.dram_bytes_per_cycle != math.inf:
                if dram_credit < unit.bytes_per_firing:
                    ready = False
            if not ready:
                stalls[name] += 1
                continue
            if unit.kind == "dram" and graph.dram_bytes_per_cycle != math.inf:
                dram_credit -= unit.bytes_per_firing
            for ch in inputs[name]:
                if k % ch.dst_every == 0:
                    ch.queue.popleft()
                    ch.occupied -= 1
            out_latency = _pipeline_latency(unit, graph)
            for ch in outputs[name]:
                if (k + 1) % ch.src_every == 0 or last:
                    if ch.dead:
                        continue
                    ch.occupied += 1
                    pending.setdefault(cycle + out_latency + ch.delay, []).append(ch)
                    in_flight += 1
            done[name] = k + 1
            remaining -= 1
            fired_any = True
            first_fire.setdefault(name, cycle)
            last_fire[name] = cycle
            if last:
                _close(inputs[name])
        if fired_any or in_flight or arriving:
            idle = 0
        else:
            idle += 1
            if idle > horizon:
                break
        cycle += 1
    deadlock = remaining > 0
    blocked = _blocked(order, done, firings, inputs, outputs) if deadlock else []
    cycles, throughput, fill = _extrapolate(graph, scale, cycle, first_fire, deadlock)
    return SimResult(cycles=cycles, throughput=throughput, deadlock=deadlock, window_cycles=cycle,
                     scale=scale, fill_cycles=fill, blocked=blocked, firings=dict(done), stalls=stalls,
                     first_fire=first_fire, last_fire=last_fire)
