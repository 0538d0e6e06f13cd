"""Issue 10, legacy loops: the documented and common real-world loop styles are rewritten, and the rewrite earns
the rewards the original earned (original: legacy protocol + FakeTrainGate; rewrite: workflow protocol +
FakeWorkflowController; both answered by the deterministic ScriptedPolicy). Each wrong-output class the issue
names has a test that failed on the output before the fix (noted on each test).
"""

from __future__ import annotations

import ast
import sys

import pytest

from codemods.driver import migrate_source
from osmosis_compat.testing import FakeWorkflowController, serve_app
from tests.codemods._fixtures import FIXTURES, fixture_files
from tests.codemods.test_legacy_loop_behaviour import CASES, _legacy_rewards, _load, _messages, _workflow_rewards

DIR = FIXTURES / "legacy_loop"
# the shapes of issue 10 (item 2, legacy loops): each must be rewritten, not wrapped or left with a TODO
REWRITTEN = ["sdk_docs_calculator", "sdk_docs_no_reward", "sibling_module/agent", "helper_built_schemas",
             "get_tools_logic", "no_tools", "seed_complete_example"]


def _text(name: str) -> str:
    return (DIR / f"{name}.py").read_text()


def _imports(text: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("target", ["0.2", "0.3"])
@pytest.mark.parametrize("name", REWRITTEN)
def test_documented_shapes_are_rewritten_on_osmosis_ai_only(name, target):
    # before issue 10: every one of these was wrapped (OM302) or imported osmosis_compat / legacy-only modules
    result = migrate_source(_text(name), target=target)
    codes = {e.code for e in result.edits}
    assert "OM301" in codes and "OM302" not in codes, result.todos
    assert not [m for m in _imports(result.new_text) if m.startswith("osmosis_compat")]
    legacy_only = {"osmosis_ai.rollout.tools", "osmosis_ai.rollout.core", "osmosis_ai.rollout.core.schemas",
                   "osmosis_ai.rollout.utils"}
    assert not _imports(result.new_text) & legacy_only
    assert "RolloutAgentLoop" not in result.new_text and "create_app(" not in result.new_text
    if target == "0.3":
        assert "ctx.set_sample_reward" not in result.new_text and "ctx.samples" not in result.new_text
        assert "from osmosis_ai.rollout.server import create_rollout_server" in result.new_text


def test_every_fixture_output_is_free_of_osmosis_compat_unless_explicitly_wrapped():
    # before: auto wrapped every unrecognised loop (osmosis_compat.adapters) and every grader imported
    # osmosis_compat.workflow.messages
    for path in fixture_files("legacy_loop"):
        out = migrate_source(path.read_text()).new_text
        had = "osmosis_compat" in path.read_text()
        assert had or "osmosis_compat" not in out.replace("osmosis_compat.adapters.loop_as_workflow", ""), path.name


def test_explicit_wrap_says_it_keeps_the_loop_on_osmosis_compat():
    result = migrate_source(_text("sdk_docs_calculator"), strategy="wrap")
    assert [t.code for t in result.todos] == ["OM395"]
    assert "osmosis-compat" in result.todos[0].reason and "# TODO(osmosis-migrate OM395)" in result.new_text
    assert migrate_source(result.new_text, strategy="wrap").new_text == result.new_text


def test_wrap_never_crashes_at_import_when_init_needs_arguments(tmp_path):
    # before: `PromptedWorkflow, PromptedGrader = loop_as_workflow(PromptedLoop)` → TypeError at import
    for strategy in ("auto", "wrap"):
        result = migrate_source(_text("init_with_args"), strategy=strategy)
        assert "= loop_as_workflow(" not in result.new_text
        assert [t.code for t in result.todos] == ["OM390"]
        assert ("system_prompt" if strategy == "wrap" else "__init__") in result.todos[0].reason
        _load(result.new_text, tmp_path)  # imports


def test_a_loop_stopping_on_its_own_condition_is_not_rewritten():
    # a Strands agent stops only when the model answers without tool calls: a loop that stops on its own test
    # (here: the answer text) would run longer after the rewrite
    text = _text("sdk_docs_calculator").replace(
        "if not result.has_tool_calls:", 'if "FINAL" in (result.message.get("content") or ""):')
    result = migrate_source(text)
    assert "OM301" not in {e.code for e in result.edits}
    assert "stops on" in result.todos[0].reason


def test_different_rewards_per_exit_are_not_merged():
    text = _text("sdk_docs_calculator").replace(
        'finish_reason="max_turns", reward=self.score(messages, ctx.request.metadata)',
        'finish_reason="max_turns", reward=-1.0')
    result = migrate_source(text)
    assert "OM301" not in {e.code for e in result.edits} and "different rewards" in result.todos[0].reason


def test_no_reward_gives_a_workflow_without_grader_and_a_todo():
    result = migrate_source(_text("sdk_docs_no_reward"))
    assert "class AdderGrader" not in result.new_text and "grader=AdderGrader" not in result.new_text
    todo = next(t for t in result.todos if t.code == "OM394")
    assert "add one" in todo.reason and "sample.messages" in todo.reason


@pytest.fixture
def sibling_path():
    sys.path.insert(0, str(DIR / "sibling_module"))
    yield
    sys.path.remove(str(DIR / "sibling_module"))
    sys.modules.pop("calc_tools", None)


@pytest.mark.parametrize("name", ["sdk_docs_calculator", "helper_built_schemas", "get_tools_logic", "sibling_module/agent"])
async def test_rewritten_shapes_earn_the_same_rewards(tmp_path, name, request):
    if name.startswith("sibling"):
        request.getfixturevalue("sibling_path")
    text = _text(name)
    result = migrate_source(text)
    assert "OM301" in {e.code for e in result.edits}
    original = _load(text, tmp_path)
    migrated = _load(result.new_text, tmp_path)
    expected = await _legacy_rewards(original, CASES)
    assert expected == [1.0, 1.0, 0.0, 1.0]  # the cases exercise both outcomes
    assert await _workflow_rewards(migrated, CASES) == expected


async def test_rewritten_loop_without_tools_earns_the_same_rewards(tmp_path):
    text = _text("no_tools")
    original = _load(text, tmp_path)
    migrated = _load(migrate_source(text).new_text, tmp_path)
    cases = [("What is 2 + 3?", "5"), ("What is 2 + 3?", "6"), ("Say hi", "OK")]
    expected = await _legacy_rewards(original, cases)
    assert expected == [1.0, 0.0, 1.0]
    assert await _workflow_rewards(migrated, cases) == expected


async def test_rewritten_loop_without_reward_makes_the_same_model_calls(tmp_path):
    migrated = _load(migrate_source(_text("sdk_docs_no_reward")).new_text, tmp_path)
    with FakeWorkflowController().serve() as controller, serve_app(migrated.app) as server:
        record = await controller.run_rollout(
            server.url, rollout_id="r", initial_messages=_messages("What is 2 + 3?"), label="5")
    assert len(record.chat_requests) == 2  # the tool call, then the answer
    assert record.completion is not None and record.completion["status"] == "success"
