"""``osmosis-migrate --verify`` (codemods/verify/): original vs migrated, each run as it is really entered.

The verdicts must be right both ways: a migration that keeps behaviour is ``same``, a migrated text that behaves
differently is ``different`` with the case named (these tests fail if verify says "same"), and what cannot be run
is ``not-verified`` with the precise reason — never a crash. Programs are real (corpus files verbatim in
``fixtures/verify/``, the project's plain examples) or minimal shapes derived from them; the runs are real child
processes against a local endpoint answered by the ScriptedPolicy (nothing leaves 127.0.0.1).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.cli import main
from codemods.driver import migrate_source
from codemods.verify import DIFFERENT, ERROR, NOT_VERIFIED, SAME, FileVerification, Zygote, verify_migrations
from codemods.verify.compare import difference, not_comparable
from codemods.verify.entries import AS_EVENT, AS_OBJECT, CALL, EVENT, PROMPT, SCRIPT, find_entry
from codemods.verify.model import ModelCall, RunOutcome
from codemods.verify.plan import Unchanged, own_prompt, plan_file
from tests.codemods._fixtures import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "examples" / "modern" / "plain"
VERIFY = FIXTURES / "verify"
TWO_CASES = (("What is 2 + 3?", "5"), ("Compute (2 + 3) * 4", "20"))


@pytest.fixture(scope="module")
def zygote():
    """One warm process for the file's runs (the frameworks imported once)."""
    with Zygote() as warm:
        yield warm


def _item(path: Path, new_text: str | None = None, text: str | None = None):
    text = path.read_text() if text is None else text
    result = migrate_source(text)
    return (str(path), text, result.new_text if new_text is None else new_text, result.edits)


# ------------------------------------------------------------------------------------------ entries (no runs)


def test_entries_follow_how_each_program_is_really_entered():
    repl = find_entry((VERIFY / "strands_repl.py").read_text(), "<module>")  # while True: input(); "exit" ends it
    assert (repl.kind, repl.argv, repl.stdin_after) == (SCRIPT, (), ("exit",))
    stdin = find_entry((VERIFY / "strands_stdin_script.py").read_text(), "__main__")  # one input() in __main__
    assert (stdin.kind, stdin.stdin_after) == (SCRIPT, ())
    handler = find_entry((VERIFY / "strands_lambda_handler.py").read_text(), "handler")  # handler(event, _context)
    assert (handler.kind, handler.function, handler.argument, handler.keys, handler.extra_arguments) == (
        CALL, "handler", AS_EVENT, ("prompt",), 1)
    payload = find_entry((VERIFY / "strands_argv_json_payload.py").read_text(), "strands_agent_bedrock")
    assert (payload.kind, payload.argv, payload.keys) == (SCRIPT, (EVENT,), ("prompt",))  # json.loads(args.payload)
    argv = find_entry((PLAIN / "strands_plain.py").read_text(), "solve")  # " ".join(sys.argv[1:])
    assert (argv.kind, argv.argv) == (SCRIPT, (PROMPT,))
    route = find_entry(
        "from pydantic import BaseModel\nclass PromptRequest(BaseModel):\n    prompt: str\n"
        "@app.post('/ask')\nasync def ask(request: PromptRequest):\n    return await agent.invoke_async(request.prompt)\n",
        "ask")
    assert (route.kind, route.argument, route.annotation, route.keys) == (CALL, AS_OBJECT, "PromptRequest", ("prompt",))
    two = find_entry("def f(q, n):\n    return q * n\n", "f")  # other arguments get None, as a local invocation
    assert (two.argument, two.extra_arguments, two.description) == ("prompt", 1, "`f(prompt, None)` called")


def test_plan_of_comment_only_changes_and_of_the_programs_own_prompt():
    text = (FIXTURES / "legacy_loop" / "wrap_instance_with_args.py").read_text()  # a loop the rewrite refuses
    result = migrate_source(text)
    assert result.changed and result.new_text != text
    assert isinstance(plan_file(text, result.new_text, result.edits), Unchanged)  # TODO markers only
    (verdict,) = verify_migrations([("wrap_instance_with_args.py", text, result.new_text, result.edits)])
    assert verdict.status == SAME and "only comments changed" in verdict.describe()[0]
    # a program that ignores the sample prompt: the workflow gets the literal its first model call carried
    program = 'topic = "quantum computing"\nagent(f"Research: {topic}")\n'
    assert own_prompt(program, "Research: quantum computing") == "quantum computing"


def test_compare_masks_what_varies_by_itself_and_accepts_concurrent_order_only():
    def call(system: str, user: str, tools=("add",)) -> ModelCall:
        return ModelCall((("system", system, ()), ("user", user, ())), tools)

    guard, agent = call("Check the input.", "hi", ()), call("Help the user.", "hi")
    # a guardrail runs beside its agent: the same calls in another order are the same behaviour
    assert difference(RunOutcome("A", calls=[guard, agent]), RunOutcome("B", calls=[agent, guard])) is None
    today = RunOutcome("OK.", calls=[call("Today is 2026-11-28T01:21:10Z.", "hi")])
    later = RunOutcome("OK.", calls=[call("Today is 2026-11-29T09:00:00Z.", "hi")])
    assert difference(today, later) is None  # timestamps are masked
    other = RunOutcome("OK.", calls=[call("Help the user.", "hi", ("add", "multiply"))])
    assert difference(RunOutcome("OK.", calls=[agent]), other) == (
        "model call 1 offers tools ['add'] originally, ['add', 'multiply'] migrated")
    assert "message 1 is system 'Help the user.' originally, system 'Check the input.' migrated" in difference(
        RunOutcome("OK.", calls=[agent]), RunOutcome("OK.", calls=[call("Check the input.", "hi")]))
    assert not_comparable(RunOutcome(calls=[agent], external=["the network (api.tavily.com:443)"])) == (
        "the original needs the network (api.tavily.com:443)")


# ------------------------------------------------------------------------------------------ runs


def test_migrations_that_keep_behaviour_verify_as_same(zygote):
    verdicts = verify_migrations([_item(PLAIN / "strands_plain.py"), _item(VERIFY / "strands_lambda_handler.py"),
                                  _item(PLAIN / "openai_agents_plain.py")], zygote=zygote)
    assert [v.status for v in verdicts] == [SAME] * 3, [v.describe() for v in verdicts]
    plain, handler, agents = verdicts
    assert [c.original.model_calls for c in plain.cases] == [2, 3, 2]  # the tools ran on both sides
    assert [c.original.answer for c in agents.cases] == ["The answer is 5.", "The answer is 20.", "The answer is 42."]
    assert "its `__main__` block calling `solve`" in plain.how and "SolveWorkflow served by LocalBackend" in plain.how
    assert "`handler({'prompt': prompt}, None)` called" in handler.how and handler.stubs == ["strands_tools"]
    assert all(c.original.calls == c.migrated.calls for v in verdicts for c in v.cases)


def test_a_broken_migration_is_different_with_the_case_printed(zygote):
    path = PLAIN / "strands_plain.py"
    migrated = migrate_source(path.read_text()).new_text
    no_multiply = migrated.replace("tools=[add, multiply]", "tools=[add]")
    assert no_multiply != migrated
    (verdict,) = verify_migrations([_item(path, no_multiply)], cases=TWO_CASES, zygote=zygote)
    assert verdict.status == DIFFERENT
    assert [c.same for c in verdict.cases] == [False, False]  # the tools offered differ from the first call
    text = "\n".join(verdict.describe())
    assert "solve on 'Compute (2 + 3) * 4'" in text and "offers tools ['add', 'multiply'] originally, ['add'] migrated" in text
    assert "original: answer 'The answer is 20.', 3 model call(s)" in text


def test_a_run_whose_input_is_read_inline_verifies_as_same(zygote):
    # derived from the corpus' `result = await Runner.run(agent, input(...))` drivers: the migrator once replaced the
    # run itself with the prompt's text (found by --verify: the rollout failed on `.final_output` of a str)
    program = ('import asyncio\n\nfrom agents import Agent, Runner\n\n\nasync def main():\n'
               '    agent = Agent(name="Assistant", instructions="You answer in one sentence.")\n'
               '    result = await Runner.run(agent, input("Question: "))\n    print(result.final_output)\n\n\n'
               'if __name__ == "__main__":\n    asyncio.run(main())\n')
    result = migrate_source(program)
    assert "result = await Runner.run(agent, ctx.prompt, session=session)" in result.new_text
    (verdict,) = verify_migrations([("ask.py", program, result.new_text, result.edits)], cases=TWO_CASES[:1],
                                   zygote=zygote)
    assert verdict.status == SAME, verdict.describe()


def test_what_cannot_run_is_not_verifiable_with_the_reason(tmp_path, zygote):
    reads_file = tmp_path / "report.py"
    reads_file.write_text(
        'import asyncio\n\nfrom agents import Agent, Runner\n\n\nasync def main():\n'
        '    with open("quarterly_numbers.csv") as fh:\n        numbers = fh.read()\n'
        '    agent = Agent(name="Analyst", instructions=f"You analyse these numbers:\\n{numbers}")\n'
        '    result = await Runner.run(agent, "What changed?")\n    print(result.final_output)\n\n\n'
        'if __name__ == "__main__":\n    asyncio.run(main())\n')
    aws = tmp_path / "orders.py"
    aws.write_text(
        'import boto3\nfrom strands import Agent\n\norders = boto3.resource("dynamodb").Table("orders")\n\n\n'
        'def handler(event, context):\n    order = orders.get_item(Key={"id": "A-1001"})["Item"]\n'
        '    agent = Agent(system_prompt=f"You answer questions about this order: {order}")\n'
        '    return str(agent(event["prompt"]))\n')
    verdicts = verify_migrations([_item(reads_file), _item(aws)], cases=TWO_CASES[:1], zygote=zygote)
    assert [v.status for v in verdicts] == [NOT_VERIFIED] * 2, [v.describe() for v in verdicts]
    assert verdicts[0].reason == "`main`: the program's entry reads a file `quarterly_numbers.csv` absent here"
    assert "the original needs AWS credentials for boto3.client('dynamodb') (GetItem)" in verdicts[1].reason


def test_a_handler_reading_a_field_of_its_json_body_gets_it_and_verifies_as_same(zygote):
    path = FIXTURES / "strands_agent" / "lambda_json_field.py"  # body = json.loads(event.get("body") or "{}")
    entry = find_entry(path.read_text(), "lambda_handler")
    assert (entry.argument, entry.keys, entry.json_key, entry.json_keys) == (AS_EVENT, ("body",), "body", ("text",))
    (verdict,) = verify_migrations([_item(path)], cases=TWO_CASES[:1], zygote=zygote)
    assert verdict.status == SAME, verdict.describe()
    assert "`lambda_handler({'body': json.dumps({'text': prompt})}, None)` called" in verdict.how


def test_a_streaming_endpoint_is_entered_and_its_response_body_read_as_a_client_would(zygote):
    # the handler returns StreamingResponse(generate()): the original runs its agent only while the body is read
    path = FIXTURES / "strands_agent" / "fastapi_stream_nested.py"
    (verdict,) = verify_migrations([_item(path)], cases=TWO_CASES[:1], zygote=zygote)
    assert verdict.status == SAME, verdict.describe()
    assert verdict.cases[0].original.model_calls >= 1


def test_a_click_command_opening_the_default_aws_profile_at_import_verifies_as_same(zygote):
    # a corpus program verbatim: `boto3.Session(profile_name="default")` at import (the walls give it a fake
    # profile, never the user's), its driver a click command (entered by its function, as the workflow runs it)
    path = ROOT / "tests" / "codemods" / "corpus" / "strands" / "samples__02-samples__08-data-warehouse-optimizer__main.py"
    (verdict,) = verify_migrations([_item(path)], cases=TWO_CASES[:1], zygote=zygote)
    assert verdict.status == SAME, verdict.describe()


# ------------------------------------------------------------------------------------------ CLI


def test_cli_verify_writes_nothing_and_reports(tmp_path, capsys, monkeypatch, zygote):
    import codemods.verify

    # the CLI's own run, forking from this file's warm process instead of starting one
    monkeypatch.setattr(codemods.verify, "verify_migrations", functools.partial(verify_migrations, zygote=zygote))
    shutil.copy(VERIFY / "strands_lambda_handler.py", tmp_path / "agent_handler.py")
    before = (tmp_path / "agent_handler.py").read_bytes()
    report = tmp_path / "report.json"
    assert main(["--verify", "--no-progress", "--report", str(report), str(tmp_path / "agent_handler.py")]) == 0
    assert (tmp_path / "agent_handler.py").read_bytes() == before
    err = capsys.readouterr().err
    assert "osmosis-migrate --verify: 1 file(s) run: 1 same, 0 different, 0 not verified, 0 errored" in err
    (record,) = json.loads(report.read_text())["verify"]
    assert record["verdict"] == SAME and record["stubs"] == ["strands_tools"] and len(record["cases"]) == 3
    assert record["cases"][0]["original"]["calls"] == record["cases"][0]["migrated"]["calls"] == 1


@pytest.mark.parametrize("statuses, code", [([SAME, NOT_VERIFIED], 0), ([SAME, DIFFERENT], 1), ([ERROR, SAME], 3)])
def test_cli_verify_exit_codes(tmp_path, monkeypatch, capsys, statuses, code):
    for name in ("strands_plain.py", "openai_agents_plain.py"):
        shutil.copy(PLAIN / name, tmp_path / name)
    import codemods.verify

    def verdicts(items, jobs=2, zygote=None, target="0.3"):
        return [FileVerification(path, status, "why" if status != SAME else None, how="stub")
                for (path, *_), status in zip(sorted(items), statuses)]

    monkeypatch.setattr(codemods.verify, "verify_migrations", verdicts)
    assert main(["--verify", "--no-progress", str(tmp_path)]) == code
    assert "osmosis-migrate --verify: 2 file(s) run" in capsys.readouterr().err


def test_cli_verify_help_and_no_runtime_import_at_module_level():
    # codemods imports no runtime code: importing the CLI and the verifier loads neither osmosis_compat (beyond the
    # import shim that the installed .pth hook loads at start-up) nor a framework
    code = ("import sys, codemods.cli, codemods.verify, codemods.verify.child.program; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('osmosis_compat', 'litellm', 'strands', 'agents') "
            "and m != 'osmosis_compat' and not m.startswith('osmosis_compat.shim')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    help_text = subprocess.run([sys.executable, "-m", "codemods.cli", "--help"], cwd=ROOT, capture_output=True,
                               text=True).stdout
    assert "--verify" in help_text and "a difference was found" in help_text


def test_a_library_modules_lifted_entry_is_evaluated_on_the_original(zygote):
    # the migration lifted `ChatAssistant().chat(prompt)` / `Runner.run(planner_agent, prompt)`: the original is
    # entered by that same run, so the verdict compares like with like
    items = [_item(FIXTURES / "strands_agent/library_class.py"), _item(FIXTURES / "openai_agent/library_agents.py")]
    verdicts = verify_migrations(items, zygote=zygote)
    assert [v.status for v in verdicts] == [SAME, SAME], [v.describe() for v in verdicts]
    assert "`ChatAssistant().chat(prompt)` evaluated in the original module" in verdicts[0].how
    assert "`Runner.run(planner_agent, prompt)` evaluated in the original module" in verdicts[1].how


def test_a_stubbed_prompt_that_declares_its_answer_gives_it():
    from codemods.verify.child.sandbox import Stub

    assert Stub("examples.auto_mode.confirm_with_fallback")("Approve? ", default=False) is False
    assert Stub("prompts.input_with_default")("Name: ", fallback="Ada") == "Ada"
    assert isinstance(Stub("examples.helpers.render")("x", default=1), Stub)  # not a prompt: still a stub
    assert Stub("examples.auto_mode.is_auto_mode")() is False  # a check of a missing module: nothing is on
