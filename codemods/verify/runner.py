"""Start the child process that runs one side of one file, and read what it wrote.

Each side runs in its own ``python -m codemods.verify.child`` (the interpreter running osmosis-migrate), in the
file's directory (its relative reads resolve as for the user), stdin closed, with a hard timeout above the child's
own per-case timers: a program cannot hang the verification, and what it patches or leaves running dies with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from codemods.verify.model import RunOutcome

#: Seconds per case (the child's timer) and for the child to start (imports of the frameworks, servers).
CASE_TIMEOUT_S = 30.0
STARTUP_S = 90.0
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class SideSpec:
    """One side to run: ``mode`` (``script``/``call``/``workflow``/``legacy``), the user's ``path``, the program
    ``text``, the ``entry`` (``Entry.to_json()``), the ``workflow`` class, the ``cases``."""

    mode: str
    path: str
    text: str
    entry: Optional[dict[str, Any]]
    workflow: Optional[str]
    cases: tuple[tuple[str, str], ...]


class SideFailed(Exception):
    """The child produced no outcome: ``ours`` when the verifier itself failed (an error), else the program took the
    process down or overran its time (the file is not verifiable, for that reason)."""

    def __init__(self, reason: str, *, ours: bool) -> None:
        super().__init__(reason)
        self.ours = ours


def run_side(spec: SideSpec, case_timeout: float = CASE_TIMEOUT_S) -> list[RunOutcome]:
    """The outcome of each case; raises :class:`SideFailed` when the child produced none."""
    with tempfile.TemporaryDirectory(prefix="osmosis-migrate-verify-") as tmp:
        spec_file, out_file = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_file, "w", encoding="utf-8") as fh:
            json.dump({"mode": spec.mode, "path": os.path.abspath(spec.path), "text": spec.text, "entry": spec.entry,
                       "workflow": spec.workflow, "timeout": case_timeout,
                       "cases": [{"prompt": p, "label": lbl} for p, lbl in spec.cases]}, fh)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, env.get("PYTHONPATH")]))
        limit = STARTUP_S + case_timeout * (len(spec.cases) + 1)
        try:
            done = subprocess.run([sys.executable, "-m", "codemods.verify.child", spec_file, out_file],
                                  cwd=os.path.dirname(os.path.abspath(spec.path)) or ".", env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise SideFailed(f"did not finish within {limit:g} s", ours=False) from None
        if not os.path.exists(out_file):
            tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
            raise SideFailed(f"its process exited with {done.returncode}: {' | '.join(tail)}", ours=False)
        with open(out_file, encoding="utf-8") as fh:
            result = json.load(fh)
    if "fatal" in result:
        raise SideFailed(result["fatal"], ours=True)
    return [RunOutcome.from_json(r) for r in result["records"]]
