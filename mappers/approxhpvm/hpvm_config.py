"""HPVM's tuner configuration files: write the configurations solvermap chose; read HPVM's (and ours) and evaluate
each one on our simulator and Monte Carlo test.

The format is the one HPVM's tensor runtime reads (``RuntimeController::readConfigurationFile`` in
``hpvm-rt-controller.cpp``; e.g. ``alexnet_cifar10/data/tuner_confs.txt``)::

    2592.187221                                    the all-FP32 time (we write the simulated one, in ms)
    +++++
    conf1 1 1 79.28 0.0                            conf<N> <speedup> <energy> <accuracy %> <accuracy loss %>
    1 gpu conv fp32 11 add fp32 1 tanh fp32 1 pool_max fp32 1
    2 gpu mul fp32 11 add fp32 1                   <node id> gpu (<op> <approximation> <knob>)+
    3 gpu softmax fp32 1
    -----

Ops: ``conv group_conv mul add batchnorm relu tanh pool_max pool_mean softmax`` (ours: conv, gemm, add, batchnorm,
relu, tanh, pool, avgpool, softmax; HPVM's ``clipped_relu`` and ``pool_min`` have no counterpart here). Approximations:
``fp32`` and ``fp16`` (knob 11 / 12 for conv and mul, 1 for the other ops, as HPVM's files have them); HPVM's
perforation and sampling knobs (``perf``, ``perf_fp16``, ``samp``, ``samp_fp16``, ``red_samp``) are read but not
modelled: such a configuration is reported as not evaluated, with the knob named.

Extension (ours; HPVM's current runtime has no PROMISE target): ``<node id> promise swing_level <k>`` runs the
node's whole layer as one PROMISE task at swing P<k> (k = 1..7, HPVM's ``global_knobs.txt`` names the PROMISE knobs
``swing_level`` 1..7), L1136.

Nodes. A line is one HPVM node: a PROMISE task (a layer) or a GPU node whose ops run as fused kernels of at most
``gpu.max_fused_ops`` consecutive ops (one per kernel in HPVM's own files when a node exceeds it). Lines map to the
network's ops in program order: each line takes the next ops of the network, matched by op kind (in any order
within the node, since HPVM's LeNet applies tanh before pooling and ours may not). Our writer writes one line per
execution unit of the chosen mapping (the fused GPU kernels and PROMISE tasks), so reading it back gives the same
schedule.

Header. We write the speedup and energy reduction over all-FP32 on the simulated SoC, the Monte Carlo mean
accuracy (%), and, in the loss field, the loss limit (percentage points) the configuration was validated against
(HPVM's tuner writes its measured loss there, which is at most its limit): the reader tests each configuration
against its stated loss (pass rate ≥ the target's 95 % over ``runs`` Monte Carlo runs, L1058).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from solvermap.errors import InputError
from solvermap.hardware.approxhpvm import PROMISE_KNOBS, swing_level
from solvermap.hardware.approxhpvm.soc_sim import Schedule, all_fp32, monte_carlo, schedule_cost, schedule_units
from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork

START, END = "+++++", "-----"
HPVM_OPS = {"conv": "conv", "group_conv": "conv", "mul": "gemm", "add": "add", "batchnorm": "batchnorm",
            "relu": "relu", "tanh": "tanh", "pool_max": "pool", "pool_mean": "avgpool", "softmax": "softmax"}
UNMODELLED_OPS = ("clipped_relu", "pool_min")
PRECISION = {"fp32": "FP32", "fp16": "FP16"}
UNMODELLED_KNOBS = ("perf", "perf_fp16", "samp", "samp_fp16", "red_samp")
DOT_KNOB = {"FP32": 11, "FP16": 12}  # knob ids of conv / mul (global_knobs.txt); other ops take 1


@dataclass(frozen=True)
class Node:
    """One node line: its id, device, and (ours op kind, knob) per tensor op (PROMISE: the swing for the layer)."""

    node_id: str
    device: str  # gpu | promise
    ops: tuple[tuple[str, str], ...] = ()  # gpu: (op kind, FP32 | FP16 | unmodelled knob name)
    swing: int = 0  # promise
    line: int = 0


@dataclass(frozen=True)
class Configuration:
    name: str
    speedup: float
    energy: float
    accuracy: float  # %
    loss: float  # percentage points
    nodes: tuple[Node, ...]
    line: int = 0


@dataclass
class ConfigFile:
    baseline_time: float
    configurations: list[Configuration] = field(default_factory=list)
    source: str = ""


# ---------------------------------------------------------------------- reading


def _number(token: str, source: str, line: int, what: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise InputError(source, f"line {line}", f"{what} must be a number, got {token!r}") from None


def parse(text: str, source: str = "<hpvm config>") -> ConfigFile:
    """Parse the text of a configuration file; a malformed line is a one-line :class:`InputError`."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError(source, "line 1", "expected the baseline time as the first line")
    out = ConfigFile(_number(lines[0].split()[0], source, 1, "the baseline time"), source=source)
    header: list | None = None
    nodes: list[Node] = []
    open_block = False
    for number, raw in enumerate(lines[1:], start=2):
        tokens = raw.split()
        if not tokens:
            continue
        if tokens[0] == START:
            if open_block:
                raise InputError(source, f"line {number}", f"'{START}' before the previous configuration's '{END}'")
            open_block, header, nodes = True, None, []
            continue
        if not open_block:
            raise InputError(source, f"line {number}", f"expected '{START}' to open a configuration, got {raw.strip()!r}")
        if tokens[0] == END:
            if header is None:
                raise InputError(source, f"line {number}", "a configuration without its header line")
            out.configurations.append(Configuration(*header[:5], tuple(nodes), line=header[5]))
            open_block = False
            continue
        if header is None:
            if len(tokens) != 5 or not tokens[0].startswith("conf"):
                raise InputError(source, f"line {number}", "expected 'conf<N> <speedup> <energy> <accuracy> <loss>'")
            header = [tokens[0], *(_number(t, source, number, w) for t, w in
                                   zip(tokens[1:], ("speedup", "energy", "accuracy", "loss"))), number]
            continue
        nodes.append(_node(tokens, source, number))
    if open_block:
        raise InputError(source, f"line {len(lines)}", f"the last configuration has no closing '{END}'")
    if not out.configurations:
        raise InputError(source, "", "no configuration in the file")
    return out


def _node(tokens: list[str], source: str, number: int) -> Node:
    where = f"line {number}"
    if len(tokens) < 2 or tokens[1] not in ("gpu", "promise"):
        raise InputError(source, where, f"expected '<node id> gpu ...' or '<node id> promise swing_level <k>', got "
                         f"{' '.join(tokens)!r}")
    if tokens[1] == "promise":
        if len(tokens) != 4 or tokens[2] != "swing_level" or tokens[3] not in {str(k) for k in range(1, 8)}:
            raise InputError(source, where, "a PROMISE node is '<node id> promise swing_level <1..7>'")
        return Node(tokens[0], "promise", swing=int(tokens[3]), line=number)
    ops: list[tuple[str, str]] = []
    i = 2
    while i < len(tokens):
        op = tokens[i]
        if op in UNMODELLED_OPS:
            raise InputError(source, where, f"op {op!r} has no counterpart in the ApproxHPVM IR here "
                             f"(supported: {', '.join(HPVM_OPS)})")
        if op not in HPVM_OPS:
            raise InputError(source, where, f"unknown op {op!r} (HPVM's ops: {', '.join((*HPVM_OPS, *UNMODELLED_OPS))})")
        if i + 2 >= len(tokens):
            raise InputError(source, where, f"op {op!r} needs '<approximation> <knob>' after it")
        approx, knob = tokens[i + 1], tokens[i + 2]
        if approx not in PRECISION and approx not in UNMODELLED_KNOBS:
            raise InputError(source, where, f"unknown approximation {approx!r} for {op!r} (HPVM's: "
                             f"{', '.join((*PRECISION, *UNMODELLED_KNOBS))})")
        _number(knob, source, number, f"the knob of {op!r}")
        ops.append((HPVM_OPS[op], PRECISION.get(approx, f"{approx} {knob}")))
        i += 3
    if not ops:
        raise InputError(source, where, "a GPU node lists no op")
    return Node(tokens[0], "gpu", tuple(ops), line=number)


def read(path: str | Path) -> ConfigFile:
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "", "no such file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InputError(str(path), "", "not a text file") from None
    return parse(text, str(path))


# ---------------------------------------------------------------------- configuration → schedule


@dataclass(frozen=True)
class Mapped:
    """A configuration on a network: its knob per op and GPU kernels, or why it cannot be evaluated."""

    knobs: dict[str, str]
    gpu_groups: tuple[tuple[str, ...], ...]
    unmodelled: tuple[str, ...] = ()


def to_schedule(config: Configuration, net: TensorNetwork, spec, source: str = "") -> Mapped:
    """Map the node lines onto ``net``'s ops in program order (module docstring)."""
    ops = list(net.ops)
    at = 0
    knobs: dict[str, str] = {}
    groups: list[tuple[str, ...]] = []
    unmodelled: list[str] = []
    for node in config.nodes:
        where = f"line {node.line}"
        if node.device == "promise":
            if at >= len(ops) or net.layer_ops(ops[at].layer)[0].name != ops[at].name:
                raise InputError(source, where, f"{config.name}: a PROMISE node must start a layer; the next op is "
                                 f"{ops[at].name if at < len(ops) else 'none'}")
            layer = ops[at].layer
            members = net.layer_ops(layer)
            if not members[0].is_dot or members[0].dot_length < spec.promise.min_dot_length:
                raise InputError(source, where, f"{config.name}: layer {layer!r} cannot run on PROMISE (L1133, "
                                 f"dot products ≥ {spec.promise.min_dot_length}, L1248)")
            knobs.update({op.name: f"P{node.swing}" for op in members})
            at += len(members)
            continue
        take = ops[at:at + len(node.ops)]
        if len(take) < len(node.ops) or Counter(op.op for op in take) != Counter(kind for kind, _ in node.ops):
            found = ", ".join(op.op for op in take) or "nothing"
            raise InputError(source, where, f"{config.name}: node {node.node_id} lists "
                             f"{', '.join(kind for kind, _ in node.ops)} but the network's next ops are {found}")
        remaining = list(node.ops)
        for op in take:  # each op takes the knob listed for its kind (first unused one)
            index = next(i for i, (kind, _) in enumerate(remaining) if kind == op.op)
            knob = remaining.pop(index)[1]
            if knob not in PRECISION.values():
                unmodelled.append(f"{op.name}: {knob}")
                knob = "FP16" if "fp16" in knob else "FP32"
            knobs[op.name] = knob
        names = tuple(op.name for op in take)
        k = spec.gpu.max_fused_ops
        groups += [names[i:i + k] for i in range(0, len(names), k)]
        at += len(take)
    if at != len(ops):
        raise InputError(source, f"line {config.line or config.nodes[-1].line}",
                         f"{config.name}: the nodes cover {at} of {net.name}'s {len(ops)} ops")
    return Mapped(knobs, tuple(groups), tuple(unmodelled))


# ---------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Evaluation:
    name: str
    stated_speedup: float
    stated_energy: float
    stated_loss: float  # percentage points
    speedup: float | None = None
    energy_reduction: float | None = None
    pass_rate: float | None = None
    accuracy_mean: float | None = None
    meets_stated_loss: bool | None = None
    runs: int = 0
    not_evaluated: str = ""
    settings: str = ""

    def to_json(self) -> dict:
        return dict(self.__dict__)


def evaluate(config_file: ConfigFile, net: TensorNetwork, spec, *, runs: int, seed: int = 0) -> list[Evaluation]:
    """Predicted speedup and energy reduction over all-FP32 and the Monte Carlo test against the stated loss."""
    base = schedule_cost(net, spec, schedule_units(net, all_fp32(net), ()))
    out = []
    for config in config_file.configurations:
        mapped = to_schedule(config, net, spec, config_file.source)
        stated = (config.name, config.speedup, config.energy, config.loss)
        settings = layer_settings(net, mapped.knobs)
        if mapped.unmodelled:
            out.append(Evaluation(*stated, not_evaluated="approximations not modelled here: "
                                  + "; ".join(mapped.unmodelled), settings=settings))
            continue
        report = schedule_cost(net, spec, schedule_units(net, mapped.knobs, mapped.gpu_groups))
        mc = monte_carlo(net, spec, mapped.knobs, runs=runs, loss_limit=config.loss / 100.0, seed=seed)
        out.append(Evaluation(*stated, speedup=base.total.time_s / report.total.time_s,
                              energy_reduction=base.total.energy_j / report.total.energy_j, pass_rate=mc.pass_rate,
                              accuracy_mean=float(sum(mc.accuracies) / mc.runs),
                              meets_stated_loss=mc.pass_rate >= spec.pass_rate, runs=runs, settings=settings))
    return out


def layer_settings(net: TensorNetwork, knobs: Mapping[str, str]) -> str:
    """``FP16-P4-P4-P6``: each layer's setting (its first op's knob), as Fig. 5.9 prints them."""
    return "-".join(knobs.get(net.layer_ops(layer)[0].name, "FP32") for layer in net.layers)


# ---------------------------------------------------------------------- writing


def _hpvm_op(net: TensorNetwork, name: str) -> str:
    op = net.op(name)
    if op.op == "conv":
        return "group_conv" if op.window is not None and op.window.groups > 1 else "conv"
    return {"gemm": "mul", "pool": "pool_max", "avgpool": "pool_mean"}.get(op.op, op.op)


def node_lines(net: TensorNetwork, schedule: Schedule) -> list[str]:
    """One line per execution unit of ``schedule``, in program order (node ids 1, 2, …)."""
    order = {op.name: i for i, op in enumerate(net.ops)}
    lines = []
    for node_id, unit in enumerate(sorted(schedule.units, key=lambda u: order[u[0]]), start=1):
        knob = schedule.knobs.get(unit[0], "FP32")
        if knob in PROMISE_KNOBS:
            lines.append(f"{node_id} promise swing_level {swing_level(knob)}")
            continue
        parts = []
        for name in unit:
            op_knob = schedule.knobs.get(name, "FP32")
            hpvm = _hpvm_op(net, name)
            number = DOT_KNOB[op_knob] if hpvm in ("conv", "group_conv", "mul") else 1
            parts.append(f"{hpvm} {op_knob.lower()} {number}")
        lines.append(f"{node_id} gpu {' '.join(parts)}")
    return lines


@dataclass(frozen=True)
class Chosen:
    """A configuration to write: its schedule and the figures of the run that chose and validated it."""

    schedule: Schedule
    speedup: float
    energy_reduction: float
    accuracy_mean: float  # fraction
    loss_limit: float  # fraction


def render(net: TensorNetwork, spec, chosen: Sequence[Chosen]) -> str:
    """The file: the all-FP32 baseline as conf1 (one op per node), then each chosen configuration."""
    base_schedule = schedule_units(net, all_fp32(net), ())
    base = schedule_cost(net, spec, base_schedule)
    blocks = [f"{base.total.time_s * 1e3:.6f}", START, f"conf1 1 1 {100 * net.golden_accuracy():.4f} 0.0",
              *node_lines(net, base_schedule), END]
    for n, c in enumerate(chosen, start=2):
        blocks += [START, f"conf{n} {c.speedup!r} {c.energy_reduction!r} {100 * c.accuracy_mean:.4f} "
                          f"{100 * c.loss_limit!r}", *node_lines(net, c.schedule), END]
    return "\n".join(blocks) + "\n"


def check_writable(path: str | Path, option: str = "export.hpvm_config") -> Path:
    """The export path must be a file in an existing directory (checked before any expensive step)."""
    path = Path(path)
    if path.is_dir():
        raise InputError("--set", option, f"{path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise InputError("--set", option, f"directory {path.parent} does not exist")
    return path
