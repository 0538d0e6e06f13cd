"""TODO markers: the comments ``osmosis-migrate`` leaves for a human — how they are wrapped and recognised.

A marker is its first line, ``# TODO(osmosis-migrate OM190): the reason…``, followed by zero or more
*continuation* lines at the same indentation that start with ``#`` and three spaces (:data:`CONTINUATION`)::

    # TODO(osmosis-migrate OM190): `main` is not migrated: it reads `input()` in a loop (an
    #   interactive REPL); move the model calls into a function and migrate that

Everything that reads markers — the rules (:func:`codemods.base.with_todo_comment` recognises a wrapped marker
as the one it would write), the driver's wrapping pass, the summary, the ``--report``, ``osmosis-migrate todo`` —
uses this module, so one marker is one TODO everywhere and its reason is the lines joined with single spaces.
Counting by first lines (``#\\s*TODO\\(osmosis-migrate``, as ``measure.py`` does) gives the same number.

Rules write a marker as one comment line; the driver wraps it at the file's line length
(:func:`wrap_long_markers`), where the indentation of the rendered line is known. Only a marker with a line over
the width is (re)wrapped, so a second run changes nothing. Import-light: no libcst here (``osmosis-migrate todo``
uses it without loading the rules).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional, Sequence, Union

HEAD = "# TODO(osmosis-migrate"
CONTINUATION = "#   "
#: the first line of a marker, on the comment text (indentation stripped)
_FIRST = re.compile(r"#\s*TODO\(osmosis-migrate(?: (OM\d+))?\):[ \t]*(.*?)\s*\Z")
#: a continuation line, on the comment text
_CONT = re.compile(r"#   (\S.*?)\s*\Z")
_FIRST_B = re.compile(rb"([ \t]*)#\s*TODO\(osmosis-migrate(?: (OM\d+))?\):[ \t]*(.*?)\s*\Z")
_CONT_B = re.compile(rb"([ \t]*)#   (\S.*?)\s*\Z")
_BOM = b"\xef\xbb\xbf"
#: narrowest text column a wrapped marker gets, however deep its indentation (a word per line helps nobody)
MIN_TEXT_WIDTH = 40


@dataclass(frozen=True)
class Marker:
    """One TODO marker in a text: its code (``""`` if it names none), its reason (lines joined), its first line
    (1-based) and how many lines it spans."""

    code: str
    reason: str
    line: int
    lines: int = 1

    @property
    def text(self) -> str:
        """The marker as one line (what :func:`codemods.base.todo_marker` writes)."""
        return marker_text(self.code, self.reason)


def marker_text(code: str, reason: str) -> str:
    """``# TODO(osmosis-migrate CODE): reason`` on one line, the reason's whitespace collapsed."""
    reason = " ".join(reason.split())
    return f"{HEAD} {code}): {reason}" if code else f"{HEAD}): {reason}"


def group_comments(comments: Sequence[Optional[str]]) -> list[tuple[int, int, str, str]]:
    """The markers in a run of lines given as their comment texts (``None`` for a line that is not a comment):
    ``(start, end, code, reason)`` with ``comments[start:end]`` the marker's lines. For libcst ``leading_lines``
    and module headers, where the indentation is the block's."""
    out = []
    i = 0
    while i < len(comments):
        m = _FIRST.match(comments[i] or "")
        if m is None:
            i += 1
            continue
        parts = [m.group(2)]
        j = i + 1
        while j < len(comments):
            c = _CONT.match(comments[j] or "")
            if c is None:
                break
            parts.append(c.group(1))
            j += 1
        out.append((i, j, m.group(1) or "", " ".join(" ".join(p for p in parts if p).split())))
        i = j
    return out


def _groups(lines: Sequence[bytes]) -> list[tuple[int, int, bytes, str, list[bytes]]]:
    """Markers in source lines (no line endings): ``(start, end, indent, code, parts)``; a continuation line must
    have the first line's indentation."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if b"TODO(osmosis-migrate" not in line:
            i += 1
            continue
        m = _FIRST_B.match(line)
        if m is None:
            i += 1
            continue
        indent = m.group(1)
        parts = [m.group(3)]
        j = i + 1
        while j < len(lines):
            c = _CONT_B.match(lines[j])
            if c is None or c.group(1) != indent:
                break
            parts.append(c.group(2))
            j += 1
        out.append((i, j, indent, (m.group(2) or b"").decode("ascii"), parts))
        i = j
    return out


def _split_lines(data: bytes) -> tuple[bytes, list[bytes], list[bytes]]:
    """(BOM, lines without endings, endings): Python's own line ends (``\\r\\n``, ``\\n``, ``\\r``) only."""
    bom = _BOM if data.startswith(_BOM) else b""
    raw = data[len(bom):].splitlines(keepends=True)
    bodies, ends = [], []
    for line in raw:
        body = line.rstrip(b"\r\n")
        bodies.append(body)
        ends.append(line[len(body):])
    return bom, bodies, ends


def find_markers(data: Union[bytes, str], encoding: str = "utf-8") -> list[Marker]:
    """Every marker in a source text, in order (a marker-shaped line inside a string literal counts too: the
    check is textual, as ``osmosis-migrate todo`` has always been)."""
    if isinstance(data, str):
        data, encoding = data.encode("utf-8", "surrogatepass"), "utf-8"
    if b"TODO(osmosis-migrate" not in data:
        return []
    _, lines, _ = _split_lines(data)
    out = []
    for start, end, _indent, code, parts in _groups(lines):
        reason = " ".join(b" ".join(p for p in parts if p).decode(encoding, "replace").split())
        out.append(Marker(code, reason, start + 1, end - start))
    return out


def wrap_marker(code: str, reason: str, width: int) -> list[str]:
    """The lines of a marker wrapped to ``width`` columns (indentation excluded): words are never split, the first
    line holds at least one word, continuation lines start with :data:`CONTINUATION`."""
    head = marker_text(code, "").rstrip()
    words = reason.split()
    if not words:
        return [head]
    lines: list[str] = []
    current = f"{head} {words[0]}"
    for word in words[1:]:
        if len(current) + 1 + len(word) > width:
            lines.append(current)
            current = CONTINUATION + word
        else:
            current = f"{current} {word}"
    lines.append(current)
    return lines


def _string_lines(data: bytes, tree: Optional[ast.AST] = None, wanted: Optional[set[int]] = None) -> set[int]:
    """1-based lines that lie inside a multi-line string literal (never edited as comments); ``tree``: the ``ast``
    of ``data`` when the caller has it; ``wanted``: only these lines matter (the walk enters only the nodes that span
    one of them — a file's markers are a few lines of a large tree)."""
    if tree is None:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return set(range(1, data.count(b"\n") + 2))  # unknown: treat every line as possibly inside a string
    inside: set[int] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if first is not None and last is not None and wanted is not None \
                and not any(first <= line <= last for line in wanted):
            continue
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and last and first and last > first:
            if isinstance(node, ast.JoinedStr) or isinstance(node.value, (str, bytes)):
                inside.update(range(first + 1, last + 1))
                continue
        stack.extend(ast.iter_child_nodes(node))
    return inside


def _encoding(data: bytes) -> str:
    """The encoding a source declares (PEP 263 cookie), utf-8 by default; a BOM is handled by the caller."""
    import io
    import tokenize

    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except (SyntaxError, LookupError):
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


def wrap_long_markers(data: bytes, width: int, tree: Optional[ast.AST] = None) -> bytes:
    """``data`` (a source file's bytes, in its declared encoding) with every marker that has a line longer than
    ``width`` characters rewrapped at ``width`` (its indentation included; never narrower than
    :data:`MIN_TEXT_WIDTH` columns of text), keeping its indentation and line ending. Markers that fit are left
    exactly as they are — also when wrapped differently — so the result is a fixed point; lines inside string
    literals are never touched (``tree``: the ``ast`` of ``data``, if the caller has it; else it is parsed when a
    marker needs wrapping)."""
    if b"TODO(osmosis-migrate" not in data:
        return data
    bom, lines, ends = _split_lines(data)
    todo = []
    for start, end, indent, code, parts in _groups(lines):
        if any(len(lines[k]) > width and len(lines[k].decode("utf-8", "replace")) > width for k in range(start, end)):
            todo.append((start, end, indent, code, parts))
    if not todo:
        return data
    encoding = _encoding(data)
    in_strings = _string_lines(data, tree, {start + 1 for start, *_ in todo})
    for start, end, indent, code, parts in reversed(todo):  # from the end: earlier indices stay valid
        if start + 1 in in_strings:
            continue
        reason = b" ".join(p for p in parts if p).decode(encoding, "surrogateescape")
        text_width = max(width - len(indent.decode(encoding, "surrogateescape")), MIN_TEXT_WIDTH)
        eol = ends[start] or b"\n"
        new = [indent + part.encode(encoding, "surrogateescape") for part in wrap_marker(code, reason, text_width)]
        new_ends = [eol] * (len(new) - 1) + [ends[end - 1]]
        lines[start:end] = new
        ends[start:end] = new_ends
    return bom + b"".join(body + end for body, end in zip(lines, ends))
