"""Migrated plain programs behave as the originals did: data flow, concurrency and sessions seen on the wire.

Each fixture is migrated by ``osmosis-migrate`` for the 0.2 workflow API (``--target 0.2``: several named samples
per rollout, the API this protocol speaks; the 0.3 output is proven on the real osmosis-ai 0.3.8 in
``test_plain_upstream.py`` and the corpus harness), given the grader its OM195/OM295 TODO asks for, served with
``create_rollout_server`` and driven over the 0.2.x workflow protocol by ``FakeWorkflowController`` with the scripted
policy (real uvicorn, real Strands / OpenAI Agents). What the controller records — which sample made which model
call, with which input — shows that only the program's input became the prompt: a chained agent still receives
the previous agent's answer, a template still wraps the prompt's text, parallel runs stay separate samples, a run
repeated in a loop gets a fresh session each pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys

from codemods.driver import migrate_source
from tests.codemods._fixtures import FIXTURES

GRADER = '''

from osmosis_ai.rollout import Grader, GraderContext, LocalBackend, create_rollout_server


def _text(message) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


class LabelInAnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = next((_text(m) for m in reversed(sample.messages) if m.get("role") == "assistant" and _text(m)), "")
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in answer else 0.0)


backend = LocalBackend(workflow={workflow}, grader=LabelInAnswerGrader)
app = create_rollout_server(backend=backend)
'''
_counter = itertools.count()


def _serve(tmp_path, fixture: str, workflow: str):
    result = migrate_source((FIXTURES / fixture).read_text(), filename=fixture.rsplit("/", 1)[-1], target="0.2")
    assert f"class {workflow}(AgentWorkflow)" in result.new_text
    name = f"behaviour_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(result.new_text + GRADER.format(workflow=workflow))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.backend.artifact_root = tmp_path / "artifacts"
    return module


async def _rollout(module, prompt: str = "What is 2 + 3?", label: str = "5"):
    from osmosis_compat.testing import FakeWorkflowController, serve_app

    with FakeWorkflowController().serve() as controller, serve_app(module.app) as server:
        record = await controller.run_rollout(
            server.url,
            rollout_id=f"behaviour-{next(_counter)}",
            initial_messages=[{"role": "user", "content": prompt}],
            label=label,
        )
    assert record.completion is not None and record.completion.get("status") == "success", record.completion
    return record


def _user_texts(record) -> dict[str, list[str]]:
    """sample id → the last user message text of each of its model calls."""
    out: dict[str, list[str]] = {}
    for request in record.chat_requests:
        users = [m for m in request.body["messages"] if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.setdefault(request.sample_id, []).append(content)
    return out


async def test_gathered_runs_stay_parallel_samples_and_the_checker_reads_their_answers(tmp_path):
    record = await _rollout(_serve(tmp_path, "openai_agent/calc_chain_gather.py", "MainWorkflow"))
    assert sorted(record.rewards) == ["checker", "solver", "solver_2", "solver_3"]
    assert [record.rewards[s] for s in ("solver", "solver_2", "solver_3")] == [1.0, 1.0, 1.0]
    texts = _user_texts(record)
    for solver in ("solver", "solver_2", "solver_3"):
        assert texts[solver][0] == "What is 2 + 3?"  # the rollout prompt
    # the checker got the solvers' answers in its template, not the prompt
    assert texts["checker"] == ["Answers: The answer is 5. / The answer is 5. / The answer is 5."]


async def test_a_run_repeated_in_a_loop_gets_a_fresh_session_each_pass(tmp_path):
    record = await _rollout(_serve(tmp_path, "openai_agent/calc_loop_rounds.py", "MainWorkflow"))
    assert len(record.rewards) == 2 and set(record.rewards.values()) == {1.0}  # two passes, two samples
    assert all(texts[0] == "What is 2 + 3?" for texts in _user_texts(record).values())


async def test_a_strands_template_wraps_the_prompt_and_the_reviewer_reads_the_answer(tmp_path):
    record = await _rollout(_serve(tmp_path, "strands_agent/calc_template_chain.py", "SolveWorkflow"))
    texts = list(_user_texts(record).values())
    assert len(texts) == 2
    solver, reviewer = sorted(texts, key=len, reverse=True)  # the solver made a tool call: two model calls
    assert solver[0] == "Solve carefully: What is 2 + 3?"
    assert reviewer[0].startswith("Check this answer: ") and "The answer is 5." in reviewer[0]


async def test_module_level_script_code_runs_as_the_workflow(tmp_path):
    record = await _rollout(_serve(tmp_path, "strands_agent/calc_script.py", "CalcScriptWorkflow"))
    assert list(record.rewards.values()) == [1.0]
    assert len(record.chat_requests) == 2  # one tool call, then the answer: the tool was used


async def test_an_agent_kept_on_an_object_runs_off_the_event_loop_with_the_prompt(tmp_path):
    module = _serve(tmp_path, "strands_agent/calc_class.py", "MainWorkflow")
    record = await _rollout(module)
    assert list(record.rewards.values()) == [1.0]
    assert list(_user_texts(record).values())[0][0] == "What is 2 + 3?"


async def test_a_manager_class_runs_its_steps_each_in_its_own_session(tmp_path):
    record = await _rollout(_serve(tmp_path, "openai_agent/calc_manager_class.py", "MainWorkflow"))
    texts = list(_user_texts(record).values())
    assert len(texts) == 2  # the solver's sample and the writer's
    solver, writer = sorted(texts, key=len, reverse=True)
    assert solver[0] == "What is 2 + 3?"  # the interactive input() became the prompt's text
    assert writer == ["Result: The answer is 5."]  # the writer reads the solver's result, as before


async def test_a_package_migrated_across_files_serves_its_workflow(tmp_path):
    """calc_app: agents in one module, a manager class in another, main.py reading input(): one run migrates all
    three; the served workflow runs the manager's rollout copy, which builds the agents' rollout versions."""
    import shutil

    from codemods.driver import run_many, select_rules, write_atomic

    shutil.copytree(FIXTURES / "openai_agent_tree" / "calc_app", tmp_path / "calc_app_m")
    paths = [str(p) for p in sorted((tmp_path / "calc_app_m").rglob("*.py"))]
    for r in run_many(paths, select_rules(), target="0.2"):
        if r.new_bytes is not None:
            write_atomic(r.path, r.new_bytes)
    main = tmp_path / "calc_app_m" / "main.py"
    main.write_text(main.read_text() + GRADER.format(workflow="MainWorkflow"))
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("calc_app_m.main")
    finally:
        sys.path.remove(str(tmp_path))
    module.backend.artifact_root = tmp_path / "artifacts"
    record = await _rollout(module)
    texts = sorted(_user_texts(record).values(), key=len, reverse=True)
    assert texts[0][0] == "What is 2 + 3?" and texts[1] == ["Result: The answer is 5."]
