"""Issue 5 item 5 for ``strands-agent`` and ``openai-agent``: a migrated plain example earns the rewards and gives
the final answers of the original.

The original (``examples/modern/plain/*.py``) runs natively: ``solve(prompt)`` against the fake controller's
OpenAI-compatible chat endpoint (``<controller>/v1``) through the environment variables its docstring names, and
its answer is scored with the graders' rule (the row's ground truth in the final answer). The same file is then
migrated with ``migrate_source`` for ``--target 0.2`` (the fake controller here speaks the 0.2 workflow protocol; 0.3 output is proven on the real osmosis-ai 0.3.8 elsewhere), completed the way ``docs/migrate.md`` tells users (the OM190/OM290 TODO: replace
the ``__main__`` block by a grader and the serving lines), served with ``create_rollout_server`` and driven through
the workflow protocol by ``FakeWorkflowController`` on the rows of ``examples/modern/data/calculator.jsonl``. Both
sides use the same deterministic ``ScriptedPolicy``. (``examples/legacy`` is covered by
``test_legacy_loop_behaviour.py``.)
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from codemods.driver import migrate_source
from codemods.markers import find_markers
from osmosis_compat.testing import FakeWorkflowController, serve_app
from osmosis_compat.workflow.messages import last_assistant_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "modern"
ROWS = [json.loads(line) for line in (EXAMPLES / "data" / "calculator.jsonl").read_text().splitlines() if line.strip()]
# the dataset's labels are all right; one wrong label shows that a 0.0 is preserved too
CASES = [*ROWS, {**ROWS[0], "ground_truth": "41"}]
_counter = itertools.count()


def ground_truth_reward(answer: str, label: str | None) -> float:
    """The graders' rule (examples/modern/*_calculator.py): 1.0 when the label is in the final answer."""
    return 1.0 if label and label.strip() in answer else 0.0


# What the OM195/OM295 marker tells the user to add (docs/migrate.md, "Serving lines"): a grader — the plain script
# had none — passed to LocalBackend; served here with create_rollout_server. Same rule as above.
COMPLETION = '''

from osmosis_ai.rollout import Grader, GraderContext, LocalBackend, create_rollout_server
from osmosis_compat.workflow.messages import last_assistant_text


class CalculatorGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = last_assistant_text(sample.messages)
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label.strip() in answer else 0.0)


backend = LocalBackend(workflow={workflow}, grader=CalculatorGrader)
app = create_rollout_server(backend=backend)
'''


@dataclass(frozen=True)
class Example:
    file: str
    rule: str
    workflow: str
    todo_code: str
    edit_codes: frozenset


EXAMPLES_UNDER_TEST = [
    Example("strands_plain.py", "strands-agent", "SolveWorkflow", "OM195",
            frozenset({"OM101", "OM102", "OM103", "OM104", "OM105", "OM107"})),
    Example("openai_agents_plain.py", "openai-agent", "SolveWorkflow", "OM295",
            frozenset({"OM202", "OM203", "OM204", "OM205", "OM206", "OM207"})),
]


def _load(text: str, tmp_path: Path, stem: str):
    name = f"_example_{stem}_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def complete_migration(migrated: str, example: Example) -> str:
    """Follow the TODO the migration left: its marker goes, a grader and the serving lines come (the ``__main__``
    block the migration wrote — it serves the workflow with uvicorn — stays: importing the module does not run it)."""
    [marker] = [m for m in find_markers(migrated) if m.code == example.todo_code]
    assert marker.reason.startswith("no Grader in this module")
    lines = migrated.splitlines(keepends=True)
    at, end = marker.line - 1, marker.line - 1 + marker.lines  # the marker's lines (wrapped at the line length)
    assert lines[end].startswith(f"class {example.workflow}(AgentWorkflow):")
    return "".join(lines[:at] + lines[end:]).rstrip() + "\n" + COMPLETION.format(workflow=example.workflow)


@pytest.fixture
def openai_agents_defaults():
    """The plain OpenAI Agents example sets the SDK's process-wide client/API/tracing: restore them afterwards."""
    from agents import set_default_openai_api
    from agents.models import _openai_shared
    from agents.tracing import get_trace_provider

    client = _openai_shared.get_default_openai_client()
    responses = _openai_shared.get_use_responses_by_default()
    provider = get_trace_provider()
    # set_tracing_disabled() overrides OPENAI_AGENTS_DISABLE_TRACING for good: put the "not set" state back
    manual = getattr(provider, "_manual_disabled", None)
    yield
    _openai_shared.set_default_openai_client(client)
    set_default_openai_api("responses" if responses else "chat_completions")
    if hasattr(provider, "_manual_disabled"):
        provider._manual_disabled = manual
        provider._refresh_disabled_flag()


async def _native_run(example: Example, tmp_path: Path, monkeypatch) -> tuple[list[str], list[int]]:
    """The original's final answers and the number of model calls per row."""
    original = _load((EXAMPLES / "plain" / example.file).read_text(), tmp_path, "plain")
    assert ROWS[0]["system_prompt"] in (getattr(original, "SYSTEM_PROMPT", None), getattr(original, "INSTRUCTIONS", None))
    answers, calls = [], []
    with FakeWorkflowController().serve() as controller:
        # the environment a user sets to point the script at an OpenAI-compatible server (module docstrings)
        monkeypatch.setenv("OPENAI_BASE_URL", controller.chat_completions_url)
        monkeypatch.setenv("OPENAI_API_KEY", controller.controller_api_key)
        if hasattr(original, "use_openai_compatible_endpoint"):
            original.use_openai_compatible_endpoint()
        for row in CASES:
            before = len(controller.chat_requests())
            answers.append(await original.solve(row["user_prompt"]))
            calls.append(len(controller.chat_requests()) - before)
    return answers, calls


async def _workflow_run(module) -> tuple[list[float], list[str], list[int]]:
    """The migrated workflow's rewards, final answers and number of model calls per row."""
    rewards, answers, calls = [], [], []
    with FakeWorkflowController().serve() as controller, serve_app(module.app) as server:
        for i, row in enumerate(CASES):
            record = await controller.run_rollout(
                server.url,
                rollout_id=f"migrated-{i}",
                initial_messages=[
                    {"role": "system", "content": row["system_prompt"]},
                    {"role": "user", "content": row["user_prompt"]},
                ],
                label=row["ground_truth"],
            )
            assert record.completion and record.completion.get("status") == "success", record.completion
            assert len(record.rewards) == 1, record.grader
            rewards.append(next(iter(record.rewards.values())))
            # the final answer: the last assistant text of the sample the grader scored (grader callback)
            (sample,) = record.grader["samples"].values()
            answers.append(last_assistant_text(sample["messages"]).strip())
            calls.append(len(record.chat_requests))  # calls carrying this rollout's x-rollout-id
    return rewards, answers, calls


@pytest.mark.parametrize("example", EXAMPLES_UNDER_TEST, ids=lambda e: e.file)
def test_migration_of_plain_example_is_as_documented(example: Example):
    text = (EXAMPLES / "plain" / example.file).read_text()
    result = migrate_source(text, target="0.2")
    assert result.changed
    ast.parse(result.new_text)
    assert migrate_source(result.new_text, target="0.2").new_text == result.new_text  # fixed point
    assert {e.code for e in result.edits} == example.edit_codes
    # one TODO, the documented one: the plain program had no grader — it says what one could read
    assert [t.code for t in result.todos] == [example.todo_code]
    todo = result.todos[0]
    assert todo.reason.startswith("no Grader in this module") and "ctx.label" in todo.reason
    assert result.new_text.count("TODO(osmosis-migrate") == 1
    # the TODO's line is the input statement's (docs/migrate.md, "Line numbers"); the marker sits above the workflow
    assert text.splitlines()[todo.line - 1] == "async def solve(prompt: str) -> str:"
    new_lines = result.new_text.splitlines()
    at = new_lines.index(f"class {example.workflow}(AgentWorkflow):")
    [marker] = find_markers(result.new_text)
    assert marker.line + marker.lines == at + 1 and marker.text == f"# TODO(osmosis-migrate {example.todo_code}): {todo.reason}"
    # the `__main__` block no longer calls `solve` (gone): it serves the workflow, as upstream's scaffolds do
    guard = result.new_text[result.new_text.index('if __name__ == "__main__":'):]
    assert "solve(" not in guard and f"LocalBackend(workflow={example.workflow})" in guard
    # only the selected rule is needed (the imports rule has nothing to do on plain code)
    assert migrate_source(text, rules=[example.rule], target="0.2").new_text == result.new_text
    # once completed as the TODO says, the file is still a fixed point and has no marker left
    completed = complete_migration(result.new_text, example)
    again = migrate_source(completed, target="0.2")
    assert again.new_text == completed and not again.todos


@pytest.mark.parametrize("example", EXAMPLES_UNDER_TEST, ids=lambda e: e.file)
async def test_migrated_plain_example_earns_the_same_rewards(example: Example, tmp_path, monkeypatch, openai_agents_defaults):
    native_answers, native_calls = await _native_run(example, tmp_path, monkeypatch)
    expected = [ground_truth_reward(a, row["ground_truth"]) for a, row in zip(native_answers, CASES)]
    assert expected == [1.0, 1.0, 1.0, 1.0, 0.0], native_answers  # the rows exercise both outcomes
    assert native_calls == [2, 2, 3, 3, 2]  # one model call per tool step, then the answer: the tools were used
    monkeypatch.delenv("OPENAI_BASE_URL")  # the migrated workflow must not need them: the controller's URL is used
    monkeypatch.delenv("OPENAI_API_KEY")

    migrated = _load(complete_migration(migrate_source((EXAMPLES / "plain" / example.file).read_text(), target="0.2").new_text, example),
                     tmp_path, "migrated")
    migrated.backend.artifact_root = tmp_path / "artifacts"
    rewards, answers, calls = await _workflow_run(migrated)
    assert rewards == expected
    assert answers == native_answers
    assert calls == native_calls  # same tools, same steps: the prompt and the tools reached the model
