"""Independent checker of storage minimisation: no two live values share an address.

For every physical buffer it recomputes, from the raw streams and the address configuration (layout,
banks, circular modulus), each wide word's lifetime — first lane available to last lane read — and its
physical address ``w mod M``. Rules
    address-collision   two wide words with overlapping lifetimes share an address (a live value would be
                        overwritten), or two values of one wide word share a lane
    bank-membership     a stream element does not belong to the buffer's bank
"""

from __future__ import annotations

import numpy as np

from solvermap.results import CheckReport


def _address(shape, elements, fw, banks):
    idx = np.unravel_index(elements, shape)
    padded = tuple(shape[:-1]) + (-(-shape[-1] // (fw * banks)) * (fw * banks),)
    return np.ravel_multi_index(idx, padded) // banks


def check(buffers, moduli) -> CheckReport:
    report = CheckReport()
    for pb in buffers:
        m = int(moduli.get(pb.name, 0))
        if m < 1:
            report.add("address-collision", f"{pb.name}: no circular buffer size")
            continue
        for s in [pb.write, *pb.reads]:
            idx = np.stack(np.unravel_index(s.elements, pb.shape), axis=1)
            if len(idx) and (np.mod(idx @ np.asarray(pb.alpha, dtype=np.int64), pb.banks) != pb.bank).any():
                report.add("bank-membership", f"{pb.name}: stream {s.name} touches elements of another bank")
        addr = _address(pb.shape, pb.write.elements, pb.fw, pb.banks)
        if len(np.unique(addr)) != len(addr):
            report.add("address-collision", f"{pb.name}: two elements map to one word lane")
        words = addr // pb.fw
        ids, pos = np.unique(words, return_inverse=True)
        start = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
        end = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(start, pos, pb.write.times)
        np.maximum.at(end, pos, pb.write.times + 1)
        for r in pb.reads:
            rw = _address(pb.shape, r.elements, pb.fw, pb.banks) // pb.fw
            rp = np.searchsorted(ids, rw)
            np.maximum.at(end, rp, r.times)
        slot = ids % m
        order = np.lexsort((start, slot))
        s, e, a, w = start[order], end[order], slot[order], ids[order]
        clash = (a[1:] == a[:-1]) & (s[1:] < e[:-1])
        if clash.any():
            i = int(np.nonzero(clash)[0][0])
            report.add("address-collision", f"{pb.name}: words {int(w[i])} (live {int(s[i])}..{int(e[i])}) and {int(w[i + 1])} "
                                            f"(from {int(s[i + 1])}) share address {int(a[i])} of {m} "
                                            f"({int(clash.sum())} collisions)")
    return report
