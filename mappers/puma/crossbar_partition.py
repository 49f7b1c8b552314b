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

Grouped and depthwise convolutions: a block of a block-diagonal matrix that holds no weight is not
created (:func:`~solvermap.hardware.puma.network.block_columns`); a block reads only its groups' inputs.

Vector layers beyond the seed's (assumptions, the same "ops follow their producer" rule): a product of two
activations runs where each row of its left operand starts (the right operand's elements travel there,
2·k operations per output); a reduction, softmax, layer norm or LRN gathers each group (the elements it
reduces over) at the owner of the group's first element and produces the group there (4 operations per
softmax element, 6 per layer-norm element, size + 2 per LRN element, 1 per reduced element); a binary op
with broadcasting reads its second operand where the first lives; data movements (transpose, concat, pad,
slice, depth-to-space, upsample) move ownership with the elements and cost nothing.
Their transfers are recorded under the next MVM layer in program order (``Value.layer``; ``"output"`` after
the last one): the performance simulator moves them before that layer's MVMs. Owner arrays are int32 and
dropped after their last reader.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from solvermap.hardware.puma.network import MOVEMENT_KINDS, Network, block_columns, depth_to_space, matrix_shapes
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

    owners: dict[str, list[tuple[np.ndarray, float]]] = {"input": [(np.zeros(network.input_shape, dtype=np.int32), 1.0)]}
    for name, shape in network.inputs.items():
        owners[name] = [(np.zeros(shape, dtype=np.int32), 1.0)]
    last_use = network.last_use()
    blocks: dict[str, Block] = {}
    alu: dict[str, float] = {}
    flows: dict[tuple[str, tuple[str, ...], str, str], float] = {}  # (source, sinks, kind, layer) → bytes
    order: list[str] = []
    replicas: dict[str, int] = {}

    # a vector layer's transfers happen before the next MVM layer in program order (or before the output)
    attach: dict[str, str] = {}
    upcoming = "output"
    for layer in reversed(network.layers):
        if layer.is_mvm:
            upcoming = layer.name
        else:
            attach[layer.name] = upcoming

    def flow(source: str, sinks: tuple[str, ...], amount: float, kind: str, layer: str) -> None:
        if amount <= 0 or (len(sinks) == 1 and sinks[0] == source):
            return
        layer = attach.get(layer, layer)
        key = (source, sinks, kind, layer)
        flows[key] = flows.get(key, 0.0) + amount

    def charge(owner_arrays: list[tuple[np.ndarray, float]], ops_per_element: float) -> None:
        for arr, frac in owner_arrays:
            counts = np.bincount(arr.ravel(), minlength=len(names))
            for o in np.nonzero(counts)[0]:
                if names[o] != IO_INPUT:
                    alu[names[o]] = alu.get(names[o], 0.0) + counts[o] * frac * ops_per_element

    def release(step: int, layer) -> None:
        for name in set(layer.inputs):
            if last_use.get(name, -1) <= step and name in owners:
                del owners[name]

    for step, layer in enumerate(network.layers):
        ins = [owners[name] for name in layer.inputs]
        if not layer.is_mvm:
            owners[layer.name] = _follow(layer, ins, network, flow, names, word_bytes)
            per_element = _alu_per_element(layer, network)
            if per_element:
                charge(owners[layer.name], per_element)
            release(step, layer)
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
                        used = block_columns(layer, p, out_rng, in_rng)
                        if not used:
                            continue  # an all-zero block of a grouped conv
                        blocks[label] = Block(label, layer.name, k, p, r, c, out_rng, in_rng, share)
                        oid(label)
                        row_blocks.append(label)
                        row_of_block[label] = r
                        for source, feats in _features(layer, p, used):
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
                arr = np.empty(layer.shape, dtype=np.int32)
                for u in range(hidden):
                    arr[:, u] = oid(cell[u])
            else:
                arr = np.empty(layer.shape, dtype=np.int32)
                feature_axis = 0 if layer.kind == "conv" else arr.ndim - 1
                for j in range(layer.out_features):
                    index = [slice(None)] * arr.ndim
                    index[feature_axis] = j
                    arr[tuple(index)] = oid(homes[j // cols])
            out_arrays.append((arr, 1.0 / r_count))
        owners[layer.name] = out_arrays
        release(step, layer)

    for output in network.output_names():
        for arr, frac in owners[output]:
            counts = np.bincount(arr.ravel(), minlength=len(names))
            for o in np.nonzero(counts)[0]:
                flow(names[o], (IO_OUTPUT,), counts[o] * word_bytes * frac, "output", "output")

    final_blocks = tuple(replace(b, alu_ops=alu.get(b.name, 0.0)) for b in blocks.values())
    values = tuple(Value(f"v{k}:{kind}:{src}>{layer}", src, sinks, amount, kind, layer)
                   for k, ((src, sinks, kind, layer), amount) in enumerate(flows.items()))
    return Partition(network.name, final_blocks, values, tuple(order), replicas, (rows, cols))


def _features(layer, p: int, ranges: list[tuple[int, int]]) -> list[tuple[str, tuple[int, ...]]]:
    """What the matrix columns in ``ranges`` of M_p read: ('input', features) and/or ('recurrent', units)."""
    columns = [u for lo, hi in ranges for u in range(lo, hi)]
    out: dict[str, list[int]] = {}
    if layer.kind == "dense":
        n = layer.in_features
        out["input"] = [i for i in columns if i < n]
    elif layer.kind == "conv":
        ic = layer.in_features
        if layer.attrs.get("unroll", "per_position") == "im2col":
            kh, kw = layer.attrs["kernel"]
            out["input"] = sorted({u // (kh * kw) for u in columns if u < ic * kh * kw})
        else:
            out["input"] = [i for i in columns if i < ic]
    elif layer.kind == "lstm":
        n, hidden = layer.in_features, int(layer.attrs["hidden"])
        out["input"] = [i for i in columns if i < n]
        out["recurrent"] = [i - n for i in columns if n <= i < n + hidden]
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


def _alu_per_element(layer, network: Network) -> float:
    """ALU operations per output element of a vector layer (module docstring)."""
    kind = layer.kind
    if kind in MOVEMENT_KINDS:
        return 0.0
    if kind in ("maxpool", "avgpool"):
        kh, kw = layer.attrs["kernel"]
        return float(kh * kw)
    if kind == "matmul":
        return 2.0 * network.shape_of(layer.inputs[0])[-1]
    if kind == "reduce":
        shape = network.shape_of(layer.inputs[0])
        return float(math.prod(shape[a] for a in layer.attrs["axes"]))
    if kind == "softmax":
        return 4.0
    if kind == "layernorm":
        return 6.0
    if kind == "lrn":
        return float(layer.attrs["size"]) + 2.0
    return 1.0


def _gather(arr: np.ndarray, axes: tuple[int, ...], flow, names: list[str], word_bytes: float, frac: float,
            layer_name: str, keepdims: bool) -> np.ndarray:
    """Each group of elements (varying along ``axes``) goes to the owner of its first element; returns the
    owners of the groups (reduced axes kept as size 1) or of every element (``keepdims`` False: broadcast)."""
    moved = np.moveaxis(arr, axes, tuple(range(arr.ndim - len(axes), arr.ndim)))
    flat = moved.reshape(-1, math.prod(arr.shape[a] for a in axes) if axes else 1)
    home = flat[:, :1]
    foreign = flat != home
    if foreign.any():
        pairs, counts = np.unique(np.stack([flat[foreign], np.broadcast_to(home, flat.shape)[foreign]]), axis=1,
                                  return_counts=True)
        for (src, dst), count in zip(pairs.T, counts):
            flow(names[src], (names[dst],), count * word_bytes * frac, "operand", layer_name)
    grouped = home.reshape(moved.shape[:arr.ndim - len(axes)] + (1,) * len(axes))
    grouped = np.moveaxis(grouped, tuple(range(arr.ndim - len(axes), arr.ndim)), axes)
    return grouped if keepdims else np.broadcast_to(grouped, arr.shape).copy()


def _operands(first, second, flow, names: list[str], word_bytes: float, layer_name: str, shape) -> None:
    """The second operand's elements travel to where the first operand's (broadcast) elements live."""
    for a1, f1 in first:
        for a2, f2 in second:
            b1, b2 = np.broadcast_to(a1, shape), np.broadcast_to(a2, shape)
            pairs, counts = np.unique(np.stack([b2.ravel(), b1.ravel()]), axis=1, return_counts=True)
            for (src, dst), count in zip(pairs.T, counts):
                if src != dst:
                    flow(names[src], (names[dst],), count * word_bytes * f1 * f2, "operand", layer_name)


def _follow(layer, ins, network: Network, flow, names: list[str], word_bytes: float) -> list[tuple[np.ndarray, float]]:
    """Owners of a vector layer's output: its ops run where their (first) operand lives."""
    first = ins[0]
    kind, a = layer.kind, layer.attrs
    if kind in ("act", "clip", "normalize", "affine"):
        return first
    if kind == "reshape":
        return [(arr.reshape(layer.shape), frac) for arr, frac in first]
    if kind == "transpose":
        return [(np.ascontiguousarray(np.transpose(arr, a["perm"])), frac) for arr, frac in first]
    if kind == "pad":
        return [(np.pad(arr, [tuple(p) for p in a["pads"]], mode="edge"), frac) for arr, frac in first]
    if kind == "slice":
        return [(np.ascontiguousarray(arr[tuple(slice(*s) for s in a["slices"])]), frac) for arr, frac in first]
    if kind == "depth_to_space":
        return [(depth_to_space(arr[None], a["block"], a.get("mode", "DCR"))[0], frac) for arr, frac in first]
    if kind == "upsample":
        out = []
        for arr, frac in first:
            for axis, factor in enumerate(a["factors"]):
                arr = np.repeat(arr, factor, axis=axis)
            out.append((arr, frac))
        return out
    if kind == "concat":
        out = []
        for combo in itertools.product(*ins):
            frac = math.prod(f for _, f in combo)
            out.append((np.concatenate([arr for arr, _ in combo], axis=a["axis"]), frac))
        return out
    if kind == "binary":
        _operands(first, ins[1], flow, names, word_bytes, layer.name, layer.shape)
        return [(np.broadcast_to(arr, layer.shape).copy(), frac) for arr, frac in first]
    if kind in ("reduce", "softmax", "layernorm", "lrn"):
        shape = network.shape_of(layer.inputs[0])
        if kind == "reduce":
            axes = tuple(a["axes"])
        elif kind == "lrn":
            axes = (0,)
        else:
            axes = tuple(range(a["axis"], len(shape)))
        return [(_gather(arr, axes, flow, names, word_bytes, frac, layer.name, keepdims=kind == "reduce"), frac)
                for arr, frac in first]
    if kind == "matmul":
        out = []
        for a1, f1 in first:
            rows = _gather(a1, (a1.ndim - 1,), flow, names, word_bytes, f1, layer.name, keepdims=True)  # (..., m, 1)
            for a2, f2 in ins[1]:
                lead = np.broadcast_shapes(rows.shape[:-2], a2.shape[:-2])
                homes = np.broadcast_to(rows, lead + rows.shape[-2:]).reshape(-1, rows.shape[-2])
                right = np.broadcast_to(a2, lead + a2.shape[-2:]).reshape(homes.shape[0], -1)
                for b in range(homes.shape[0]):
                    counts = np.bincount(right[b], minlength=len(names))
                    for h in np.unique(homes[b]):
                        for o in np.nonzero(counts)[0]:
                            if o != h:
                                flow(names[o], (names[h],), counts[o] * word_bytes * f1 * f2, "operand", layer.name)
                out.append((np.broadcast_to(rows, layer.shape[:-1] + (1,)).repeat(layer.shape[-1], axis=-1), f1 * f2))
        return out
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
