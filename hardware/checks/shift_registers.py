"""Independent checker of a shift-register plan: re-derives every port's distance from its raw stream.

Rules
    unserved-port          every output port has exactly one edge
    arborescence           an edge's source is the input port or another tap whose (distance, order) is
                           smaller; random ports hang from the input port's memory
    tap-distance           a port fed by a wire/SR/memory edge reads every value exactly
                           D_source + δ cycles after it becomes available (constant distance, 001:L256)
    shift-register-length  an SR edge has 1..θ stages; a wire has δ = 0
    memory-delay           a memory edge delays by at least the SRAM-path minimum
"""

from __future__ import annotations

import numpy as np

from solvermap.results import CheckReport


def _distance(buffer, port: str) -> int | None:
    times, elements = buffer.port_streams[port]
    d = times - buffer.avail[elements]
    return int(d[0]) if len(d) and bool(np.all(d == d[0])) and bool(np.all(buffer.avail[elements] >= 0)) else None


def check(problem, plan) -> CheckReport:
    report = CheckReport()
    for b in problem.buffers:
        edges = plan.edges.get(b.buffer, {})
        order = {p.name: i for i, p in enumerate(b.ports)}
        dist = {p.name: _distance(b, p.name) for p in b.ports}
        for p in b.ports:
            if p.name not in edges:
                report.add("unserved-port", f"{b.buffer}: port {p.name} has no source")
        for port, e in edges.items():
            if port not in order:
                report.add("arborescence", f"{b.buffer}: edge into unknown port {port}")
                continue
            if e.kind == "random":
                if e.source != "":
                    report.add("arborescence", f"{b.buffer}: random port {port} must read the input port's memory")
                continue
            if e.source != "" and e.source not in order:
                report.add("arborescence", f"{b.buffer}: {port} fed from unknown port {e.source}")
                continue
            src_dist = 0 if e.source == "" else dist[e.source]
            if e.source != "" and (src_dist is None or edges.get(e.source) is None or edges[e.source].kind == "random"):
                report.add("arborescence", f"{b.buffer}: {port} fed from {e.source}, which is not a tap")
                continue
            if e.source != "" and (src_dist, order[e.source]) >= (dist[port] if dist[port] is not None else -1, order[port]):
                report.add("arborescence", f"{b.buffer}: {port} fed from {e.source}, which is not earlier")
            if dist[port] is None or dist[port] != src_dist + e.delay:
                report.add("tap-distance", f"{b.buffer}: {port} reads at distance {dist[port]} but its {e.kind} edge gives "
                                           f"{src_dist} + {e.delay}")
            if e.kind == "wire" and e.delay != 0:
                report.add("shift-register-length", f"{b.buffer}: wire into {port} with {e.delay} stages")
            if e.kind == "sr" and not 1 <= e.delay <= problem.max_shift_register:
                report.add("shift-register-length", f"{b.buffer}: SR into {port} has {e.delay} stages "
                                                    f"(limit {problem.max_shift_register})")
            if e.kind == "mem" and e.delay < b.min_memory_delay:
                report.add("memory-delay", f"{b.buffer}: memory into {port} delays {e.delay} < {b.min_memory_delay} cycles")
            if e.kind not in ("wire", "sr", "mem"):
                report.add("arborescence", f"{b.buffer}: unknown edge kind {e.kind!r}")
    return report
