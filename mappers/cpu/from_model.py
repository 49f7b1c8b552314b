"""Models and layer-shape files on the CPU tensorize targets: each quantisable layer one loop nest.

A workload that is an ONNX model (:class:`~solvermap.ir.onnx_import.OnnxModel`) or a layer-shape file
(:class:`~solvermap.ir.layer_shapes.LayerShapes`) is read as its conv and matrix layers
(:func:`~solvermap.ir.layer_shapes.from_model`): every 2-D Conv (groups, strides, dilation; the input
padded as the layer needs it), Gemm and MatMul — with a weight, or of two activations — becomes the loop
nest of :func:`~solvermap.ir.layer_shapes.conv_program` in the instruction's operand types (uint8 data,
int8 weights, int32 sums: the model is taken as quantised, as UNIT's Relay flow does, 002:L276). Every
other operator (activations, pooling, normalisation, data movement) is not tensorized and not timed.

Each *distinct* problem is inspected once; an applicable one is tensorized by the ``tensorize`` decision
(one record per distinct problem, ``details.layer`` and ``details.layers`` naming the model's layers that
share it) and validated (rewrite, bit-exact checks, tuning, timing). A problem the instruction cannot run
is not a failure of the model: its rows of the per-layer table say which inspector rule refused it. When no
layer is applicable the run stops with that refusal (one line). The end-to-end validation is the per-layer
table (``layers``) and totals over the model's layers (each counted as often as it occurs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import InputError
from solvermap.ir.layer_shapes import ConvShape, LayerShapes, conv_program, from_model
from solvermap.ir.onnx_import import OnnxModel


def is_model(ir: Any) -> bool:
    return isinstance(ir, (OnnxModel, LayerShapes))


def layer_shapes(ir: Any) -> LayerShapes:
    return ir if isinstance(ir, LayerShapes) else from_model(ir)


@dataclass
class LayerVerdict:
    shape: ConvShape
    names: list[str]
    program: Any
    verdict: Any


@dataclass
class LayerVerdicts:
    """``ctx.state["inspect"]`` for a model: one verdict per distinct layer problem."""

    layers: list[LayerVerdict] = field(default_factory=list)

    @property
    def applicable(self) -> list[LayerVerdict]:
        return [v for v in self.layers if v.verdict.applicable]


def inspect_layers(ctx) -> LayerVerdicts:
    from solvermap.hardware.cpu.instructions import descriptor
    from solvermap.mappers.cpu.inspector import inspect
    from solvermap.mappers.decisions import TENSORIZE

    shapes = layer_shapes(ctx.workload.ir)
    if not shapes.layers:
        raise InputError(ctx.workload.name, "model", "has no Conv, Gemm or MatMul layer to tensorize (family cpu)")
    instruction = descriptor(ctx.target.instruction, ctx.target.name)
    options = ctx.options_for(TENSORIZE)
    allow_padding = ctx.target.allow_padding if options.allow_padding is None else options.allow_padding
    out = LayerVerdicts()
    for shape, names in shapes.distinct():
        program = conv_program(shape, _program_name(ctx.workload.name, names[0]))
        verdict = inspect(program, instruction, allow_padding=allow_padding, commutative=options.commutative,
                          workload=program.name)
        out.layers.append(LayerVerdict(shape, names, program, verdict))
    if not out.applicable:
        first = out.layers[0]
        raise InputError(ctx.workload.name, "instruction", f"{instruction.name} is not applicable to any layer "
                         f"(family cpu); e.g. layer '{first.names[0]}': {first.verdict.rule}: {first.verdict.reason}")
    ctx.say(f"inspect: {len(shapes.layers)} layers, {len(out.layers)} distinct, {len(out.applicable)} applicable")
    return out


def _program_name(model: str, layer: str) -> str:
    return f"{model}:{layer}"


def tensorize_layers(ctx, validate_one) -> Any:
    """One tensorize decision per applicable distinct layer; every record but the last is appended to
    ``ctx.records`` here, the last returned (the pipeline appends it)."""
    from solvermap.mappers.decisions import TENSORIZE
    from solvermap.mappers.pipeline import run_decision

    verdicts: LayerVerdicts = ctx.state["inspect"]
    records = []
    for k, layer in enumerate(verdicts.applicable):
        ctx.say(f"tensorize: layer {k + 1}/{len(verdicts.applicable)} '{layer.names[0]}' ({_dims(layer.shape)})")
        _, record = run_decision(ctx, TENSORIZE, layer.verdict.problem, validate=validate_one)
        record.details["layer"] = layer.names[0]
        record.details["layers"] = list(layer.names)
        record.details["shape"] = layer.shape.describe()
        records.append(record)
    ctx.records.extend(records[:-1])
    return records[-1]


def _dims(shape: ConvShape) -> str:
    d = shape.describe()
    return " ".join(f"{k}={v}" for k, v in d.items() if v != 1 or k in ("C", "K"))


TABLE_KEYS = ("bit_exact", "latency_s", "predicted_latency_s", "speedup_vs_untensorized", "speedup_vs_numpy",
              "padding_overhead", "instructions")


def validation(ctx) -> dict[str, Any]:
    """The per-layer table and model totals (module docstring)."""
    verdicts: LayerVerdicts = ctx.state["inspect"]
    by_layer = {r.details.get("layer"): r for r in ctx.records if r.decision == "tensorize"}
    rows: list[dict[str, Any]] = []
    total_latency, timed = 0.0, True
    for layer in verdicts.layers:
        record = by_layer.get(layer.names[0])
        for name in layer.names:
            row: dict[str, Any] = {"layer": name, **layer.shape.describe(), "macs": layer.shape.macs}
            if record is None:
                row.update({"status": f"not applicable ({layer.verdict.rule})", "reason": layer.verdict.reason})
                timed = False
            else:
                row.update({"status": "tensorized", "objective": record.solver.objective, "solution_source": record.solution_source,
                            **{key: record.validation.get(key) for key in TABLE_KEYS}})
                latency = record.validation.get("latency_s") or record.validation.get("predicted_latency_s")
                if latency is None:
                    timed = False
                else:
                    total_latency += float(latency)
            rows.append(row)
    tensorized = [r for r in rows if r["status"] == "tensorized"]
    return {
        "layers": rows,
        "layers_total": len(rows),
        "layers_tensorized": len(tensorized),
        "distinct_problems": len(verdicts.layers),
        "macs_total": sum(r["macs"] for r in rows),
        "macs_tensorized": sum(r["macs"] for r in tensorized),
        "bit_exact": all(bool(r.get("bit_exact")) for r in tensorized),
        "latency_s": total_latency if timed else None,
        "latency_s_tensorized_layers": total_latency,
    }
