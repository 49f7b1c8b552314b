"""Crossbar partitioning (seed 003 L171, first level of the hierarchical partitioning).

Every MVM layer's matrices M_p (:func:`~solvermap.hardware.puma.network.mvm_matrices`) are cut into
crossbar-sized blocks: ``rows`` inputs × ``cols`` outputs, i.e. conv per kernel position × output-channel
block × input-channel block (the public compiler's tiling, digest §3.1). All MVMs on one block share one
virtual crossbar (every step of a conv, every time step of an LSTM). A layer with ``replicas = R`` gets
R copies of its blocks, each serving 1/R of the layer's MVMs (seed L152–L156).

Partial sums are reduced by a **sequential chain**, as the public PUMA compiler does
(``src/operations.cpp``, ``operator*(ConstantMatrix, Vector)``: ``accum[w] = ADD(mvm_w, accum[w−1])``,
"a sequential reduction"; conv: the same chain over kernel position × input-channel block). Affinity
spreading (``src/partitioner.cpp``) puts ``ADD_w`` on the virtual crossbar of ``mvm_w``, so the running sum
of a row travels block → next block in chain order (kernel position, then input block) and each block
adds its own partial before passing it on: consecutive blocks on one core or tile reduce there and only
the running sum crosses the boundary (one value per chain link, ``kind="partial"``). The row's sum ends
on the row's *last* block, its **home**, which also runs the bias add, activations, clip/normalize,
pooling and the LSTM cell arithmetic of those elements (ops follow their producer, L171); an
element-wise add of two tensors runs where its first operand lives.

Values (who sends what to whom, bytes per inference) are derived by tracking, for every element of
every tensor, which block (or the input tile) produced it: a block column of layer l reads the elements
of its input features; one value per (producer, reading column) with all blocks of that column as sinks.
ALU work per block counts element operations per inference: reductions, bias adds, activations, pool
windows, LSTM cells (3 sigmoid + 2 tanh LUT look-ups, 3 multiplies, 1 add per unit) and the digital
offset correction of offset-binary crossbar arithmetic (rows + cols operations per MVM; assumption).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from solvermap.hardware.puma.network import Network, matrix_shapes
from solvermap.hardware.puma.program import IO_INPUT, IO_OUTPUT, Block, Partition, Value

LSTM_CELL_OPS = 9


def partition(network: Network, rows: int, cols: int, word_bytes: float = 2.0) -> Partition:
    names: list[str] = [IO_INPUT]
    ids: dict[str, int] = {IO_INPUT: 0}

    def oid(name: str) -> int:
        if name not in ids:
            ids[name] = len(names)
            names.append(name)
        return ids[name]

    owners: dict[str, list[tuple[np.ndarray, float]]] = {"input": [(np.zeros(network.input_shape, dtype=np.int64), 1.0)]}
    blocks: dict[str, Block] = {}
    alu: dict[str, float] = {}
    flows: dict[tuple[str, tuple[str, ...], str, str], float] = {}  # (source, sinks, kind, layer) → bytes
    order: list[str] = []
    replicas: dict[str, int] = {}

    def flow(source: str, sinks: tuple[str, ...], amount: float, kind: str, layer: str) -> None:
        if amount <= 0 or (len(sinks) == 1 and sinks[0] == source):
            return
        key = (source, sinks, kind, layer)
        flows[key] = flows.get(key, 0.0) + amount

    def charge(owner_arrays: list[tuple[np.ndarray, float]], ops_per_element: float) -> None:
        for arr, frac in owner_arrays:
            counts = np.bincount(arr.ravel(), minlength=len(names))
            for o in np.nonzero(counts)[0]:
                if names[o] != IO_INPUT:
                    alu[names[o]] = alu.get(names[o], 0.0) + counts[o] * frac * ops_per_element

    for layer in network.layers:
        ins = [owners[name] for name in layer.inputs]
        if not layer.is_mvm:
            owners[layer.name] = _follow(layer, ins, network, flow, names, word_bytes)
            per_element = {"maxpool": None, "avgpool": None, "reshape": 0.0}.get(layer.kind, 1.0)
            if layer.kind in ("maxpool", "avgpool"):
                kh, kw = layer.attrs["kernel"]
                per_element = float(kh * kw)
            if per_element:
                charge(owners[layer.name], per_element)
            continue
        order.append(layer.name)
        r_count = int(layer.attrs.get("replicas", 1))
        replicas[layer.name] = r_count
        shapes = matrix_shapes(layer)
        share = layer.steps() / r_count
        in_owner = ins[0]
        hidden = int(layer.attrs.get("hidden", 0))
        out_arrays: list[tuple[np.ndarray, float]] = []
        for k in range(r_count):
            prefix = f"{layer.name}" + (f".k{k}" if r_count > 1 else "")
            homes: dict[int, str] = {}
            chains: dict[int, list[str]] = {}
            row_of_block: dict[str, int] = {}
            readers: dict[tuple[str, tuple[int, ...]], list[str]] = {}
            for p, (n_out, n_in) in enumerate(shapes):
                for r in range(math.ceil(n_out / cols)):
                    row_blocks = []
                    for c in range(math.ceil(n_in / rows)):
                        label = prefix + (f".p{p}" if len(shapes) > 1 else "") + f".r{r}.c{c}"
                        out_rng = (r * cols, min(n_out, (r + 1) * cols))
                        in_rng = (c * rows, min(n_in, (c + 1) * rows))
                        blocks[label] = Block(label, layer.name, k, p, r, c, out_rng, in_rng, share)
                        oid(label)
                        row_blocks.append(label)
                        row_of_block[label] = r
                        for source, feats in _features(layer, p, in_rng):
                            readers.setdefault((source, feats), []).append(label)
                        # per-MVM digital offset correction (offset-binary arithmetic)
                        alu[label] = alu.get(label, 0.0) + share * ((in_rng[1] - in_rng[0]) + (out_rng[1] - out_rng[0]))
                    chains.setdefault(r, []).extend(row_blocks)
            # sequential reduction chain of every row (kernel position, then input block): block w adds its
            # partial to the running sum received from block w−1 and passes it on; the last block is the home
            extra = 1 if (layer.bias is not None or layer.attrs.get("has_bias")) and not layer.bias_folded else 0
            for r, chain in chains.items():
                homes[r] = chain[-1]
                blocks[chain[-1]] = replace(blocks[chain[-1]], is_home=True)
                for prev, label in zip(chain, chain[1:]):
                    elements = blocks[label].cols_used
                    flow(prev, (label,), elements * word_bytes * share, "partial", layer.name)
                    alu[label] = alu.get(label, 0.0) + elements * share
                alu[chain[-1]] = alu.get(chain[-1], 0.0) + extra * blocks[chain[-1]].cols_used * share
            # inputs: one value per (producer, reading column group)
            for (source, feats), sinks in readers.items():
                if source == "input":
                    mask = _feature_mask(layer, network.shape_of(layer.inputs[0]), feats)
                    for arr, frac in in_owner:
                        counts = np.bincount(arr[mask].ravel(), minlength=len(names))
                        for o in np.nonzero(counts)[0]:
                            flow(names[o], tuple(sinks), counts[o] * word_bytes * frac / r_count,
                                 "input" if names[o] == IO_INPUT else "activation", layer.name)
                elif source == "recurrent":
                    cell = _cell_homes(layer, homes, cols)
                    units = np.array(feats)
                    for o in sorted({cell[u] for u in units}):
                        count = sum(1 for u in units if cell[u] == o)
                        # the first step reads the zero initial state: seq − 1 transfers per inference
                        flow(o, tuple(sinks), count * word_bytes * max(0.0, layer.steps() - 1) / r_count, "recurrent", layer.name)
            # outputs owned by row homes (LSTM: by the cell home of each hidden unit)
            if layer.kind == "lstm":
                cell = _cell_homes(layer, homes, cols)
                for g in (1, 2, 3):
                    for u in range(hidden):
                        src = homes[(g * hidden + u) // cols]
                        flow(src, (cell[u],), word_bytes * share, "gate", layer.name)
                for u in range(hidden):
                    alu[cell[u]] = alu.get(cell[u], 0.0) + LSTM_CELL_OPS * share
                arr = np.empty(layer.shape, dtype=np.int64)
                for u in range(hidden):
                    arr[:, u] = oid(cell[u])
            else:
                arr = np.empty(layer.shape, dtype=np.int64)
                feature_axis = 0 if layer.kind == "conv" else arr.ndim - 1
                for j in range(layer.out_features):
                    index = [slice(None)] * arr.ndim
                    index[feature_axis] = j
                    arr[tuple(index)] = oid(homes[j // cols])
            out_arrays.append((arr, 1.0 / r_count))
        owners[layer.name] = out_arrays

    for arr, frac in owners[network.output]:
        counts = np.bincount(arr.ravel(), minlength=len(names))
        for o in np.nonzero(counts)[0]:
            flow(names[o], (IO_OUTPUT,), counts[o] * word_bytes * frac, "output", "output")

    final_blocks = tuple(replace(b, alu_ops=alu.get(b.name, 0.0)) for b in blocks.values())
    values = tuple(Value(f"v{k}:{kind}:{src}>{layer}", src, sinks, amount, kind, layer)
                   for k, ((src, sinks, kind, layer), amount) in enumerate(flows.items()))
    return Partition(network.name, final_blocks, values, tuple(order), replicas, (rows, cols))


def _features(layer, p: int, in_rng: tuple[int, int]) -> list[tuple[str, tuple[int, ...]]]:
    """What the matrix rows [lo, hi) of M_p read: ('input', features) and/or ('recurrent', units)."""
    lo, hi = in_rng
    out: dict[str, list[int]] = {}
    if layer.kind == "dense":
        n = layer.in_features
        out["input"] = [i for i in range(lo, hi) if i < n]
    elif layer.kind == "conv":
        ic = layer.in_features
        if layer.attrs.get("unroll", "per_position") == "im2col":
            kh, kw = layer.attrs["kernel"]
            out["input"] = sorted({u // (kh * kw) for u in range(lo, hi) if u < ic * kh * kw})
        else:
            out["input"] = [i for i in range(lo, hi) if i < ic]
    elif layer.kind == "lstm":
        n, hidden = layer.in_features, int(layer.attrs["hidden"])
        out["input"] = [i for i in range(lo, hi) if i < n]
        out["recurrent"] = [i - n for i in range(lo, hi) if n <= i < n + hidden]
    return [(k, tuple(v)) for k, v in out.items() if v]


def _feature_mask(layer, in_shape: tuple[int, ...], feats: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(in_shape, dtype=bool)
    index = [slice(None)] * len(in_shape)
    index[0 if layer.kind == "conv" else len(in_shape) - 1] = list(feats)
    mask[tuple(index)] = True
    return mask


def _cell_homes(layer, homes: dict[int, str], cols: int) -> list[str]:
    """Block that runs the LSTM cell of hidden unit u: the home of the row holding gate i of u."""
    return [homes[u // cols] for u in range(int(layer.attrs["hidden"]))]


def _follow(layer, ins, network: Network, flow, names: list[str], word_bytes: float) -> list[tuple[np.ndarray, float]]:
    """Owners of a vector layer's output: its ops run where their (first) operand lives."""
    first = ins[0]
    if layer.kind in ("act", "clip", "normalize", "affine"):
        return first
    if layer.kind == "reshape":
        return [(arr.reshape(layer.shape), frac) for arr, frac in first]
    if layer.kind in ("maxpool", "avgpool"):
        sh, sw = layer.attrs["stride"]
        top, left = layer.attrs["pads"][0], layer.attrs["pads"][1]
        out = []
        for arr, frac in first:
            c, h, w = layer.shape
            rows = np.clip(np.arange(h) * sh - top, 0, arr.shape[1] - 1)
            cols = np.clip(np.arange(w) * sw - left, 0, arr.shape[2] - 1)
            out.append((arr[:, rows][:, :, cols], frac))
        return out
    if layer.kind == "add":
        for a1, f1 in first:
            for a2, f2 in ins[1]:
                pairs, counts = np.unique(np.stack([a2.ravel(), a1.ravel()]), axis=1, return_counts=True)
                for (src, dst), count in zip(pairs.T, counts):
                    if src != dst:
                        flow(names[src], (names[dst],), count * word_bytes * f1 * f2, "operand", layer.name)
        return first
    raise ValueError(f"no affinity rule for layer kind {layer.kind!r}")
