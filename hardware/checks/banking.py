"""Independent checker of a banking decision: counts, cycle by cycle, the accesses on every physical bank.

Rules
    missing-memory     every memory has a bank function
    copy-assignment    every read port reads exactly one existing copy
    bank-address       gcd(α[coprime_dim], N) = 1, so the bank-local address lin // N is collision-free
    bank-read-ports    no copy has more read ports than ``read_port_limit`` (one transpose buffer each)
    bank-port-limit    no physical bank (copy, residue) serves more than ``port_limit`` accesses in a
                       cycle; writes go to every copy (001:L248)
"""

from __future__ import annotations

import math

import numpy as np

from solvermap.results import CheckReport


def check(problem, banking) -> CheckReport:
    report = CheckReport()
    for mem in problem.memories:
        fn = banking.functions.get(mem.name)
        if fn is None:
            report.add("missing-memory", f"{mem.name} has no bank function")
            continue
        if fn.modulus < 1 or fn.copies < 1 or len(fn.alpha) != len(mem.shape):
            report.add("bank-address", f"{mem.name}: malformed bank function N={fn.modulus} C={fn.copies} alpha={fn.alpha}")
            continue
        if mem.coprime_dim is not None and fn.modulus > 1 and math.gcd(fn.alpha[mem.coprime_dim], fn.modulus) != 1:
            report.add("bank-address", f"{mem.name}: alpha[{mem.coprime_dim}]={fn.alpha[mem.coprime_dim]} shares a factor "
                                       f"with N={fn.modulus}")
        write_ports = set(np.unique(mem.port[mem.is_write]).tolist())
        for p in range(len(mem.ports)):
            if p in write_ports:
                continue
            c = fn.port_copy.get(p)
            if c is None or not 0 <= c < fn.copies:
                report.add("copy-assignment", f"{mem.name}: read port {mem.ports[p]} reads copy {c} of {fn.copies}")
        if mem.read_port_limit:
            per_copy: dict[int, int] = {}
            for p in range(len(mem.ports)):
                if p not in write_ports:
                    c = fn.port_copy.get(p, 0)
                    per_copy[c] = per_copy.get(c, 0) + 1
            for c, n in per_copy.items():
                if n > mem.read_port_limit:
                    report.add("bank-read-ports", f"{mem.name}: copy {c} has {n} read ports (limit {mem.read_port_limit})")
        idx = np.stack(np.unravel_index(mem.elements, mem.shape), axis=1)
        residue = np.mod(idx @ np.asarray(fn.alpha, dtype=np.int64), fn.modulus)
        times, banks = [], []
        for c in range(fn.copies):
            times.append(mem.times[mem.is_write])
            banks.append(c * fn.modulus + residue[mem.is_write])
        reads = ~mem.is_write
        copy = np.array([fn.port_copy.get(int(p), 0) for p in mem.port[reads]], dtype=np.int64)
        times.append(mem.times[reads])
        banks.append(copy * fn.modulus + residue[reads])
        t, b = np.concatenate(times), np.concatenate(banks)
        if not len(t):
            continue
        key = t * (fn.banks + 1) + b
        uniq, counts = np.unique(key, return_counts=True)
        over = counts > mem.port_limit
        if over.any():
            worst = int(np.argmax(counts))
            report.add("bank-port-limit", f"{mem.name}: bank {int(uniq[worst] % (fn.banks + 1))} serves {int(counts[worst])} "
                                          f"accesses at cycle {int(uniq[worst] // (fn.banks + 1))} (limit {mem.port_limit}; "
                                          f"{int(over.sum())} overloaded bank-cycles)")
    return report
