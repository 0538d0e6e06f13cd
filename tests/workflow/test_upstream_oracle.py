"""Upstream's public behaviour, with the real osmosis-ai 0.2.31 as the oracle (issue 12, item 5).

``upstream_probe.py`` makes the same public calls — ``resolve_object``, ``to_import_path`` (also of the classes the
shim serves), ``validate_backend``, ``copy_artifact_tree``, ``post_json_with_retry`` — in the side venv and in
ours, and the outcomes must be equal: values, exception types and messages. Deliberate differences are listed in
``DELIBERATE`` with the reason (and in docs/workflow-api.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.upstream.venvs import require_upstream, upstream_env

PROBE = Path(__file__).with_name("upstream_probe.py")

#: case -> why osmosis-compat answers differently on purpose.
DELIBERATE: dict[str, str] = {}


def _probe(python: str, env: dict[str, str] | None) -> dict:
    result = subprocess.run([python, str(PROBE)], capture_output=True, text=True, timeout=300, env=env,
                            cwd=PROBE.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def outcomes() -> tuple[dict, dict]:
    upstream_python = require_upstream("0.2.31")
    theirs = _probe(str(upstream_python), upstream_env("0.2.31"))
    ours = _probe(sys.executable, None)
    return theirs, ours


@pytest.mark.upstream
def test_probe_covers_the_same_cases(outcomes: tuple[dict, dict]) -> None:
    theirs, ours = outcomes
    assert sorted(theirs) == sorted(ours)
    assert len(theirs) > 60


@pytest.mark.upstream
@pytest.mark.parametrize("prefix", ["resolve_object", "to_import_path", "validate_backend", "copy_artifact_tree",
                                    "artifact_tree_state", "post_json_with_retry"])
def test_same_outcomes_as_upstream(outcomes: tuple[dict, dict], prefix: str) -> None:
    theirs, ours = outcomes
    differences = {
        case: {"upstream": theirs[case], "osmosis-compat": ours.get(case)}
        for case in sorted(theirs)
        if case.startswith(prefix) and case not in DELIBERATE and theirs[case] != ours.get(case)
    }
    assert not differences, json.dumps(differences, indent=1)
