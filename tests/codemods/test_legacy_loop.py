"""``legacy-loop`` (OM3xx): before/after fixtures as syrupy snapshots, plus the decisions that matter.

Review a change with `pytest tests/codemods/test_legacy_loop.py --snapshot-update` and read the diff of
`__snapshots__/test_legacy_loop.ambr` (the migrated file, then its edits and TODOs).
Every fixture's output parsing and being a fixed point is also checked by test_properties.py (all fixtures).
"""

from __future__ import annotations

import ast
import importlib.util
import sys

import pytest

from codemods.driver import migrate_source
from codemods.markers import find_markers
from tests.codemods._fixtures import FIXTURES, fixture_files, fixture_id

DIR = FIXTURES / "legacy_loop"
CASES = [(p, "auto") for p in fixture_files("legacy_loop")] + [
    (DIR / "unrecognisable.py", "rewrite"),
    (DIR / "seed_complete_example.py", "wrap"),
]


def _text(name: str) -> str:
    return (DIR / f"{name}.py").read_text()


def render(path, strategy: str) -> str:
    result = migrate_source(path.read_text(), filename=path.name, strategy=strategy, rules=["legacy-loop", "imports"])
    lines = [result.new_text, "---- edits"]
    lines += [f"{e.code} L{e.line}: {e.message}" for e in result.edits]
    lines.append("---- todos")
    lines += [f"{t.code} L{t.line}: {t.reason}" for t in result.todos]
    return "\n".join(lines)


@pytest.mark.parametrize(("path", "strategy"), CASES, ids=[f"{fixture_id(p)}[{s}]" for p, s in CASES])
def test_fixture_snapshot(path, strategy, snapshot):
    assert render(path, strategy) == snapshot


@pytest.mark.parametrize(("path", "strategy"), CASES, ids=[f"{fixture_id(p)}[{s}]" for p, s in CASES])
def test_output_parses_and_is_a_fixed_point_with_every_rule(path, strategy):
    first = migrate_source(path.read_text(), strategy=strategy)
    ast.parse(first.new_text)
    second = migrate_source(first.new_text, strategy=strategy)
    assert second.new_text == first.new_text and second.edits == []


def _codes(name: str, strategy: str = "auto") -> tuple[set[str], set[str]]:
    result = migrate_source(_text(name), strategy=strategy)
    return {e.code for e in result.edits}, {t.code for t in result.todos}


@pytest.mark.parametrize(
    "name", ["seed_complete_example", "if_elif_dispatcher", "pydantic_schemas", "sync_tools", "helper_methods",
             "built_in_function", "calculator_variants"]
)
def test_recognised_tool_loops_are_rewritten(name):
    edits, _ = _codes(name)
    assert {"OM301", "OM303", "OM305"} <= edits and "OM302" not in edits
    out = migrate_source(_text(name)).new_text
    assert "RolloutAgentLoop)" not in out and "= create_app(" not in out and "loop_as_workflow" not in out
    assert "OsmosisStrandsAgent(" in out and "ctx.set_sample_reward(sample_id, reward)" in out


def test_unrecognisable_loop_is_left_with_a_todo_not_wrapped_unasked():
    # issue 10 item 3: only an explicit --strategy wrap keeps a loop on osmosis-compat
    before = _text("unrecognisable")
    result = migrate_source(before)
    assert [t.code for t in result.todos] == ["OM390"] and "__init__" in result.todos[0].reason
    assert "--strategy wrap" in result.todos[0].reason and "osmosis-compat" in result.todos[0].reason
    assert "osmosis_compat" not in result.new_text and "create_app(" in result.new_text


def test_explicit_wrap_wraps_the_unrecognisable_loop_unchanged():
    before = _text("unrecognisable")
    result = migrate_source(before, strategy="wrap")
    assert {e.code for e in result.edits} >= {"OM302", "OM303"} and "OM395" in {t.code for t in result.todos}
    cls = before[before.index("class JudgeLoop"): before.index("agent_loop = JudgeLoop()")]
    assert cls in result.new_text  # the class itself is untouched
    assert "JudgeWorkflow, JudgeGrader = loop_as_workflow(JudgeLoop)" in result.new_text
    assert "from osmosis_compat.adapters import loop_as_workflow" in result.new_text
    assert "app = create_rollout_server(backend=backend)" in result.new_text


def test_strategy_rewrite_on_unrecognisable_loop_leaves_it_with_a_todo():
    before = _text("unrecognisable")
    result = migrate_source(before, strategy="rewrite")
    assert [t.code for t in result.todos] == ["OM390"] and "__init__" in result.todos[0].reason
    [marker] = find_markers(result.new_text)
    assert marker.reason == " ".join(result.todos[0].reason.split())
    lines = result.new_text.splitlines(keepends=True)
    assert "".join(lines[:marker.line - 1] + lines[marker.line - 1 + marker.lines:]) == before
    # only the marker (its wrapped lines): serving lines stay with the class they serve
    again = migrate_source(result.new_text, strategy="rewrite")
    assert again.new_text == result.new_text and again.new_text.count("OM390") == 1


def test_strategy_wrap_wraps_even_the_recognisable_loop():
    edits, _ = _codes("seed_complete_example", "wrap")
    assert "OM302" in edits and "OM301" not in edits


def test_several_loops_each_migrated_and_one_workflow_per_module_todo():
    result = migrate_source(_text("several_loops"), strategy="wrap")
    assert "PlainChatWorkflow, PlainChatGrader = loop_as_workflow(PlainChatLoop)" in result.new_text
    assert result.new_text.count("create_rollout_server(backend=") == 2 and "OM392" in {t.code for t in result.todos}
    result = migrate_source(_text("several_loops"))
    out = result.new_text
    assert "class EchoWorkflow(AgentWorkflow[EchoConfig])" in out
    assert out.count("create_rollout_server(backend=") == 1  # the other loop keeps create_app, with its TODO
    assert {"OM390"} <= {t.code for t in result.todos}


def test_loop_built_in_a_function_serves_from_the_function():
    out = migrate_source(_text("built_in_function")).new_text
    body = out[out.index("def build_app"):]
    assert "backend = LocalBackend(" in body and "return create_rollout_server(backend=backend)" in body
    assert "ShoutConfig(concurrency=ConcurrencyConfig(max_concurrent=max_concurrent))" in body
    assert "# one server per process" in body


def test_create_app_arguments_without_equivalent_get_a_todo():
    result = migrate_source(_text("if_elif_dispatcher"))
    todo = next(t for t in result.todos if t.code == "OM391")
    assert 'debug_dir="./logs"' in todo.reason and "record_ttl_seconds=60.0" in todo.reason
    assert "ConcurrencyConfig(max_concurrent=8)" in result.new_text


def test_wrap_uses_the_module_instance_when_it_is_built_with_arguments_or_shared():
    result = migrate_source(_text("wrap_instance_with_args"), strategy="wrap")
    out = result.new_text
    assert "agent_loop = ThresholdLoop(0.3)\n# TODO(osmosis-migrate OM395)" in out
    assert "\nThresholdWorkflow, ThresholdGrader = loop_as_workflow(agent_loop)\n" in out
    assert "register_agent_loop(agent_loop)" in out and "max_concurrent=12" in out
    assert "loop_as_workflow(ThresholdLoop)" not in out


def test_opt_out_and_nested_class():
    assert not migrate_source(_text("opt_out")).changed
    result = migrate_source(_text("nested_in_function"))
    assert [t.code for t in result.todos] == ["OM392"]
    assert result.new_text.count("# TODO(osmosis-migrate OM392)") == 1 and "create_app(Fixed())" in result.new_text


@pytest.mark.parametrize("name", ["already_migrated", "already_wrapped"])
def test_already_migrated_code_is_left_alone(name):
    result = migrate_source(_text(name))
    assert not result.changed and result.edits == [] and result.todos == []


def test_todo_markers_are_comments_only():
    for name, strategy in [("unrecognisable", "rewrite"), ("nested_in_function", "auto")]:
        before = _text(name)
        result = migrate_source(before, strategy=strategy)
        assert result.todos and result.new_text != before
        assert ast.dump(ast.parse(result.new_text)) == ast.dump(ast.parse(before))  # same code, a comment more


def _load(text: str, tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_pydantic_and_dict_schemas_become_exactly_the_strands_tool_specs(tmp_path):
    # the original's schemas as the legacy server declared them (pydantic dumped without None fields)
    for name, fns in [("pydantic_schemas", ["search", "now"]), ("if_elif_dispatcher", ["web_search", "lookup_word"])]:
        original = _load(_text(name), tmp_path, f"_orig_{name}")
        migrated = _load(migrate_source(_text(name)).new_text, tmp_path, f"_migr_{name}")
        declared = [t if isinstance(t, dict) else t.model_dump(exclude_none=True) for t in original.TOOLS]
        for tool, fn in zip(declared, fns):
            spec = getattr(migrated, fn).tool_spec
            assert spec["name"] == tool["function"]["name"]
            assert spec["description"] == tool["function"]["description"]
            assert spec["inputSchema"] == {"json": tool["function"]["parameters"]}


SEED_LOOP = '''            if not result.has_tool_calls:
                finish_reason'''


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (SEED_LOOP, '''            if not result.has_tool_calls:
                messages.append({"role": "user", "content": "Check your answer."})
                finish_reason''', "adds `messages.append"),
        ("messages.append(result.message)", "messages.append(result.message)\n            messages[0] = messages[0]",
         "changes `messages`"),
        ("messages = list(ctx.request.messages)", "messages = [{'role': 'system', 'content': 'Be brief.'}] + list(ctx.request.messages)",
         "does not start as the request's messages"),
        ("ctx.log_event(\"pre_llm\"", "await notify(turn)\n            ctx.log_event(\"pre_llm\"", "calls `notify`"),
        ("reward = self._compute_reward(messages, ctx.request.metadata)",
         "reward = self._compute_reward(messages, ctx.request.metadata) if total_tokens else 0.0", "`total_tokens`"),
        ("for turn in range(ctx.request.max_turns):", "for turn in range(ctx.request.max_turns * 2):", "turn limit"),
    ],
    ids=["nudge", "subscript", "system-prefix", "side-effect", "reward-local", "limit"],
)
def test_near_misses_of_the_tool_loop_get_a_todo_with_the_reason(old, new, reason):
    text = _text("seed_complete_example")
    assert old in text
    result = migrate_source(text.replace(old, new, 1))
    todo = next(t for t in result.todos if t.code == "OM390")
    assert reason in todo.reason and not {"OM301", "OM302"} & {e.code for e in result.edits}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("return create_tool_result(tool_call_id, str(result))", "return create_tool_result(tool_call_id, str(round(result)))"),
        ('"add": add,', '"add": add,\n    "plus": add,'),
    ],
    ids=["post-process", "alias"],
)
def test_executors_the_decorators_cannot_express_run_through_the_loops_own_executor(old, new):
    result = migrate_source(_text("seed_complete_example").replace(old, new, 1))
    assert "OM301" in {e.code for e in result.edits}
    assert "tools=legacy_strands_tools(TOOLS, execute_tool)" in result.new_text and "@tool(" not in result.new_text


def test_a_reward_that_reads_the_whole_conversation_is_wrapped():
    text = _text("seed_complete_example").replace(
        'if msg.get("role") == "assistant":', 'if msg.get("role") == "tool":', 1
    )
    result = migrate_source(text)
    assert "more of the conversation" in next(t.reason for t in result.todos if t.code == "OM390")


def test_a_loop_refused_by_an_earlier_run_and_rewritten_now_loses_its_stale_todo():
    # the user fixed what stopped the rewrite and ran the tool again: the "not rewritten" marker must not stay
    # above the rewritten code (before, it was carried onto the first statement the rewrite wrote)
    text = (DIR / "no_tools.py").read_text().replace(
        "\nclass ShortAnswerLoop",
        "\n# TODO(osmosis-migrate OM390): not rewritten: ShortAnswerLoop is used elsewhere in the module. Port it\n"
        "class ShortAnswerLoop",
    )
    result = migrate_source(text)
    assert "OM301" in {e.code for e in result.edits}
    assert "OM390" not in result.new_text


def test_a_loop_refused_for_a_new_reason_keeps_one_todo_with_that_reason():
    text = (DIR / "no_tools.py").read_text().replace(
        "\nclass ShortAnswerLoop",
        "\n# TODO(osmosis-migrate OM390): not rewritten: an old reason\nclass ShortAnswerLoop",
    ).replace("app = create_app(agent_loop)", "app = create_app(agent_loop)\nprint(ShortAnswerLoop)")
    result = migrate_source(text)
    markers = [l for l in result.new_text.splitlines() if "OM390" in l]
    assert len(markers) == 1 and "ShortAnswerLoop is used elsewhere" in markers[0], markers
