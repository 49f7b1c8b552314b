"""Reading a graph file's text: one clear line for every file that is not a readable text graph.

Every graph loader (JSON, DOT, GraphML, XML DFG) reads its file through :func:`read_text`, which refuses,
each with an :class:`~solvermap.errors.InputError` naming the file:

* a missing path, a directory, a file that cannot be read (permissions);
* a file over :data:`MAX_FILE_BYTES` (the size is named; generator-sized DFGs are a few MB at most);
* binary data (a NUL byte) and bytes that are not UTF-8 (the offset of the first bad byte is named).

XML inputs (GraphML, the XML DFG dialect) are also checked by :func:`refuse_xml_declarations`: a
document type declaration (``<!DOCTYPE``, ``<!ENTITY``) is refused, so no entity is ever expanded
(no "billion laughs", no external entity is fetched); neither format needs one.

:func:`nesting_depth` measures how deeply brackets nest (outside quoted strings and comments) so a
loader can refuse a file nested deeper than :data:`MAX_NESTING` before a recursive parser sees it.
"""

from __future__ import annotations

import re
from pathlib import Path

from solvermap.errors import InputError

MAX_FILE_BYTES = 64 * 1024 * 1024  # a graph file larger than this is refused before it is read
MAX_NESTING = 100  # brackets / subgraphs / child graphs nested deeper than this are refused


def read_text(path: str | Path, what: str = "graph file") -> str:
    """The file's text, or an InputError naming the file and what is wrong with it."""
    path = Path(path)
    source = str(path)
    try:
        if not path.exists():
            raise InputError(source, "", "no such file")
        if path.is_dir():
            raise InputError(source, "", f"is a directory, expected a {what}")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(source, "", f"file of {size:,} bytes is over the {MAX_FILE_BYTES:,}-byte limit for a {what}")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(source, "", f"cannot read the file ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:  # a file that grew (or a device that reports no size)
        raise InputError(source, "", f"over the {MAX_FILE_BYTES:,}-byte limit for a {what}")
    if b"\x00" in data:
        raise InputError(source, f"byte {data.index(0)}", f"binary data (a NUL byte), expected a text {what}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"byte {exc.start}", f"not UTF-8 text, expected a text {what}") from None


_XML_DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def refuse_xml_declarations(text: str, source: str) -> None:
    """Refuse a DTD or entity declaration: no entity of a data file is ever expanded."""
    match = _XML_DECLARATION.search(text)
    if match:
        line = text.count("\n", 0, match.start()) + 1
        raise InputError(source, f"line {line}", f"<!{match.group(1).upper()} declarations are not allowed in a graph file")


_STRINGS_AND_COMMENTS = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def nesting_depth(text: str, opening: str = "{[", closing: str = "}]") -> int:
    """How deeply the ``opening``/``closing`` brackets nest, outside quoted strings and comments."""
    depth = deepest = 0
    stripped = _STRINGS_AND_COMMENTS.sub("", text)
    for ch in re.findall(f"[{re.escape(opening + closing)}]", stripped):
        if ch in opening:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest
