"""Before/after fixtures per rule: the migrated text, the edits and the TODOs are syrupy snapshots.

To review a change: `pytest tests/codemods/test_rules.py --snapshot-update` and read the diff of
`__snapshots__/test_rules.ambr` (each snapshot is the migrated file followed by the edit/TODO list).
"""

from __future__ import annotations

import pytest

from codemods.driver import migrate_source
from tests.codemods._fixtures import fixture_files, fixture_id

CASES = [p for d in ("strands_agent", "openai_agent", "strands_agent_tree", "openai_agent_tree", "imports")
         for p in fixture_files(d)]


def render(path, target: str) -> str:
    result = migrate_source(path.read_text(), filename=path.name, target=target)
    lines = [result.new_text, "---- edits"]
    lines += [f"{e.code} L{e.line}: {e.message}" for e in result.edits]
    lines.append("---- todos")
    lines += [f"{t.code} L{t.line}: {t.reason}" for t in result.todos]
    return "\n".join(lines)


@pytest.mark.parametrize("target", ["0.3", "0.2"])  # today's osmosis-ai (the default), and the 0.2 workflow API
@pytest.mark.parametrize("path", CASES, ids=[fixture_id(p) for p in CASES])
def test_fixture_snapshot(path, target, snapshot):
    assert render(path, target) == snapshot


@pytest.mark.parametrize(
    "name",
    ["strands_agent/already_migrated", "openai_agent/already_migrated", "imports/nothing_to_do"],
)
def test_already_migrated_code_is_left_alone(name):
    # code already migrated for the 0.2 workflow API; with target 0.3 the workflow-0.3 rule moves it (OM5xx)
    path = next(p for p in CASES if fixture_id(p) == name)
    result = migrate_source(path.read_text(), target="0.2")
    assert not result.changed and result.edits == [] and result.todos == []


def test_strands_simple_shape():
    text = next(p for p in CASES if fixture_id(p) == "strands_agent/simple").read_text()
    out = migrate_source(text).new_text
    assert "class SolveWorkflow(AgentWorkflow):" in out
    assert "async def run(self, ctx: AgentWorkflowContext) -> None:" in out
    assert "messages=ctx.prompt" in out and "await agent.invoke_async()" in out
    assert 'OsmosisRolloutModel(params={"temperature": 0.2, "max_tokens": 512})' in out
    assert "model_id" not in out and "from strands import Agent" not in out and "LiteLLMModel" not in out
    assert "# the agent everyone talks to" in out  # comments of moved code are kept


def test_openai_sessions_are_distinct_per_run():
    # 0.2: one named session per sample
    text = next(p for p in CASES if fixture_id(p) == "openai_agent/aliased").read_text()
    out = migrate_source(text, target="0.2").new_text
    assert 'OsmosisMemorySession(name="agent")' in out and 'OsmosisMemorySession(name="agent_2")' in out
    # only the program's input becomes the prompt: the second run still reads the first one's output
    assert out.count("ctx.prompt") == 1 and "ag.Runner.run(agent, first.final_output" in out
    assert "model=OsmosisRolloutModel()" in out


def test_select_one_rule_only():
    text = next(p for p in CASES if fixture_id(p) == "openai_agent/handoffs").read_text()
    assert not migrate_source(text, rules=["strands-agent"]).changed
    assert migrate_source(text, rules=["OM2"]).changed


def test_strategy_is_validated():
    from codemods.driver import UsageError

    with pytest.raises(UsageError):
        migrate_source("import strands\n", strategy="bogus")


def test_skip_file_marker():
    text = "# osmosis-migrate: skip-file\nfrom strands import Agent\n\ndef f(q):\n    a = Agent()\n    return a(q)\n"
    assert migrate_source(text).new_text == text


def test_todo_markers_are_comments_not_code():
    text = next(p for p in CASES if fixture_id(p) == "strands_agent/unmigratable").read_text()
    out = migrate_source(text).new_text
    added = [l for l in out.splitlines() if "osmosis-migrate" in l]
    assert added and all(l.strip().startswith("# TODO(osmosis-migrate OM1") for l in added)
    assert "raise" not in out
