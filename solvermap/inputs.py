"""Files and paths a user names: checked, read under a size cap, decoded and parsed with bounded depth.

Every problem is one :class:`~solvermap.errors.InputError` naming the path (or flag) and the problem, so
the CLI prints one line and exits with 2, whatever the path holds:

* :func:`input_file` — the path exists and is a regular, readable file (a directory, a FIFO, a device or
  a socket is refused *before* it is opened: reading a FIFO would block);
* :func:`read_bytes` / :func:`read_text` — at most ``max_bytes`` (:data:`MAX_TEXT_BYTES` for hand-written
  YAML), text strictly UTF-8 (the error gives the byte offset of the first bad byte);
* :func:`parse_yaml` / :func:`load_yaml` — YAML through PyYAML's safe loader (no tags that build Python
  objects), refusing nesting deeper than :data:`MAX_DEPTH` while it composes (PyYAML's composer recurses:
  5,000 nested ``[`` exhaust Python's stack) and documents of more than :data:`MAX_NODES` nodes counting
  every use of an alias (a few nested aliases can stand for billions of nodes);
* :func:`output_dir` / :func:`output_file` — a place to write: not a directory where a file goes (or the
  reverse), and the nearest existing folder is writable, checked before anything is written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml

from solvermap.errors import InputError

MAX_TEXT_BYTES = 1 << 20  # a target, run config or study file is hand-written: the shipped ones are 1-5 kB
MAX_DEPTH = 50  # nesting of YAML collections; the shipped files nest 4 deep
MAX_NODES = 100_000  # scalars and collections of one YAML document, aliases expanded


def _describe(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def input_file(path: str | Path, source: str | None = None) -> Path:
    """``path`` as a readable regular file, or one line saying what it is instead."""
    path = Path(path)
    where = source or str(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(where, "", "no such file") from None
    except NotADirectoryError:
        raise InputError(where, "", "no such file (a parent is not a directory)") from None
    except OSError as exc:
        raise InputError(where, "", f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise InputError(where, "", f"is {_describe(mode)}, not a file")
    if not os.access(path, os.R_OK):
        raise InputError(where, "", "permission denied (not readable)")
    return path


def read_bytes(path: str | Path, max_bytes: int, source: str | None = None) -> bytes:
    """The file's bytes, refusing more than ``max_bytes`` (checked before reading and while reading)."""
    path = input_file(path, source)
    where = source or str(path)
    limit = f"larger than the {max_bytes:,}-byte limit for this kind of file"
    if path.stat().st_size > max_bytes:
        raise InputError(where, "", f"{path.stat().st_size:,} bytes: {limit}")
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(where, "", f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InputError(where, "", limit)
    return data


def decode(data: bytes, source: str) -> str:
    """Strict UTF-8 (a leading byte-order mark is dropped); a bad byte is one line with its offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(source, "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                         "is this a binary file?") from None


def read_text(path: str | Path, max_bytes: int = MAX_TEXT_BYTES, source: str | None = None) -> str:
    return decode(read_bytes(path, max_bytes, source), source or str(path))


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing collections nested deeper than :data:`MAX_DEPTH` while composing."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _TooDeep(mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class YamlSyntaxError(InputError):
    """Text that is not YAML at all (as opposed to YAML over a limit)."""


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


def _expanded_size(root: yaml.Node) -> int:
    """Nodes of a composed document with every alias counted as a copy (memoised per node object)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if children_done or not children:
            sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), MAX_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def parse_yaml(text: str, source: str) -> Any:
    """One YAML document (module docstring); ``source`` names it in errors (``source:line: problem``)."""
    loader = None
    try:
        loader = _BoundedLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_NODES:
            raise InputError(source, "", f"more than {MAX_NODES:,} YAML nodes (aliases expanded): over the limit")
        return loader.construct_document(node)
    except _TooDeep as exc:
        raise InputError(f"{source}:{exc.line}", "", f"YAML nested more than {MAX_DEPTH} levels deep: over the "
                         "limit") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlSyntaxError(where, "", f"invalid YAML: {problem}") from None
    except (ValueError, OverflowError) as exc:  # an int of too many digits, a date that does not exist
        raise InputError(source, "", f"invalid YAML value: {str(exc).splitlines()[0].split(';')[0]}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: str | Path, source: str | None = None) -> Any:
    """Read (:func:`read_text`) and parse (:func:`parse_yaml`) a hand-written YAML file."""
    return parse_yaml(read_text(path, MAX_TEXT_BYTES, source), source or str(path))


def _probe(folder: Path, flag: str, shown: str) -> None:
    """Create and remove a scratch entry in ``folder``: ``os.access`` says yes to root on a read-only or
    virtual file system (``/proc``), an attempt does not."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".solvermap-probe-", dir=folder))
    except OSError as exc:
        raise InputError(shown, flag, f"cannot write in {folder}: {exc.strerror or exc}") from None


def _writable_ancestor(path: Path, flag: str, shown: str) -> None:
    """The nearest existing folder above ``path`` must be a directory we may create entries in."""
    parent = path.absolute().parent
    while not parent.exists() and not parent.is_symlink():
        parent = parent.parent
    if parent.is_symlink() and not parent.exists():
        raise InputError(shown, flag, f"cannot be created: {parent} is a dangling symbolic link")
    if not parent.is_dir():
        raise InputError(shown, flag, f"cannot be created: {parent} is not a directory")
    _probe(parent, flag, shown)


def output_dir(path: str | Path, flag: str) -> Path:
    """A directory to create or fill: an existing one must be a writable directory, a new one must be
    creatable (its nearest existing parent a writable directory)."""
    path, shown = Path(path), str(path)
    if path.exists():
        if not path.is_dir():
            raise InputError(shown, flag, f"exists and is {_describe(path.stat().st_mode)}, not a directory")
        _probe(path, flag, shown)
        return path
    _writable_ancestor(path, flag, shown)
    return path


def output_file(path: str | Path, flag: str) -> Path:
    """A file to create or append to: not a directory or a special file, writable, its folder creatable."""
    path, shown = Path(path), str(path)
    if shown.endswith(os.sep):
        raise InputError(shown, flag, "names a directory (ends with a slash), not a file")
    if path.exists():
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise InputError(shown, flag, f"is {_describe(mode)}, not a file")
        try:
            with path.open("ab"):
                pass
        except OSError as exc:
            raise InputError(shown, flag, f"cannot write: {exc.strerror or exc}") from None
        return path
    _writable_ancestor(path, flag, shown)
    return path
