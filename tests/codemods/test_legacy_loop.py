"""``legacy-loop`` (OM3xx): before/after fixtures as syrupy snapshots (targets 0.3 and 0.2), and the decisions that
matter: the loop keeps its own code and only the legacy API is translated, so shapes no recogniser knew are
rewritten; what has no osmosis-ai 0.3 translation is refused with the precise reason; the generated helpers are
spec-exact.

Review a change with `pytest tests/codemods/test_legacy_loop.py --snapshot-update` and read the diff of
`__snapshots__/test_legacy_loop.ambr` (the migrated file, then its edits and TODOs). Every fixture's output parsing
and being a fixed point is also checked by test_properties.py (all fixtures). Behaviour: test_legacy_loop_behaviour.py
(osmosis-compat) and test_legacy_loop_upstream.py (the real osmosis-ai 0.3.8 / 0.2.31).
"""

from __future__ import annotations

import ast
import asyncio
import json

import libcst as cst
import pytest

from codemods.driver import migrate_source
from codemods.markers import find_markers
from codemods.rules._legacy_loop_helpers import LEGACY_HELPERS, chat_helper_text
from tests.codemods._fixtures import FIXTURES, fixture_files, fixture_id
from tests.codemods.test_legacy_loop_behaviour import UNTYPED_PARAMETERS, _load

DIR = FIXTURES / "legacy_loop"
CORPUS = DIR / "corpus"
EXAMPLE = FIXTURES.parents[2] / "examples" / "legacy" / "calculator_agent.py"
CASES = [(p, "auto", t) for p in [*fixture_files("legacy_loop"), EXAMPLE] for t in ("0.3", "0.2")] + [
    (DIR / "unrecognisable.py", "wrap", "0.3"),
    (DIR / "seed_complete_example.py", "wrap", "0.3"),
]


def _text(name: str) -> str:
    return (DIR / f"{name}.py").read_text()


def _migrate(text: str, target: str = "0.3", strategy: str = "auto"):
    return migrate_source(text, strategy=strategy, target=target)


def render(path, strategy: str, target: str) -> str:
    result = migrate_source(path.read_text(), filename=path.name, strategy=strategy, target=target,
                            rules=["legacy-loop", "imports"])
    lines = [result.new_text, "---- edits"]
    lines += [f"{e.code} L{e.line}: {e.message}" for e in result.edits]
    lines.append("---- todos")
    lines += [f"{t.code} L{t.line}: {t.reason}" for t in result.todos]
    return "\n".join(lines)


@pytest.mark.parametrize(("path", "strategy", "target"), CASES, ids=[f"{fixture_id(p)}[{s}-{t}]" for p, s, t in CASES])
def test_fixture_snapshot(path, strategy, target, snapshot):
    assert render(path, strategy, target) == snapshot


FIXED_POINT = [c for c in CASES if c[2] == "0.3"]  # target 0.2: test_properties.py (every fixture)


@pytest.mark.parametrize(("path", "strategy", "target"), FIXED_POINT,
                         ids=[f"{fixture_id(p)}[{s}-{t}]" for p, s, t in FIXED_POINT])
def test_output_parses_and_is_a_fixed_point_with_every_rule(path, strategy, target):
    first = migrate_source(path.read_text(), strategy=strategy, target=target)
    ast.parse(first.new_text)
    second = migrate_source(first.new_text, strategy=strategy, target=target)
    assert second.new_text == first.new_text and second.edits == []


# ------------------------------------------------------------------------------------------ what is kept


def _methods(text: str, cls: str) -> dict[str, str]:
    module = cst.parse_module(text)
    node = next(s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == cls)
    return {m.name.value: module.code_for_node(m) for m in node.body.body if isinstance(m, cst.FunctionDef)}


LEGACY_WORDS = ("ctx", "request", "Rollout", "OpenAIFunction", "CompletionsResult")


@pytest.mark.parametrize("path", sorted(CORPUS.glob("o*.py")), ids=lambda p: p.stem)
def test_a_rewritten_loop_keeps_every_method_that_does_not_touch_the_legacy_api(path):
    text = path.read_text()
    result = migrate_source(text, target="0.3")
    for cls in [s.name.value for s in cst.parse_module(text).body if isinstance(s, cst.ClassDef)]:
        if f"class {cls}(AgentWorkflow)" not in result.new_text:
            continue
        after = _methods(result.new_text, cls)
        for name, code in _methods(text, cls).items():
            if name != "__init__" and not any(word in code for word in LEGACY_WORDS):  # __init__ takes the config
                assert after[name] == code, (cls, name)


def test_run_keeps_its_control_flow_and_tool_code():
    # the SDK's MCP loop: only ctx.* lines change; its try/except/finally tool code and for/else exit stay
    text = (CORPUS / "osmsdk__osmosis_ai__rollout__mcp__agent_loop.py").read_text()
    after = _methods(_migrate(text).new_text, "MCPAgentLoop")["run"]
    for line in ["tool_result = await self._tool_manager.call_tool(fn_name, args)",
                 "messages.append(create_tool_error_result(call_id, str(e)))",
                 "latency_ms = (time.monotonic() - start) * 1000", "\n    else:\n", "result = await _chat(messages, tools)",
                 "for _turn in range(self.max_turns):"]:
        assert line in after, line
    assert "ctx.record_tool_call" not in after and "ctx.complete" not in after


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("            if not result.has_tool_calls:\n                finish_reason",
         '            if not result.has_tool_calls:\n                messages.append({"role": "user", "content": "Check."})'
         "\n                finish_reason"),
        ("messages.append(result.message)", "messages.append(result.message)\n            messages[0] = messages[0]"),
        ("messages = list(ctx.request.messages)",
         "messages = [{'role': 'system', 'content': 'Be brief.'}] + list(ctx.request.messages)"),
        ("for turn in range(ctx.request.max_turns):", "for turn in range(ctx.request.max_turns * 2):"),
        ("if not result.has_tool_calls:", 'if "FINAL" in (result.content or ""):'),
    ],
    ids=["nudge", "subscript", "system-prefix", "limit", "own-stop"],
)
def test_shapes_a_recogniser_refused_are_rewritten(old, new):
    # issue 18: each real variant broke a shape recogniser; the translation has none to break
    text = _text("seed_complete_example")
    assert old in text
    result = _migrate(text.replace(old, new, 1))
    assert "OM301" in {e.code for e in result.edits} and not result.todos, result.todos
    translated = new.replace("ctx.request.messages", "ctx.prompt").replace("ctx.request.max_turns", "self.max_turns")
    assert translated in result.new_text


# ------------------------------------------------------------------------------------------ the translation


def test_the_legacy_api_is_translated_in_place():
    out = _migrate(_text("seed_complete_example")).new_text
    run = _methods(out, "CalculatorAgent")["run"]
    assert "tools = self.get_tools(None)" in run and "result = await _chat(messages, tools)" in run
    assert "messages = list(ctx.prompt)" in run and "range(self.max_turns)" in run
    assert "total_tokens >= self.max_tokens_total" in run and run.rstrip().endswith("return messages")
    code = "\n".join(line for line in run.splitlines() if not line.strip().startswith("#"))
    assert "ctx.log_event" not in code and "ctx.record_tool_call" not in code
    assert "# osmosis-migrate: `ctx.log_event(\"pre_llm\", turn=turn, num…` dropped" in run  # its comment stays
    assert "class CalculatorAgent(AgentWorkflow):" in out and "    max_turns = 10\n    max_tokens_total = 8192\n" in out


def test_the_reward_moves_into_the_grader_with_the_label_where_the_legacy_controller_put_it():
    out = _migrate((CORPUS / "osmrre__server.py").read_text()).new_text
    grader = out[out.index("class CalculatorAgentGrader"):out.index("backend = LocalBackend")]
    assert "messages = list(ctx.sample.messages)" in grader and "ground_truth = ctx.label" in grader
    assert "reward = compute_reward_from_messages(messages, ground_truth)" in grader
    assert "ctx.set_reward(reward)" in grader
    run = _methods(out, "CalculatorAgentLoop")["run"]
    assert "compute_reward_from_messages" not in run and "ground_truth" not in run  # nothing left needs them
    # a helper method and the whole metadata travel too: the metadata is rebuilt with the label in it
    out = _migrate(_text("seed_complete_example"), target="0.2").new_text
    grader = out[out.index("class CalculatorAgentGrader"):out.index("agent_loop") if "agent_loop" in out else None]
    assert "for sample_id, sample in ctx.samples.items():" in grader and 'metadata.setdefault("ground_truth", ctx.label)' in grader
    assert "reward = self._compute_reward(messages, metadata)" in grader and "def _compute_reward(" in grader


def test_a_method_run_hands_ctx_to_is_translated_too():
    out = _migrate(_text("ctx_helper_method")).new_text
    turn = _methods(out, "StepLoop")["_turn"]
    assert "async def _turn(self, context: AgentWorkflowContext, messages: list) -> bool:" in turn
    assert "reply = await _chat(messages, self.get_tools(None))" in turn and "record_tool_call" not in turn
    assert "if await self._turn(ctx, messages):" in out  # the call hands over the workflow context
    assert "ctx.set_reward(self.score(messages, metadata))" in out and "@staticmethod" in out.split("class StepGrader")[1]


def test_a_reward_from_state_only_run_has_travels_in_the_sample_metrics():
    result = _migrate(_text("unrecognisable"))
    run = _methods(result.new_text, "JudgeLoop")["run"]
    assert 'return _sample(messages, reward=float(verdict.get("score", 0) >= self.threshold))' in run
    assert 'raise RuntimeError("the judge did not answer JSON")' in run  # ctx.error: a failed rollout
    assert 'ctx.set_reward(ctx.sample.metrics.get("reward"))' in result.new_text
    assert "workflow=_bound_workflow(JudgeLoop)," in result.new_text  # its __init__ takes (optional) arguments


def test_a_loop_without_reward_gets_the_documented_starting_rule():
    result = _migrate(_text("sdk_docs_no_reward"))
    assert [t.code for t in result.todos] == ["OM394"]
    assert "ctx.set_reward(1.0 if ctx.label and str(ctx.label).strip() in answer else 0.0)" in result.new_text
    assert "grader=AdderGrader" in result.new_text


def test_exits_without_a_reward_beside_rewarded_ones_get_om393_as_its_title_says():
    """OM393 is what the registry (and docs/migrate.md's table) says it is: some exits passed no reward, and the
    marker names exactly which; the grader gives those the reward the other exits passed (one reward, moved into
    the grader). Exits all passing *different* rewards are no OM393: run() hands its reward over in the sample."""
    from codemods import codes

    last = 'return ctx.complete(messages, finish_reason="max_turns")'
    mixed = _text("sdk_docs_no_reward").replace(last, last[:-1] + ", reward=0.0)")
    result = _migrate(mixed)
    todo = next(t for t in result.todos if t.code == codes.LEGACY_REWARD_MIXED.code)
    assert "run()'s exit 1 of 2 (`return ctx.complete(messages)` under `if not result.has_tool_calls`) passes no " \
           "reward" in todo.reason and "every rollout the reward `0.0`" in todo.reason
    assert "ctx.set_reward(0.0)" in result.new_text
    title = codes.LEGACY_REWARD_MIXED.title
    assert "passed no reward" in title and "the reward the other exits passed" in title and "starting rule" in title
    different = mixed.replace("return ctx.complete(messages)\n", "return ctx.complete(messages, reward=1.0)\n")
    result = _migrate(different)
    assert result.todos == [] and 'ctx.set_reward(ctx.sample.metrics.get("reward"))' in result.new_text


@pytest.mark.parametrize("target", ["0.3", "0.2"])
def test_exits_without_a_reward_beside_different_rewards_get_om393_and_the_starting_rule_not_none(target):
    """Some exits pass no reward and the others pass *different* ones (run() hands those over in the sample's
    metrics): the grader never sets None for a sample without one — which fails grading on osmosis-ai 0.3.8 — but
    gives it the starting rule, and OM393 names exactly the exits that pass none (proof on the real 0.3.8:
    test_legacy_loop_upstream.py, mixed_rewards.py)."""
    result = _migrate(_text("mixed_rewards"), target=target)
    [todo] = result.todos
    assert todo.code == "OM393"
    assert todo.reason.startswith("run()'s exit 1 of 3 (`return ctx.complete(messages)` under `if tool_calls == 0`) "
                                  "passes no reward")
    assert "starting rule" in todo.reason
    out = result.new_text
    assert "metrics.get(\"reward\"))" not in out  # never set_reward(<None for those exits>)
    assert 'reward = ctx.sample.metrics.get("reward")' in out if target == "0.3" else \
        'reward = sample.metrics.get("reward")' in out
    assert "if reward is None:" in out and "def _last_assistant_text(" in out
    assert "return _sample(messages)  # answered without a tool" in out
    assert "return _sample(messages, reward=1.0)" in out
    # the exits are named also when several pass none, with their branch
    several = _text("mixed_rewards").replace('return ctx.complete(messages, finish_reason="max_turns", reward=0.0)',
                                             'return ctx.complete(messages, finish_reason="max_turns")')
    todo = _migrate(several, target=target).todos[0]
    assert todo.code == "OM393" and todo.reason.startswith(
        "run()'s exits 1 and 3 of 3 (`return ctx.complete(messages)` under `if tool_calls == 0`; "
        "`return ctx.complete(messages, finish_reason=\"max_turns\")`) pass no reward")


def test_init_takes_the_workflow_config_and_its_arguments_are_bound_where_the_module_built_it():
    out = _migrate(_text("init_with_args")).new_text
    assert "def __init__(self, system_prompt: str, temperature: float = 0.7, config=None):" in out
    assert "super().__init__(config)" in out
    assert "workflow=_bound_workflow(PromptedLoop, system_prompt)," in out  # inside build_app(system_prompt)
    result = _migrate((CORPUS / "osmsdk__osmosis_ai__rollout__mcp__agent_loop.py").read_text())
    todo = next(t for t in result.todos if t.code == "OM397")
    assert "_bound_workflow(MCPAgentLoop, <mcp_server>)" in todo.reason and "def _bound_workflow(" in result.new_text


def test_schema_classes_become_exactly_the_dicts_the_legacy_sdk_dumped(tmp_path):
    # osmosis-compat's legacy schema models (the shim) dump what the legacy SDK dumped (spec §2.8)
    for path, attr in [(DIR / "pydantic_schemas.py", "TOOLS"), (CORPUS / "tools.py", "CALCULATOR_TOOL_SCHEMAS"),
                       (CORPUS / "osmsdk__docs__rollout__examples__block2.py", "SEARCH_TOOL")]:
        text = path.read_text()
        original = text
        for old, new in UNTYPED_PARAMETERS if "docs" in path.name else ():
            original = original.replace(old, new)
        before = getattr(_load(original, tmp_path), attr)
        after = getattr(_load(migrate_source(text, target="0.3").new_text, tmp_path), attr)
        dump = (lambda x: [t.model_dump(exclude_none=True) for t in x]) if isinstance(before, list) \
            else (lambda x: x.model_dump(exclude_none=True))
        assert json.loads(json.dumps(after)) == dump(before), path.name


@pytest.mark.parametrize("name", ["get_tool_call_info", "serialize_tool_result", "parse_tool_arguments",
                                  "create_tool_error_result", "normalize_stop", "get_message_content",
                                  "count_messages_by_role"])
def test_the_legacy_helpers_written_into_a_file_are_the_sdks(name):
    from osmosis_compat.legacy import tools, utils

    namespace: dict = {}
    order: list[str] = []
    from codemods.rules._legacy_loop_helpers import _add_helper

    _add_helper(name, order)
    for helper in order:
        exec(LEGACY_HELPERS[helper][0], namespace)  # noqa: S102 - the rule's own text
    reference = getattr(tools, name, None) or getattr(utils, name)
    inputs = {
        "get_tool_call_info": [{"id": "c1", "function": {"name": "add", "arguments": '{"a": 1}'}},
                               {"function": {"name": "x"}}, {"id": "c2", "function": {"name": "y", "arguments": "[1]"}}],
        "serialize_tool_result": [True, 1.0, 10**20, "s", {"a": 1}, [1, 2], None],
        "parse_tool_arguments": [{"a": 1}, '{"a": 1}', "[1]", "", None],
        "create_tool_error_result": [("c1", "boom")],
        "normalize_stop": [None, "x", ["a", 1], ("t",)],
        "get_message_content": [{"content": "x"}, {"content": None}, {}],
        "count_messages_by_role": [[{"role": "user"}, {"role": "tool"}, {}, {"role": "user"}]],
    }[name]
    for value in inputs:
        args = value if isinstance(value, tuple) else (value,)
        outcomes = []
        for fn in (namespace[name], reference):
            try:
                outcomes.append(("ok", fn(*args)))
            except Exception as exc:  # the same error, with the same message
                outcomes.append((type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1], (name, value)


# ------------------------------------------------------------------------------------------ the _chat helper


def _chat_namespace(url: str, key: str, legacy_errors: bool = False) -> dict:
    from types import SimpleNamespace

    namespace: dict = {"get_rollout_context": lambda: SimpleNamespace(chat_completions_url=url, api_key=key,
                                                                       rollout_id="r-1")}
    if legacy_errors:
        for name in ("OsmosisRolloutError", "OsmosisServerError", "OsmosisValidationError"):
            exec(LEGACY_HELPERS[name][0], namespace)  # noqa: S102
    from codemods.rules._legacy_loop_helpers import _CHAT_RESULT, _TOOL_DICT

    for text in (chat_helper_text("0.3", legacy_errors), _CHAT_RESULT, _TOOL_DICT):
        exec(text, namespace)  # noqa: S102 - the rule's own text
    return namespace


ADD = {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
    "type": "object", "properties": {"a": {"type": "number", "description": None}, "b": {"type": "number"}},
    "required": ["a", "b"]}}}


async def test_chat_helper_streams_and_returns_the_reply_the_legacy_loop_read():
    from osmosis_compat.testing import FakePollingController, ScriptedPolicy

    policy = ScriptedPolicy()
    controller = FakePollingController(policy, check_keys=False)
    with controller.serve():
        ns = _chat_namespace(controller.chat_completions_url("r-1"), "key-1")
        messages = [{"role": "user", "content": "What is 2 + 3?"}]
        reply = await ns["_chat"](messages, [ADD], temperature=0.5, tools=["ignored"], model="ignored")
        [call] = controller.chat_requests("r-1")
    assert call.body["stream"] is True and call.body["model"] == "osmosis-rollout" and call.body["temperature"] == 0.5
    assert call.body["tools"][0]["function"]["parameters"]["properties"]["a"] == {"type": "number"}  # None left out
    assert call.headers["authorization"] == "Bearer key-1" and "x-rollout-id" not in call.headers
    expected = policy.reply(messages, [ADD])
    choice = expected["choices"][0]
    assert reply.message == choice["message"] and reply.has_tool_calls and reply.tool_calls == choice["message"]["tool_calls"]
    assert reply.finish_reason == choice["finish_reason"] and reply.content is None
    assert reply.usage["completion_tokens"] == expected["usage"]["completion_tokens"]


async def test_chat_helper_raises_the_legacy_errors_a_loop_catches():
    from osmosis_compat.testing import FakePollingController

    for status, error in ((500, "OsmosisServerError"), (400, "OsmosisValidationError")):
        controller = FakePollingController(chat_script=[status], check_keys=False)
        with controller.serve():
            ns = _chat_namespace(controller.chat_completions_url("r-1"), "k", legacy_errors=True)
            with pytest.raises(ns["OsmosisRolloutError"]) as caught:
                await ns["_chat"]([{"role": "user", "content": "hi"}], [])
        assert type(caught.value).__name__ == error and caught.value.status_code == status
    assert asyncio  # (the tests above run in pytest-asyncio's loop)


# ------------------------------------------------------------------------------------------ refusals


def test_a_test_module_exercising_the_legacy_registry_is_left_with_the_reason():
    text = (CORPUS / "osmsdk__tests__unit__rollout__test_registry.py").read_text()
    result = _migrate(text)
    assert [t.code for t in result.todos] == ["OM390", "OM390"]
    assert all("legacy API (AgentLoopRegistry)" in t.reason for t in result.todos)
    lines = result.new_text.splitlines(keepends=True)
    for marker in reversed(find_markers(result.new_text)):  # markers wrap over several comment lines
        del lines[marker.line - 1: marker.line - 1 + marker.lines]
    assert "".join(lines) == text  # byte for byte, markers aside


def test_a_test_double_returning_a_prebuilt_result_is_refused_its_siblings_rewritten():
    text = (CORPUS / "osmsdk__tests___helpers__mock_agents.py").read_text()
    result = _migrate(text)
    [refused] = [t for t in result.todos if t.code == "OM390"]
    assert "returns `self._run_result`" in refused.reason and "prebuilt RolloutResult" in refused.reason
    original = text[text.index("class MockAgentLoop"):text.index("class SimpleAgentLoop")].rstrip()
    assert original in result.new_text  # the refused class is untouched
    for name in ("SimpleAgentLoop", "FailingAgentLoop", "SlowAgentLoop"):
        assert f"class {name}(AgentWorkflow):" in result.new_text


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("result = await ctx.chat(messages, **ctx.request.completion_params)",
         "result = await step(ctx, messages)", "hands `ctx` itself to `step(…)`"),
        ("result = await ctx.chat(messages, **ctx.request.completion_params)",
         "result = await ctx.llm.chat_completions(messages)", "`ctx.llm` has no osmosis-ai 0.3 equivalent"),
        ("return ctx.complete(messages, finish_reason=finish_reason, reward=reward)",
         "done = ctx.complete(messages, finish_reason=finish_reason, reward=reward)\n        return done",
         "is not returned by run() itself"),
        ("reward = self._compute_reward(messages, ctx.request.metadata)",
         'reward = self._compute_reward(messages, ctx.request.metadata) if total_tokens else 0.0',
         "reads the request metadata"),
        ('ctx.log_event("pre_llm", turn=turn, num_messages=len(messages))',
         'print(ctx.request.metadata["ground_truth"])', "reads the dataset label"),
    ],
    ids=["ctx-escapes", "ctx-llm", "complete-not-returned", "label-with-run-state", "label-in-workflow"],
)
def test_what_has_no_translation_is_refused_with_the_precise_reason(old, new, reason):
    text = _text("seed_complete_example")
    assert old in text
    changed = text.replace(old, new, 1)
    result = _migrate(changed)
    todo = next(t for t in result.todos if t.code == "OM390")
    assert reason in todo.reason, todo.reason
    assert not {"OM301", "OM302"} & {e.code for e in result.edits}
    assert ast.dump(ast.parse(result.new_text)) == ast.dump(ast.parse(changed))  # a marker, nothing else


def test_a_loop_used_with_the_legacy_registry_is_not_rewritten_but_can_be_wrapped():
    result = _migrate(_text("wrap_instance_with_args"))
    assert [t.code for t in result.todos] == ["OM390"] and "register_agent_loop" in result.todos[0].reason
    out = _migrate(_text("wrap_instance_with_args"), strategy="wrap").new_text
    assert "agent_loop = ThresholdLoop(0.3)\n# TODO(osmosis-migrate OM395)" in out
    assert "\nThresholdWorkflow, ThresholdGrader = loop_as_workflow(agent_loop)\n" in out
    assert "register_agent_loop(agent_loop)" in out and "max_concurrent=12" in out


# ------------------------------------------------------------------------------------------ the wrap, serving


def test_explicit_wrap_wraps_the_loop_unchanged():
    before = _text("unrecognisable")
    result = _migrate(before, strategy="wrap")
    assert {e.code for e in result.edits} >= {"OM302", "OM303"} and "OM395" in {t.code for t in result.todos}
    cls = before[before.index("class JudgeLoop"): before.index("agent_loop = JudgeLoop()")]
    assert cls in result.new_text  # the class itself is untouched
    assert "JudgeWorkflow, JudgeGrader = loop_as_workflow(JudgeLoop)" in result.new_text
    assert "from osmosis_compat.adapters import loop_as_workflow" in result.new_text
    assert "app = create_rollout_server(backend=backend)" in result.new_text


def test_strategy_rewrite_on_a_loop_it_cannot_rewrite_leaves_it_with_a_todo():
    before = _text("wrap_instance_with_args")
    result = _migrate(before, strategy="rewrite")
    assert [t.code for t in result.todos] == ["OM390"] and "register_agent_loop" in result.todos[0].reason
    [marker] = find_markers(result.new_text)
    assert marker.reason == " ".join(result.todos[0].reason.split())
    lines = result.new_text.splitlines(keepends=True)
    assert "".join(lines[:marker.line - 1] + lines[marker.line - 1 + marker.lines:]) == before
    # only the marker (its wrapped lines): serving lines stay with the class they serve
    again = _migrate(result.new_text, strategy="rewrite")
    assert again.new_text == result.new_text and again.new_text.count("OM390") == 1


def test_strategy_wrap_wraps_even_the_recognisable_loop():
    edits = {e.code for e in _migrate(_text("seed_complete_example"), strategy="wrap").edits}
    assert "OM302" in edits and "OM301" not in edits


def test_several_loops_are_each_rewritten_with_one_workflow_per_module_todo():
    result = _migrate(_text("several_loops"), strategy="wrap")
    assert "PlainChatWorkflow, PlainChatGrader = loop_as_workflow(PlainChatLoop)" in result.new_text
    result = _migrate(_text("several_loops"))
    assert "class EchoLoop(AgentWorkflow):" in result.new_text and "class PlainChatLoop(AgentWorkflow):" in result.new_text
    assert result.new_text.count("create_rollout_server(backend=") == 2 and "OM392" in {t.code for t in result.todos}


def test_loop_built_in_a_function_serves_from_the_function():
    out = _migrate(_text("built_in_function")).new_text
    body = out[out.index("def build_app"):]
    assert "backend = LocalBackend(" in body and "return create_rollout_server(backend=backend)" in body
    assert "concurrency=ConcurrencyConfig(max_concurrent=max_concurrent)" in body
    assert "# one server per process" in body


def test_create_app_arguments_without_equivalent_get_a_todo():
    result = _migrate(_text("if_elif_dispatcher"))
    todo = next(t for t in result.todos if t.code == "OM391")
    assert 'debug_dir="./logs"' in todo.reason and "record_ttl_seconds=60.0" in todo.reason
    assert "ConcurrencyConfig(max_concurrent=8)" in result.new_text


API_KEY_SERVED = 'app = create_rollout_server(backend=backend, api_key=os.environ.get("ROLLOUT_SERVER_API_KEY"))'


def test_create_app_api_key_is_kept_where_the_target_server_takes_it():
    """osmosis-ai 0.3.8's create_rollout_server(api_key=…) guards the server as the legacy create_app(api_key=…) did:
    at 0.3 the key stays (no OM391); 0.2.31's takes none, so at 0.2 it is dropped and the OM391 TODO names it."""
    result = _migrate(_text("create_app_api_key"))
    assert API_KEY_SERVED in result.new_text and result.todos == []
    serving = next(e for e in result.edits if e.code == "OM303")
    assert "api_key kept" in serving.message
    result = _migrate(_text("create_app_api_key"), target="0.2")
    assert "app = create_rollout_server(backend=backend)\n" in result.new_text and "api_key=os" not in \
        result.new_text.replace("#   api_key=os", "")
    todo = next(t for t in result.todos if t.code == "OM391")
    assert 'api_key=os.environ.get("ROLLOUT_SERVER_API_KEY")' in todo.reason and "0.2.31" in todo.reason
    # the other arguments are still dropped and named; at 0.3 the TODO no longer points api_key to the docs
    todo = next(t for t in _migrate(_text("if_elif_dispatcher")).todos if t.code == "OM391")
    assert "api_key" not in todo.reason and 'debug_dir="./logs"' in todo.reason


async def test_the_kept_api_key_guards_the_migrated_server(tmp_path):
    """Served by osmosis-compat (test_legacy_loop_upstream.py: by the real osmosis-ai 0.3.8): without the key the
    server answers 401; a controller presenting it runs the rollout."""
    import httpx

    from osmosis_compat.testing import FakePollingController
    from tests.upstream.servers import ServerProcess

    path = tmp_path / "served.py"
    path.write_text(_migrate(_text("create_app_api_key")).new_text)
    with ServerProcess(path, env={"ROLLOUT_SERVER_API_KEY": "osm-test-key"}) as server:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.url}/health")).status_code == 401
            good = await client.get(f"{server.url}/health", headers={"Authorization": "Bearer osm-test-key"})
            assert good.status_code == 200
        controller = FakePollingController(server_api_key="osm-test-key")
        with controller.serve():
            record = await controller.run_rollout(server.url, rollout_id="keyed", label="4",
                                                  initial_messages=[{"role": "user", "content": "What is 2 + 2?"}])
        await controller.aclose()
    assert record.status == "success" and record.reward == 1.0, record


def test_opt_out_and_nested_class():
    assert not _migrate(_text("opt_out")).changed
    result = _migrate(_text("nested_in_function"))
    assert [t.code for t in result.todos] == ["OM392"]
    assert result.new_text.count("# TODO(osmosis-migrate OM392)") == 1 and "create_app(Fixed())" in result.new_text


@pytest.mark.parametrize("name", ["already_migrated", "already_wrapped"])
def test_already_migrated_code_is_left_alone(name):
    result = migrate_source(_text(name), target="0.2")
    assert not result.changed and result.edits == [] and result.todos == []


def test_a_loop_refused_by_an_earlier_run_and_rewritten_now_loses_its_stale_todo():
    # the user fixed what stopped the rewrite and ran the tool again: the "not rewritten" marker must not stay
    text = _text("no_tools").replace(
        "\nclass ShortAnswerLoop",
        "\n# TODO(osmosis-migrate OM390): not rewritten: ShortAnswerLoop is used elsewhere in the module. Port it\n"
        "class ShortAnswerLoop",
    )
    result = _migrate(text)
    assert "OM301" in {e.code for e in result.edits}
    assert "OM390" not in result.new_text


def test_a_loop_refused_for_a_new_reason_keeps_one_todo_with_that_reason():
    text = _text("no_tools").replace(
        "\nclass ShortAnswerLoop",
        "\n# TODO(osmosis-migrate OM390): not rewritten: an old reason\nclass ShortAnswerLoop",
    ).replace("result = await ctx.chat(", "result = await ctx.llm.chat_completions(")
    result = _migrate(text)
    markers = [line for line in result.new_text.splitlines() if "OM390" in line]
    assert len(markers) == 1 and "ctx.llm" in markers[0], markers
