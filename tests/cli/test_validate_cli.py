"""`osmosis-compat validate -m …`: legacy loops and workflow entrypoints, with readable errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from osmosis_compat.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

BROKEN_LOOP = """
from osmosis_ai.rollout import RolloutAgentLoop

class Broken(RolloutAgentLoop):
    name = "broken"

    def get_tools(self, request):
        raise RuntimeError("no tools today")

    async def run(self, ctx):
        return ctx.complete([])

agent_loop = Broken()
not_an_agent = 42

class NotALoop:
    pass
"""

TWO_WORKFLOWS = """
from osmosis_ai.rollout import AgentWorkflow

class A(AgentWorkflow):
    async def run(self, ctx):
        return None

class B(AgentWorkflow):
    async def run(self, ctx):
        return None
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "broken_agent.py").write_text(textwrap.dedent(BROKEN_LOOP))
    (tmp_path / "two_workflows.py").write_text(textwrap.dedent(TWO_WORKFLOWS))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_valid_legacy_loop(capsys):
    assert main(["validate", "-m", str(ROOT / "examples/legacy/calculator_agent.py") + ":agent_loop"]) == 0
    out = capsys.readouterr().out
    assert "Agent loop 'calculator' validated successfully." in out and "Tools: 4" in out


def test_valid_workflow_entrypoint(capsys):
    assert main(["validate", "-m", str(ROOT / "examples/modern/strands_calculator.py")]) == 0
    assert "validated successfully" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("broken_agent:", "Invalid module path 'broken_agent:'. Expected format: 'module.path:attribute_name'"),
        ("no_such_module:agent_loop", "Cannot import module 'no_such_module'"),
        ("broken_agent:missing", "has no attribute 'missing'. Available attributes: ["),
        ("broken_agent:not_an_agent", "neither a RolloutAgentLoop nor a workflow"),
        ("broken_agent:NotALoop", "neither a RolloutAgentLoop nor a workflow"),
        ("two_workflows.py", "Multiple AgentWorkflow subclasses"),
    ],
)
def test_load_errors_are_readable(project, capsys, target, message):
    assert main(["validate", "-m", target]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and message in err


def test_invalid_agent_loop_reports_the_validator_codes(project, capsys):
    assert main(["validate", "-m", "broken_agent:agent_loop"]) == 1
    err = capsys.readouterr().err
    assert "Agent loop validation failed with" in err and "[GET_TOOLS_EXCEPTION]" in err
