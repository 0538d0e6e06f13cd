"""Start the child process that runs one side of one file, and read what it wrote.

Each side runs in its own ``python -m codemods.verify.child`` (the interpreter running osmosis-migrate), in the
file's directory (its relative reads resolve as for the user), stdin closed, with a hard timeout above the child's
own per-case timers: a program cannot hang the verification, and what it patches or leaves running dies with it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Optional

from codemods.verify.model import RunOutcome

#: Seconds per case (the child's timer) and for the child to start (imports of the frameworks, servers).
CASE_TIMEOUT_S = 30.0
STARTUP_S = 90.0


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
    original: Optional[str] = None  # the original text (its environment reads decide the placeholders, both sides)
    target: str = "0.3"  # the osmosis-ai the migrated text targets: the protocol its workflow is driven over


class SideFailed(Exception):
    """The child produced no outcome: ``ours`` when the verifier itself failed (an error), else the program took the
    process down or overran its time (the file is not verifiable, for that reason)."""

    def __init__(self, reason: str, *, ours: bool) -> None:
        super().__init__(reason)
        self.ours = ours


class Zygote:
    """A warm ``python -m codemods.verify.child --zygote`` that forks a process per side (the runtime and the
    frameworks imported once instead of once per side). Thread-safe; a context manager; ``run`` falls back to a
    plain child process if the zygote is gone."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "codemods.verify.child", "--zygote"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_child_env(), cwd=tempfile.gettempdir())
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[threading.Event, list[int]]] = {}
        self._ids = itertools.count()
        self._reader = threading.Thread(target=self._read, name="osmosis-verify-zygote", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            message = json.loads(line)
            if "id" in message:
                with self._lock:
                    event, box = self._waiting.pop(message["id"])
                box.append(int(message["status"]))
                event.set()
        with self._lock:  # the zygote died: release every waiter (they fall back)
            for event, _ in self._waiting.values():
                event.set()
            self._waiting.clear()

    def run(self, spec_file: str, out_file: str, cwd: str, limit: float) -> Optional[int]:
        """Run one side; its exit status (-9: killed at ``limit``), or ``None`` if the zygote is gone."""
        event, box = threading.Event(), []
        with self._lock:
            if self._process.poll() is not None or not self._reader.is_alive():
                return None
            request_id = next(self._ids)
            self._waiting[request_id] = (event, box)
            try:
                assert self._process.stdin is not None
                self._process.stdin.write(json.dumps({"id": request_id, "spec": spec_file, "out": out_file,
                                                      "cwd": cwd, "limit": limit}) + "\n")
                self._process.stdin.flush()
            except OSError:
                self._waiting.pop(request_id, None)
                return None
        event.wait(limit + 30)
        return box[0] if box else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _child_env() -> dict[str, str]:
    env = dict(os.environ)  # codemods is importable where osmosis-migrate runs: no path of this checkout is added
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    return env


def run_side(spec: SideSpec, case_timeout: float = CASE_TIMEOUT_S, zygote: Optional[Zygote] = None) -> list[RunOutcome]:
    """The outcome of each case (run in a fork of ``zygote`` when given, else in a new child process); raises
    :class:`SideFailed` when the child produced none."""
    with tempfile.TemporaryDirectory(prefix="osmosis-migrate-verify-") as tmp:
        spec_file, out_file = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_file, "w", encoding="utf-8") as fh:
            json.dump({"mode": spec.mode, "path": os.path.abspath(spec.path), "text": spec.text, "entry": spec.entry,
                       "original": spec.original, "target": spec.target,
                       "workflow": spec.workflow, "timeout": case_timeout,
                       "cases": [{"prompt": p, "label": lbl} for p, lbl in spec.cases]}, fh)
        cwd = os.path.dirname(os.path.abspath(spec.path)) or "."
        limit = STARTUP_S + case_timeout * (len(spec.cases) + 1)
        status = zygote.run(spec_file, out_file, cwd, limit) if zygote is not None else None
        if status is None:
            status = _run_process(spec_file, out_file, cwd, limit)
        if status == -9:
            raise SideFailed(f"did not finish within {limit:g} s", ours=False)
        if not os.path.exists(out_file):
            raise SideFailed(f"its process exited with {status} before reporting", ours=False)
        with open(out_file, encoding="utf-8") as fh:
            result = json.load(fh)
    if "fatal" in result:
        raise SideFailed(result["fatal"], ours=True)
    return [RunOutcome.from_json(r) for r in result["records"]]


def _run_process(spec_file: str, out_file: str, cwd: str, limit: float) -> int:
    try:
        done = subprocess.run([sys.executable, "-m", "codemods.verify.child", spec_file, out_file], cwd=cwd,
                              env=_child_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        return -9
    return done.returncode
