"""DOT reader for dataflow graphs as CGRA tools write them (the Graphviz DOT language, digraphs).

Follows the DOT grammar (graph, subgraph, node, edge and attribute statements; IDs as names, numerals,
``"quoted strings"`` with ``+`` concatenation, and ``<HTML strings>``; ``//``, ``/* */`` and ``#``
comments) and Graphviz's meaning of the statements, which DFG files lean on:

* nodes may be declared anywhere: at the top, inside anonymous blocks ``{ rank=same; a; b; }`` and
  inside ``subgraph cluster_x { … }`` (the innermost named subgraph a node is first declared in is kept
  as its ``subgraph`` attribute); an edge statement declares the nodes it names;
* ``node [..]`` / ``edge [..]`` set defaults for the nodes and edges created after them in the same
  block and its sub-blocks (CGRA-Mapper writes ``edge [color=blue]`` before its control edges and
  ``edge [color=red]`` before its data edges); a block's defaults end with the block;
* ``a -> b -> c`` is two edges and ``a -> {b c}`` one edge to each node of the block;
* ``a:port -> b:port`` keeps the ports as ``tailport``/``headport``;
* the graph's attributes (``label=…`` statements and ``graph [..]``) are kept; a named subgraph's
  attributes go to ``attrs.subgraphs.<name>``.

Refused, each with one line naming the file and line: syntax errors, an undirected ``graph`` (a
dataflow graph is a digraph), more than one graph in a file, subgraphs nested deeper than
:data:`~solvermap.ir.dfg_files.MAX_NESTING`. The reader is a hand-written tokenizer and recursive-descent
parser: pydot's pyparsing grammar is orders of magnitude slower on generator-sized DFG files, prints
its errors to stdout and overflows the Python stack on deep nesting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import InputError
from solvermap.ir.dfg_files import MAX_NESTING, nesting_depth, read_text
from solvermap.ir.dfg_flat import BackEdgeRule, FlatGraph, to_ir
from solvermap.ir.graph import DataflowGraph

_TOKENS = re.compile(r"""
    (?P<space>[ \t\r\n\f\v]+ | //[^\n]* | /\*.*?\*/ | (?m:^[ \t]*\#[^\n]*))
  | (?P<edgeop>->|--)
  | (?P<punct>[{}\[\];,=:+])
  | (?P<quoted>"(?:[^"\\]|\\.)*")
  | (?P<id>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]* | -?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<html><)
""", re.VERBOSE | re.DOTALL)
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


@dataclass(frozen=True)
class _Token:
    kind: str  # edgeop | punct | quoted | id | html | end
    text: str
    line: int

    def keyword(self) -> str | None:
        return self.text.lower() if self.kind == "id" and self.text.lower() in _KEYWORDS else None


def tokenize(text: str, source: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, line = 0, 1
    while pos < len(text):
        match = _TOKENS.match(text, pos)
        if match is None:
            what = "unterminated string" if text[pos] == '"' else (
                "unterminated comment" if text.startswith("/*", pos) else f"unexpected character {text[pos]!r}")
            raise InputError(source, f"line {line}", f"invalid DOT: {what}")
        kind = match.lastgroup
        if kind == "html":
            end = _html_end(text, pos, source, line)
            tokens.append(_Token("html", text[pos + 1:end - 1], line))
            line += text.count("\n", pos, end)
            pos = end
            continue
        if kind != "space":
            value = match.group()
            if kind == "quoted":
                value = value[1:-1].replace("\\\r\n", "").replace("\\\n", "").replace('\\"', '"')
            tokens.append(_Token(kind, value, line))
        line += match.group().count("\n")
        pos = match.end()
    tokens.append(_Token("end", "end of file", line))
    return tokens


def _html_end(text: str, pos: int, source: str, line: int) -> int:
    depth = 0
    for k in range(pos, len(text)):
        if text[k] == "<":
            depth += 1
        elif text[k] == ">":
            depth -= 1
            if depth == 0:
                return k + 1
    raise InputError(source, f"line {line}", "invalid DOT: unterminated <HTML string>")


@dataclass
class _Scope:
    node_defaults: dict[str, str]
    edge_defaults: dict[str, str]
    subgraph: str  # innermost named subgraph ("" at the top)
    own: str | None = ""  # this block's name: "" the graph itself, None an anonymous block
    members: set[str] = field(default_factory=set)


class _Parser:
    def __init__(self, tokens: list[_Token], source: str) -> None:
        self.tokens, self.pos, self.source = tokens, 0, source
        self.flat = FlatGraph()
        self.subgraphs: dict[str, dict[str, str]] = {}

    # ---------------------------------------------------------------- token helpers
    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.pos += 1
        return token

    def error(self, expected: str) -> InputError:
        token = self.peek()
        found = token.text if token.kind == "end" else repr(token.text)
        return InputError(self.source, f"line {token.line}", f"invalid DOT: expected {expected}, found {found}")

    def accept(self, text: str) -> bool:
        if self.peek().kind in ("punct", "edgeop") and self.peek().text == text:
            self.pos += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise self.error(f"'{text}'")

    def is_id(self, token: _Token | None = None) -> bool:
        token = token or self.peek()
        return token.kind in ("quoted", "html") or (token.kind == "id" and token.keyword() is None)

    def identifier(self, expected: str = "a name") -> str:
        if not self.is_id():
            raise self.error(expected)
        token = self.take()
        value = token.text
        while token.kind == "quoted" and self.peek().text == "+" and self.peek(1).kind == "quoted":
            self.pos += 1
            value += self.take().text
        return value

    # ---------------------------------------------------------------- grammar
    def graph(self) -> FlatGraph:
        if self.peek().keyword() == "strict":
            self.take()
        kind = self.peek().keyword()
        if kind not in ("graph", "digraph"):
            raise self.error("'digraph'")
        self.take()
        if kind == "graph":
            raise InputError(self.source, f"line {self.peek().line}",
                             "an undirected graph ('graph'); a dataflow graph is a 'digraph' with '->' edges")
        if self.is_id():
            self.flat.name = self.identifier()
        self.expect("{")
        self.statements(_Scope({}, {}, ""), depth=0)
        self.expect("}")
        if self.peek().kind != "end":
            raise InputError(self.source, f"line {self.peek().line}",
                             "invalid DOT: more than one graph in the file (or text after the closing '}')")
        if self.subgraphs:
            self.flat.attrs["subgraphs"] = self.subgraphs
        return self.flat

    def statements(self, scope: _Scope, depth: int) -> None:
        while not (self.peek().kind == "punct" and self.peek().text == "}") and self.peek().kind != "end":
            self.statement(scope, depth)
            self.accept(";")

    def statement(self, scope: _Scope, depth: int) -> None:
        token = self.peek()
        keyword = token.keyword()
        if keyword in ("graph", "node", "edge"):
            self.take()
            attrs = self.attr_lists(required=True)
            if keyword == "graph":
                self.graph_attrs(scope).update(attrs)
            elif keyword == "node":
                scope.node_defaults.update(attrs)
            else:
                scope.edge_defaults.update(attrs)
            return
        if self.is_id() and self.peek(1).kind == "punct" and self.peek(1).text == "=":
            key = self.identifier()
            self.take()
            self.graph_attrs(scope)[key] = self.identifier("a value")
            return
        ends = [self.endpoint(scope, depth)]
        while self.peek().kind == "edgeop":
            if self.take().text != "->":
                raise InputError(self.source, f"line {token.line}", "invalid DOT: '--' edge in a digraph (use '->')")
            ends.append(self.endpoint(scope, depth))
        attrs = self.attr_lists(required=False)
        if len(ends) == 1:
            if ends[0][0] == "node":
                self.node(ends[0][1][0][0], scope, attrs)
            return
        for (_, tails), (_, heads) in zip(ends, ends[1:]):
            for tail, tail_port in tails:
                for head, head_port in heads:
                    edge = dict(scope.edge_defaults)
                    if tail_port:
                        edge["tailport"] = tail_port
                    if head_port:
                        edge["headport"] = head_port
                    edge.update(attrs)
                    self.flat.edges.append((tail, head, edge))

    def endpoint(self, scope: _Scope, depth: int) -> tuple[str, list[tuple[str, str]]]:
        """A node id (with its port) or a subgraph (all its nodes)."""
        if self.peek().keyword() == "subgraph" or (self.peek().kind == "punct" and self.peek().text == "{"):
            members = self.subgraph(scope, depth + 1)
            return "subgraph", [(m, "") for m in sorted(members)]
        name = self.identifier("a node, a subgraph or an attribute statement")
        port = ""
        if self.accept(":"):
            port = self.identifier("a port")
            if self.accept(":"):
                port += ":" + self.identifier("a compass point")
        self.node(name, scope, {})
        return "node", [(name, port)]

    def subgraph(self, scope: _Scope, depth: int) -> set[str]:
        if depth > MAX_NESTING:
            raise InputError(self.source, f"line {self.peek().line}", f"subgraphs nested deeper than {MAX_NESTING}")
        name = ""
        if self.peek().keyword() == "subgraph":
            self.take()
            if self.is_id():
                name = self.identifier()
        self.expect("{")
        inner = _Scope(dict(scope.node_defaults), dict(scope.edge_defaults), name or scope.subgraph, name or None)
        if name:
            self.subgraphs.setdefault(name, {})
        self.statements(inner, depth)
        self.expect("}")
        scope.members |= inner.members
        return inner.members

    def graph_attrs(self, scope: _Scope) -> dict[str, Any]:
        """Where a block's own attributes go: the graph's, a named subgraph's, or nowhere (anonymous)."""
        if scope.own == "":
            return self.flat.attrs
        return self.subgraphs.setdefault(scope.own, {}) if scope.own else {}

    def attr_lists(self, *, required: bool) -> dict[str, str]:
        attrs: dict[str, str] = {}
        if required and not (self.peek().kind == "punct" and self.peek().text == "["):
            raise self.error("'['")
        while self.accept("["):
            while not self.accept("]"):
                key = self.identifier("an attribute name or ']'")
                if self.accept("="):
                    attrs[key] = self.identifier("an attribute value")
                else:
                    attrs[key] = "true"  # Graphviz reads a bare name as name=true
                if not self.accept(","):
                    self.accept(";")
        return attrs

    def node(self, name: str, scope: _Scope, attrs: dict[str, str]) -> None:
        if name not in self.flat.nodes:
            self.flat.nodes[name] = dict(scope.node_defaults)
            if scope.subgraph:
                self.flat.nodes[name]["subgraph"] = scope.subgraph
        self.flat.nodes[name].update(attrs)
        scope.members.add(name)


def parse(text: str, source: str = "<dot>") -> FlatGraph:
    """Parse DOT text into a :class:`~solvermap.ir.dfg_flat.FlatGraph` (nothing interpreted yet)."""
    if nesting_depth(text) > MAX_NESTING:
        raise InputError(source, "", f"brackets nested deeper than {MAX_NESTING}")
    tokens = tokenize(text, source)
    if tokens[0].kind == "end":
        raise InputError(source, "", "empty file: no DOT graph")
    return _Parser(tokens, source).graph()


def read_dot(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    """Load a DOT file as a validated IR graph (conventions of :mod:`solvermap.ir.dfg_flat`)."""
    source = str(path)
    return to_ir(parse(read_text(path, "DOT graph file"), source), source, back_edge)


def loads(text: str, source: str = "<dot>", back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    return to_ir(parse(text, source), source, back_edge)
