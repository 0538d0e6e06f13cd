"""Entrypoint discovery (spec workflow-api §2.12) and validate_backend (§2.11)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    Grader,
    GraderConfig,
    resolved_agent_name,
    validate_backend,
)
from osmosis_compat.workflow.discovery import DiscoveryError, discover, discover_entrypoint
from tests.workflow.workflows import EchoWorkflow, LabelGrader, echo_config, grader_config

HEADER = """
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, AgentWorkflowContext, Grader, GraderConfig, GraderContext
"""


def write(tmp_path: Path, body: str, name: str = "main.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def test_discovers_workflow_config_and_grader(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class MyConfig(AgentWorkflowConfig):
            name: str = "mine"

        class W(AgentWorkflow[MyConfig]):
            async def run(self, ctx):
                return None

        Alias = W

        class G(Grader):
            async def grade(self, ctx):
                return None

        config = MyConfig()
        grader_config = GraderConfig(name="g")

        if __name__ == "__main__":
            raise SystemExit("must not run")
        """,
    )
    found = discover_entrypoint(path)
    assert found["workflow"].__name__ == "W"
    assert found["workflow_name"] == "Alias"  # lexicographically smallest binding
    assert found["workflow_config"].name == "mine"
    assert found["grader"].__name__ == "G"
    assert found["grader_config"].name == "g"
    assert found["module"].__name__.startswith("_osmosis_rollout_")
    assert validate_backend(found["workflow"], found["workflow_config"], found["grader"], found["grader_config"]).valid


def test_no_workflow(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="No AgentWorkflow subclass found"):
        discover_entrypoint(write(tmp_path, "x = 1\n"))


def test_abstract_helper_counts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class Base(AgentWorkflow):
            pass

        class W(Base):
            async def run(self, ctx):
                return None

        Alias = W
        """,
    )
    with pytest.raises(DiscoveryError, match="Multiple AgentWorkflow subclasses found .*: Alias, Base, W"):
        discover_entrypoint(path)


def test_two_configs_and_explicit_grader() -> None:
    namespace: dict[str, Any] = {"W": EchoWorkflow, "a": echo_config, "b": AgentWorkflowConfig(name="b")}
    with pytest.raises(DiscoveryError, match="Multiple AgentWorkflowConfig instances"):
        discover(namespace)
    found = discover(
        {"W": EchoWorkflow, "cfg": echo_config},
        grader="tests.workflow.workflows:LabelGrader",
        grader_config="tests.workflow.workflows:grader_config",
    )
    assert (found["grader"], found["grader_config"]) == (LabelGrader, grader_config)
    with pytest.raises(DiscoveryError, match="not a concrete Grader subclass"):
        discover({"W": EchoWorkflow}, grader=Grader)
    with pytest.raises(DiscoveryError, match="not a GraderConfig"):
        discover({"W": EchoWorkflow}, grader_config=echo_config)  # type: ignore[arg-type]
    assert discover({"W": EchoWorkflow})["grader"] is None


def test_validate_backend_error_codes() -> None:
    class SyncRun(AgentWorkflow[Any]):
        def run(self, ctx: Any) -> None:  # type: ignore[override]
            return None

    class Exploding(AgentWorkflow[Any]):
        def __init__(self, config: Any = None) -> None:
            raise RuntimeError("no")

        async def run(self, ctx: Any) -> None:
            return None

    class SyncGrade(Grader):
        def grade(self, ctx: Any) -> None:  # type: ignore[override]
            return None

    def codes(*args: Any, **kwargs: Any) -> list[str]:
        return [e.code for e in validate_backend(*args, **kwargs).errors]

    assert codes(EchoWorkflow, echo_config, LabelGrader, grader_config) == []
    assert codes(int, None, require_grader=False) == ["INVALID_WORKFLOW_CLASS"]
    assert codes(AgentWorkflow, None, require_grader=False) == ["INVALID_WORKFLOW_CLASS"]
    assert codes(SyncRun, None, require_grader=False) == ["WORKFLOW_RUN_NOT_ASYNC"]
    assert codes(Exploding, None, require_grader=False) == ["WORKFLOW_INIT_FAILED"]
    assert codes(EchoWorkflow, AgentWorkflowConfig(name="x" * 300), require_grader=False) == ["INVALID_AGENT_NAME"]
    # Upstream's verdict on a missing grader (its preflight required one); the CLI passes require_grader=False.
    assert codes(EchoWorkflow, None) == ["MISSING_GRADER"]
    assert codes(EchoWorkflow, None, require_grader=False) == []
    assert codes(EchoWorkflow, None, str) == ["INVALID_GRADER_CLASS"]
    assert codes(EchoWorkflow, None, SyncGrade) == ["GRADER_GRADE_NOT_ASYNC"]
    result = validate_backend(SyncRun, None, SyncGrade)
    assert not result and [e.code for e in result.errors] == ["WORKFLOW_RUN_NOT_ASYNC", "GRADER_GRADE_NOT_ASYNC"]


def test_resolved_agent_name() -> None:
    assert resolved_agent_name(EchoWorkflow, None) == "EchoWorkflow"
    assert resolved_agent_name(EchoWorkflow, AgentWorkflowConfig(name="  spaced  ")) == "spaced"
    assert resolved_agent_name(EchoWorkflow, AgentWorkflowConfig(name="  ")) == "EchoWorkflow"
