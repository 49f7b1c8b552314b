"""The XML DFG dialect of the Morpher CGRA toolchain (its DFG generator writes it, its mapper reads it).

Layout as the generator writes it (one file per loop, e.g. ``gemm_INNERMOST_LN1_PartPred_DFG.xml``)::

    <MutexBB> <BB1 name="for.body_0_0"> <BB2 name="for.body_0_1"/> </BB1> </MutexBB>
    <DFG count="3">
    <Node idx="4" ASAP="1" ALAP="2"BB="for.body"CONST="1">
    <OP>ADD</OP>
    <BasePointerName size="80">A</BasePointerName>
    <Inputs> <Input idx="4"/> </Inputs>
    <Outputs> <Output idx="5" nextiter="0" type="I1"/> <Output idx="4" nextiter="1" type="I2"/> </Outputs>
    <RecParents> </RecParents>
    </Node>
    ...
    </DFG>

The file is not well-formed XML as written: it has two top-level elements and no space between some
attributes (``ALAP="2"BB="for.body"``). Morpher reads it with tinyxml2, which tolerates both; this
reader does the same by wrapping the text in one root element and inserting the missing spaces
inside tags, then parses it with the standard library (no document type declarations allowed).

Meaning (from the mapper's reader): each ``Node`` is an operation named by its ``idx``; ``OP`` is its
opcode; an ``Output idx=j nextiter=d type=t`` is an edge to node ``j`` carrying the value of ``d``
iterations ago (``d`` > 0 is a back edge with ``d`` initial tokens) into operand slot ``t`` (``I1``,
``I2``; ``P``/``PS`` predicates), which becomes ``dst_port``. ``Input`` elements repeat the edges from
the consumer's side; one with no matching ``Output`` is added as a forward edge.
``BasePointerName`` (the array an access or address computation refers to) becomes ``attrs.array``
and its ``size`` (bytes) ``attrs.array_bytes``; ``ASAP``/``ALAP``/``BB``/``CONST`` and ``RecParents``
are kept in ``attrs``. The ``MutexBB`` section and the ``DFG count`` are kept as graph attributes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from solvermap.errors import InputError
from solvermap.ir.dfg_files import read_text, refuse_xml_declarations
from solvermap.ir.dfg_flat import BackEdgeRule, FlatGraph, number, to_ir
from solvermap.ir.graph import DataflowGraph

_TAG = re.compile(r"<[^<>]*>")
_GLUED = re.compile(r'("|\')(?=[A-Za-z_][\w.-]*\s*=)')  # a quote closing one attribute, the next name glued on
_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_ROOT = "solvermap-dfg-file"


def looks_like(text: str) -> bool:
    """True when the text holds a ``<DFG`` element with ``<Node`` children (sniffing a renamed file)."""
    return "<DFG" in text and "<Node" in text


def parse(text: str, source: str = "<xml>") -> FlatGraph:
    refuse_xml_declarations(text, source)
    if not text.strip():
        raise InputError(source, "", "empty file: no XML DFG")
    body = _DECLARATION.sub("", text)
    body = _TAG.sub(lambda m: _GLUED.sub(r"\1 ", m.group()), body)
    try:
        root = ET.fromstring(f"<{_ROOT}>{body}</{_ROOT}>")
    except ET.ParseError as exc:
        line, column = exc.position
        raise InputError(source, f"line {line}", f"invalid XML: {str(exc).split(':')[0]} (column {column})") from None
    dfg = root.find("DFG") if root.find("DFG") is not None else root.find(".//DFG")
    if dfg is None:
        raise InputError(source, "", "no <DFG> element: not an XML DFG file")
    flat = FlatGraph(name=Path(source).stem, attrs={f"dfg_{k}": v for k, v in dfg.attrib.items()})
    mutex = root.find("MutexBB")
    if mutex is not None and len(mutex):
        flat.attrs["mutex_bb"] = {bb.get("name", ""): sorted(b.get("name", "") for b in bb) for bb in mutex}
    for k, node in enumerate(dfg.findall("Node")):
        _node(flat, node, source, k)
    outputs = set()
    for node in dfg.findall("Node"):
        name = node.get("idx")
        for k, out in enumerate(node.findall("Outputs/Output")):
            where = f"Node {name}.Outputs[{k}]"
            dst = _idx(out, source, where)
            attrs = {"nextiter": out.get("nextiter", "0")}
            if out.get("type"):
                attrs["dst_port"] = out.get("type")
            for key, value in out.attrib.items():
                if key not in ("idx", "nextiter", "type"):
                    attrs[key] = value
            _require_node(flat, dst, source, where)
            flat.edges.append((name, dst, attrs))
            outputs.add((name, dst))
    for node in dfg.findall("Node"):
        name = node.get("idx")
        for k, inp in enumerate(node.findall("Inputs/Input")):
            where = f"Node {name}.Inputs[{k}]"
            src = _idx(inp, source, where)
            _require_node(flat, src, source, where)
            if (src, name) not in outputs:
                flat.edges.append((src, name, {"nextiter": "0"}))
                outputs.add((src, name))
    return flat


def _node(flat: FlatGraph, node: ET.Element, source: str, k: int) -> None:
    name = _idx(node, source, f"DFG.Node[{k}]")
    if name in flat.nodes:
        raise InputError(source, f"Node {name}", "duplicate node idx")
    op = (node.findtext("OP") or "").strip()
    if not op:
        raise InputError(source, f"Node {name}.OP", "missing operation")
    attrs = {key: value for key, value in node.attrib.items() if key != "idx"}
    attrs["op"] = op
    base = node.find("BasePointerName")
    if base is not None and (base.text or "").strip():
        attrs["array"] = base.text.strip()
        if base.get("size"):
            attrs["array_bytes"] = str(int(number(base.get("size"), source, f"Node {name}.BasePointerName.size",
                                                  minimum=0)))
    for child in ("GEPOffset",):
        if node.findtext(child):
            attrs[child] = node.findtext(child).strip()
    rec = [r.get("idx") for r in node.findall("RecParents/RecParent") if r.get("idx")]
    if rec:
        attrs["rec_parents"] = ",".join(rec)
    flat.nodes[name] = attrs


def _idx(element: ET.Element, source: str, where: str) -> str:
    value = element.get("idx")
    if value is None:
        raise InputError(source, where, "missing idx")
    return str(int(number(value, source, f"{where}.idx", minimum=-(2**63), maximum=2**63)))


def _require_node(flat: FlatGraph, name: str, source: str, where: str) -> None:
    if name not in flat.nodes:
        raise InputError(source, where, f"refers to node {name}, which the DFG does not have")


def read_xml(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    source = str(path)
    return to_ir(parse(read_text(path, "XML DFG file"), source), source, back_edge)
