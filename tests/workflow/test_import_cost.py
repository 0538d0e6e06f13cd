"""Import cost of the workflow surface: no framework, server or HTTP stack until used (target ≤ 1 s)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("strands", "agents", "litellm", "fastapi", "openai", "uvicorn", "httpx")

PROBE = """
import json, sys, time
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
print(json.dumps({{"elapsed": elapsed, "loaded": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def probe(statement: str) -> dict:
    code = PROBE.format(statement=statement, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "statement",
    [
        "import osmosis_compat.workflow",
        "from osmosis_compat.workflow import AgentWorkflow, AgentWorkflowConfig, Grader, GraderContext, "
        "LocalBackend, RolloutContext, RolloutSample, SampleSource, get_rollout_context, last_assistant_text",
        "from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, AgentWorkflowContext, Grader, "
        "GraderContext, LocalBackend",
        "from osmosis_ai.rollout.context import RolloutContext, SampleSource, get_rollout_context",
        "from osmosis_ai.rollout.types import RolloutSample, RolloutInitRequest",
    ],
)
def test_workflow_surface_imports_nothing_heavy(statement: str) -> None:
    result = probe(statement)
    assert result["loaded"] == []
    assert result["elapsed"] < 1.0


def test_server_names_load_fastapi_only_when_used() -> None:
    result = probe("import osmosis_compat.workflow as w; w.create_rollout_server")
    assert "fastapi" in result["loaded"]
    assert not {"strands", "agents", "litellm"} & set(result["loaded"])
