"""The in-repo real-code corpus (``tests/codemods/corpus/``, see its README and NOTICE) migrated the way its own
``measure.py`` does it: a copy of the corpus, ``osmosis-migrate`` run on it in place and again with ``--check``, and
measure's per-file records (status, parses, fixed point, TODO codes, targets used, ``osmosis_compat`` imports,
"refused but edited", workflows…). The corpus tests and the real-osmosis-ai proof (``corpus_upstream.py``) read those
records instead of re-implementing the probes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

CORPUS = Path(__file__).parent / "corpus"
KINDS = ("strands", "openai", "legacy")


@functools.lru_cache(maxsize=1)
def measure() -> ModuleType:
    """The corpus's own ``measure.py`` (the in-repo copy), imported as a module: its probes are reused as they are."""
    spec = importlib.util.spec_from_file_location("corpus_measure", CORPUS / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_files() -> list[str]:
    """Every program of the corpus as ``<kind>/<file>.py`` (the keys of measure's records), sorted as measure does."""
    return [f"{k}/{p.name}" for k in KINDS for p in sorted((CORPUS / k).glob("*.py"))]


def migrate_tool(work: Path, target: Optional[str] = None) -> str:
    """The ``osmosis-migrate`` of this interpreter's environment; with ``target``, a wrapper script in ``work`` that
    passes ``--target`` (measure.py runs the tool with its own arguments only)."""
    tool = Path(sys.executable).with_name("osmosis-migrate")
    path = str(tool) if tool.exists() else shutil.which("osmosis-migrate")
    if path is None:
        raise FileNotFoundError("osmosis-migrate is not installed in this environment (pip install -e .)")
    if target is None:
        return path
    wrapper = work / f"osmosis-migrate-{target}"
    wrapper.write_text(f'#!/bin/sh\nexec "{path}" --target {target} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


@dataclass(frozen=True)
class CorpusRun:
    """One measured migration of the corpus: the migrated tree (a git repository whose HEAD is the original
    corpus), measure's per-file records keyed ``<kind>/<file>.py``, the target the tool used, measure's table."""

    tree: Path
    records: dict[str, dict[str, Any]]
    target: str
    table: str

    def fully_migrated(self, kind: str) -> int:
        """measure's "fully migrated" count of one kind."""
        return sum(r["category"] == "fully-migrated" for r in self.records.values() if r["kind"] == kind)


def measure_corpus(work: Path, target: Optional[str] = None) -> CorpusRun:
    """Run measure.py on the in-repo corpus (``target``: the tool's ``--target``; ``None`` = the tool's default)
    into ``work`` (which must not hold a ``corpus/`` yet)."""
    work.mkdir(parents=True, exist_ok=True)
    keep, report = work / "corpus", work / "corpus.json"
    out = work / "measure.txt"
    with open(out, "w") as fh, contextlib.redirect_stdout(fh):
        code = measure().main(["--tool", migrate_tool(work, target), "--keep", str(keep), "--json", str(report)])
    assert code == 0, out.read_text()[-3000:]
    data = json.loads(report.read_text())
    tool_report = json.loads((keep / "report-write.json").read_text())
    return CorpusRun(
        tree=keep / "tree",
        records={r["file"]: r for r in data["files"]},
        target=tool_report["target"]["version"],
        table=out.read_text(),
    )


def original(rel: str) -> bytes:
    """A corpus file as its authors wrote it."""
    return (CORPUS / rel).read_bytes()


def with_xfails(names: list[str], xfail: dict[str, str]) -> list[Any]:
    """pytest params, one per name; a name in ``xfail`` is a strict xfail whose reason is its cause (a fix makes it
    XPASS, which fails the run: delete the entry then). Raises if the table names something that is not there."""
    import pytest

    unknown = sorted(set(xfail) - set(names))
    if unknown:
        raise ValueError(f"xfail table names files that do not exist: {unknown}")
    return [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=xfail[n])] if n in xfail else [], id=n)
            for n in names]
