"""``--output-format github``: GitHub Actions workflow commands, one per finding, as ruff writes them.

* every open TODO marker → ``::warning file=…,line=…,endLine=…,title=OM190::<reason>``;
* every file that failed → ``::error file=…,title=osmosis-migrate failed::<reason>``;
* with ``--check``/``--diff``, every file that would change → ``::error file=…,line=…,title=osmosis-migrate::
  would change: N edit(s) (codes)``;
* files not written because of uncommitted changes → ``::error file=…,title=osmosis-migrate::…``.

Lines point into the file as it is on disk when the annotation is read: after a run that wrote, the written file;
after ``--check``/``--diff`` (nothing written) the file as it was, so a marker that would be added points at the
line it would be added above (:func:`codemods.report.line_maps`). Values are escaped as the runner expects
(``%``, CR, LF; in properties also ``:`` and ``,``).
"""

from __future__ import annotations

import os
from typing import Sequence

from codemods.driver import STATUS_CHANGED, STATUS_FAILED, FileResult


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _path(path: str) -> str:
    """The path as Actions resolves it: relative to the working directory (the checkout) when below it."""
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def annotation(kind: str, message: str, *, file: str = "", line: int = 0, end_line: int = 0, title: str = "") -> str:
    """One workflow command: ``::warning file=a.py,line=3,title=OM190::message``."""
    props = []
    if file:
        props.append(f"file={_escape_property(_path(file))}")
    if line > 0:
        props.append(f"line={line}")
        if end_line > line:
            props.append(f"endLine={end_line}")
    if title:
        props.append(f"title={_escape_property(title)}")
    return f"::{kind} {','.join(props)}::{_escape_data(message)}" if props else f"::{kind}::{_escape_data(message)}"


def github_annotations(results: Sequence[FileResult], *, on_disk_is_output: bool, mode: str,
                       dirty: Sequence[str] = ()) -> list[str]:
    """The annotations of a run. ``on_disk_is_output``: the changed files were written (their markers' lines are
    those on disk); otherwise lines are mapped back to the unwritten input."""
    from codemods.report import added_flags, line_maps

    out: list[str] = []
    for r in results:
        back = {} if on_disk_is_output else line_maps(r)[1]
        if r.status == STATUS_FAILED:
            out.append(annotation("error", r.error or "failed", file=r.path, title="osmosis-migrate failed"))
        if r.status == STATUS_CHANGED and mode in ("check", "diff"):
            codes = sorted({e.code for e in r.edits})
            first = min((e.line for e in r.edits if e.line > 0), default=0)
            first = back.get(first, first) if back else first
            added = sum(added_flags(r))
            parts = [f"{len(r.edits)} edit(s)" + (f" ({', '.join(codes)})" if codes else "")] if r.edits else []
            parts += [f"{added} TODO marker(s) added"] if added else []
            message = "would change: " + (", ".join(parts) or "formatting of its TODO markers")
            out.append(annotation("error", message, file=r.path, line=first, title="osmosis-migrate"))
        for m in r.markers:
            line = back.get(m.line, m.line) if back else m.line
            end = line + m.lines - 1 if not back else line
            out.append(annotation("warning", m.reason, file=r.path, line=line, end_line=end, title=m.code or "TODO"))
    for path in dirty:
        out.append(annotation("error", "not written: uncommitted changes (commit or stash them, or pass --allow-dirty)",
                              file=path, title="osmosis-migrate"))
    return out
