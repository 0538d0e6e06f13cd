"""Helpers for the integration tests: load an example entrypoint by path and serve it, dataset rows → requests."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from osmosis_compat.testing import serve_app

ROOT = Path(__file__).resolve().parents[3]
MODERN = ROOT / "examples" / "modern"
DATASET = MODERN / "data" / "calculator.jsonl"


def load_module(path: Path, name: str) -> ModuleType:
    """Import ``path`` as module ``name`` (once per test session)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve_entrypoint(module: ModuleType, artifact_root: Path) -> Iterator[Any]:
    """Serve the entrypoint's own ``app`` (its ``backend`` writing artifacts under ``artifact_root``)."""
    module.backend.artifact_root = artifact_root
    with serve_app(module.app) as server:
        yield server


def dataset_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]


def row_messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    """``initial_messages`` as the platform builds them from a dataset row (spec workflow-api §2.13)."""
    return [{"role": "system", "content": row["system_prompt"]}, {"role": "user", "content": row["user_prompt"]}]
