"""Issues 10 and 18, legacy loops: the documented and the real-world loop styles are rewritten for both targets on
osmosis-ai only, and each wrong-output class the issues name has a test (noted on each).
"""

from __future__ import annotations

import ast

import pytest

from codemods.driver import migrate_source
from tests.codemods._fixtures import FIXTURES, fixture_files
from tests.codemods.test_legacy_loop_behaviour import _load

DIR = FIXTURES / "legacy_loop"
CORPUS = DIR / "corpus"
# shapes of issues 10 and 18: each must be rewritten, not wrapped or left with a TODO
REWRITTEN = ["sdk_docs_calculator", "sdk_docs_no_reward", "sibling_module/agent", "helper_built_schemas",
             "get_tools_logic", "no_tools", "seed_complete_example", "unrecognisable", "init_with_args",
             "docs_testing_calculator", "docs_legacy_api_calculator",
             *(f"corpus/{p.stem}" for p in sorted(CORPUS.glob("o*.py")) if "test_registry" not in p.name)]
LEGACY_ONLY = {"osmosis_ai.rollout.tools", "osmosis_ai.rollout.core", "osmosis_ai.rollout.core.schemas",
               "osmosis_ai.rollout.core.base", "osmosis_ai.rollout.utils", "osmosis_ai.rollout.core.exceptions"}


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
def test_real_and_documented_shapes_are_rewritten_on_osmosis_ai_only(name, target):
    # before issue 18: 0 of the 14 corpus loops and none of the repo's docs loops were rewritten
    result = migrate_source(_text(name), target=target)
    codes = {e.code for e in result.edits}
    assert "OM301" in codes and "OM302" not in codes, result.todos
    assert not [m for m in _imports(result.new_text) if m.startswith("osmosis_compat")] or "osmosis_compat" in _text(name)
    assert not _imports(result.new_text) & LEGACY_ONLY
    if "mock_agents" not in name:  # that file keeps its refused MockAgentLoop (OM390)
        names = {n.id for n in ast.walk(ast.parse(result.new_text)) if isinstance(n, ast.Name)}
        assert not names & {"RolloutAgentLoop", "RolloutContext", "RolloutRequest", "RolloutResult", "create_app"}
        assert "create_app(" not in result.new_text.replace("create_app() arguments", "")  # (an OM391 TODO text)
    if target == "0.3":
        assert "ctx.set_sample_reward" not in result.new_text and "ctx.samples" not in result.new_text
        assert "x-rollout-id" not in result.new_text  # 0.3 routes by URL
    else:
        assert "ctx.set_sample_reward" in result.new_text and "register_sample_source" in result.new_text


def test_every_fixture_output_is_free_of_osmosis_compat_unless_explicitly_wrapped():
    # before issue 10: auto wrapped every unrecognised loop (osmosis_compat.adapters)
    for path in fixture_files("legacy_loop"):
        out = migrate_source(path.read_text(), target="0.3").new_text
        had = "osmosis_compat" in path.read_text()
        assert had or "osmosis_compat" not in out.replace("osmosis_compat.adapters.loop_as_workflow", ""), path.name


def test_explicit_wrap_says_it_keeps_the_loop_on_osmosis_compat():
    result = migrate_source(_text("sdk_docs_calculator"), strategy="wrap")
    assert [t.code for t in result.todos] == ["OM395"]
    assert "osmosis-compat" in result.todos[0].reason and "# TODO(osmosis-migrate OM395)" in result.new_text
    assert migrate_source(result.new_text, strategy="wrap").new_text == result.new_text


def test_wrap_never_crashes_at_import_when_init_needs_arguments(tmp_path):
    # issue 10: `PromptedWorkflow, PromptedGrader = loop_as_workflow(PromptedLoop)` was a TypeError at import
    result = migrate_source(_text("init_with_args"), strategy="wrap")
    assert "= loop_as_workflow(" not in result.new_text
    assert [t.code for t in result.todos] == ["OM390"] and "system_prompt" in result.todos[0].reason
    _load(result.new_text, tmp_path)
    # the rewrite binds the argument where the module builds the loop (a per-rollout instance, built as cls(config))
    result = migrate_source(_text("init_with_args"), target="0.3")
    module = _load(result.new_text, tmp_path)
    workflow = module._bound_workflow(module.PromptedLoop, "Be brief.")
    assert workflow(None).system_prompt == "Be brief." and workflow(None) is not workflow(None)


def test_a_loop_stopping_on_its_own_condition_is_rewritten_with_that_condition():
    # issue 10 refused it (a Strands agent stops only on an answer without tool calls); issue 18: the loop's own
    # control flow is kept, so its own stop is kept too
    text = _text("sdk_docs_calculator").replace(
        "if not result.has_tool_calls:", 'if "FINAL" in (result.message.get("content") or ""):')
    result = migrate_source(text, target="0.3")
    assert "OM301" in {e.code for e in result.edits}
    assert 'if "FINAL" in (result.message.get("content") or ""):' in result.new_text


def test_different_rewards_per_exit_are_each_kept():
    # issue 10: merged into one grader reward or refused; now run() hands each exit's reward to the grader
    text = _text("sdk_docs_calculator").replace(
        'finish_reason="max_turns", reward=self.score(messages, ctx.request.metadata)',
        'finish_reason="max_turns", reward=-1.0')
    result = migrate_source(text, target="0.3")
    assert "OM390" in {t.code for t in result.todos}  # its other exit's reward reads the label with run() state
    text = _text("unrecognisable")
    result = migrate_source(text, target="0.3")
    assert "return _sample(messages, reward=0.0)" in result.new_text
    assert 'ctx.set_reward(ctx.sample.metrics.get("reward"))' in result.new_text


def test_no_reward_gives_a_grader_with_the_documented_starting_rule():
    # issue 18: a rollout without a grader fails grading on 0.3.8
    result = migrate_source(_text("sdk_docs_no_reward"), target="0.3")
    assert "class AdderGrader(Grader):" in result.new_text and "grader=AdderGrader" in result.new_text
    todo = next(t for t in result.todos if t.code == "OM394")
    assert "starting point" in todo.reason and "ctx.label" in todo.reason
