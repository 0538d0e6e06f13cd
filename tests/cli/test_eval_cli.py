"""``osmosis-compat eval`` end to end: real servers on 127.0.0.1, the fake controllers, per-row results."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.main import main
from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy

AGENTS = Path(__file__).with_name("cli_agents.py")
CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
DATASET = EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl"
ROW = {"system_prompt": "You are a calculator.", "user_prompt": "What is 12 + 30?", "ground_truth": "42"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_no_arguments_runs_the_builtin_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval"]) == 0
    out, err = capsys.readouterr()
    assert "Evaluation of calculator (legacy protocol)" in out
    assert "pass rate (reward >= 1)  100.0% (5/5)" in out
    assert "[5/5] row" in err  # plain progress lines when stderr is not a tty


def test_bad_rows_get_per_row_errors_and_the_output_file_has_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "mixed.jsonl"
    dataset.write_text("\n".join([
        json.dumps(ROW),
        "{oops",
        json.dumps({**ROW, "ground_truth": None}),
        json.dumps({**ROW, "user_prompt": "Compute (2 + 3) * 4", "ground_truth": "21"}),
    ]))
    output = tmp_path / "out.jsonl"
    assert main(["eval", "-m", CALCULATOR, "-d", str(dataset), "-o", str(output), "-q"]) == 0
    out = capsys.readouterr().out
    assert "invalid rows             2" in out and "failures: invalid_row" in out
    rows = lines(output)
    assert [r["row_index"] for r in rows] == [0, 1, 2, 3]
    assert [r["status"] for r in rows] == ["completed", "invalid", "invalid", "completed"]
    assert rows[0]["reward"] == 1.0 and rows[0]["passed"] and rows[0]["final_message"] == "The answer is 42."
    assert rows[0]["messages"][2]["tool_calls"][0]["function"]["name"] == "add"
    assert rows[1]["category"] == "invalid_row" and "not valid JSON" in rows[1]["error"]
    assert "'ground_truth' is null" in rows[2]["error"]
    assert rows[3]["reward"] == 0.0 and not rows[3]["passed"]  # ran fine, wrong ground truth: not a failure
    assert main(["eval", "-m", CALCULATOR, "-d", str(dataset), "-q", "--strict"]) == 1


def test_csv_dataset_with_offset_and_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "d.csv"
    dataset.write_text(
        "system_prompt,user_prompt,ground_truth,metadata\n"
        + "".join(f's,What is {i} + 1?,{i + 1},"{{""i"": {i}}}"\n' for i in range(5))
    )
    output = tmp_path / "out.jsonl"
    code = main(["eval", "-m", CALCULATOR, "-d", str(dataset), "--offset", "1", "--limit", "2", "-o", str(output),
                 "--concurrency", "2", "-q"])
    assert code == 0
    rows = lines(output)
    assert [(r["row_index"], r["reward"]) for r in rows] == [(1, 1.0), (2, 1.0)]
    assert "completed                2" in capsys.readouterr().out


def test_agent_failures_are_categorised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(ROW) + "\n")
    output = tmp_path / "out.jsonl"
    assert main(["eval", "-m", f"{AGENTS}:raising_loop", "-d", str(dataset), "-o", str(output), "-q"]) == 0
    [row] = lines(output)
    assert (row["status"], row["category"], row["error"]) == ("failed", "agent_error", "the agent broke")
    assert main(["eval", "-m", f"{AGENTS}:no_reward_loop", "-d", str(dataset), "-o", str(output), "-q"]) == 0
    [row] = lines(output)
    assert (row["status"], row["category"]) == ("failed", "no_reward")
    assert "failures: no_reward" in capsys.readouterr().out


def test_a_real_endpoint_is_reached_through_the_forwarding_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fake workflow controller's /v1/chat/completions is an OpenAI-compatible endpoint checking its key.
    endpoint = FakeWorkflowController(ScriptedPolicy(), controller_api_key="endpoint-key")
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(ROW) + "\n")
    output = tmp_path / "out.jsonl"
    monkeypatch.setenv("MY_KEY", "endpoint-key")
    with endpoint.serve():
        base = ["eval", "-m", CALCULATOR, "-d", str(dataset), "--base-url", f"{endpoint.url}/v1",
                "--model", "my-model", "--temperature", "0.2", "-q"]
        assert main([*base, "--api-key-env", "MY_KEY", "-o", str(output)]) == 0
        requests = endpoint.chat_requests()
        monkeypatch.setenv("OSMOSIS_EVAL_API_KEY", "wrong")
        assert main(base) == 1
    [row] = lines(output)
    assert row["reward"] == 1.0
    preflight, *calls = [r.body for r in requests]
    assert preflight["max_tokens"] == 1
    assert len(calls) == 2 and all(c["model"] == "my-model" and c["temperature"] == 0.2 for c in calls)
    # The loop's own sampling parameters (legacy ctx.chat defaults) are forwarded; --temperature overrides.
    assert all(c["top_p"] == 1.0 and c["max_tokens"] == 512 for c in calls)
    assert [t["function"]["name"] for t in calls[0]["tools"]] == ["add", "subtract", "multiply", "divide"]
    assert "Error: the model endpoint failed the preflight call" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", CALCULATOR], "-d/--dataset is required with -m"),
        (["-d", "/nonexistent/d.jsonl"], "no such file"),
        (["-m", "no_such_module:agent", "-d", str(DATASET)], "Cannot import module 'no_such_module'"),
        (["-m", f"{AGENTS}:not_an_agent", "-d", str(DATASET)], "is neither a RolloutAgentLoop nor a workflow"),
        (["--base-url", "http://127.0.0.1:1/v1"], "--model is required with --base-url"),
        (["--model", "m", "--api-key-env", "UNSET_VARIABLE_FOR_TEST"], "UNSET_VARIABLE_FOR_TEST"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
    ],
)
def test_setup_errors_exit_1(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and message in err


WORKFLOW = str(Path(__file__).resolve().parents[1] / "server" / "calc_workflow.py")


@pytest.mark.parametrize(
    ("module", "via", "protocol"),
    [
        (CALCULATOR, "workflow", "calculator (workflow protocol)"),
        (WORKFLOW, "native", "calc-workflow (workflow protocol)"),
        (WORKFLOW, "legacy", "calc-workflow (legacy protocol)"),
        (CALCULATOR, "polling", "calculator (polling protocol)"),  # today's 0.3.8 controller, natively
        (WORKFLOW, "polling", "calc-workflow (polling protocol)"),
    ],
)
def test_via_runs_each_kind_on_either_protocol_with_the_same_answers(
    module: str, via: str, protocol: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    native, adapted = tmp_path / "native.jsonl", tmp_path / "adapted.jsonl"
    assert main(["eval", "-m", CALCULATOR, "-d", str(DATASET), "-q", "-o", str(native)]) == 0
    assert main(["eval", "-m", module, "-d", str(DATASET), "-q", "--via", via, "-o", str(adapted)]) == 0
    assert f"Evaluation of {protocol}" in capsys.readouterr().out
    # Same rewards and the same transcripts, message for message (tool calls, tool results, answers).
    expected = [(r["row_index"], r["reward"], r["messages"]) for r in lines(native)]
    assert [(r["row_index"], r["reward"], r["messages"]) for r in lines(adapted)] == expected


def test_workflow_failures_are_categorised(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("\n".join([
        json.dumps({**ROW, "metadata": {"fail": True}}),
        json.dumps({**ROW, "ground_truth": "41"}),
    ]))
    output = tmp_path / "out.jsonl"
    assert main(["eval", "-m", WORKFLOW, "-d", str(dataset), "-q", "-o", str(output)]) == 0
    failed, wrong = lines(output)
    assert (failed["status"], failed["category"], failed["error"]) == ("failed", "agent_error", "workflow asked to fail")
    assert (wrong["status"], wrong["reward"], wrong["passed"]) == ("completed", 0.0, False)
    assert wrong["samples"]["calc"]["reward"] == 0.0 and wrong["final_message"] == "The answer is 42."


def test_rejected_and_timed_out_rows_do_not_stop_or_stall_the_run(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(ROW) + "\n")
    output = tmp_path / "out.jsonl"
    assert main(["eval", "-m", f"{AGENTS}:bad_tools_loop", "-d", str(dataset), "-o", str(output), "-q"]) == 0
    [row] = lines(output)
    assert row["category"] == "rejected" and "HTTP 500" in row["error"] and "no tools today" in row["error"]
    started = time.monotonic()
    assert main(["eval", "-m", f"{AGENTS}:sleepy_loop", "-d", str(dataset), "-o", str(output), "-q",
                 "--timeout", "0.2"]) == 0
    assert time.monotonic() - started < 5  # the abandoned rollout is not waited for
    [row] = lines(output)
    assert row["category"] == "timeout" and "--timeout" in row["error"]


MODERN = EXAMPLES_DIR / "modern"


@pytest.mark.parametrize(("example", "via"), [("openai_agents_calculator.py", "legacy")])  # one: imports are slow
def test_a_framework_example_evaluates_on_the_real_framework(
    example: str, via: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.jsonl"
    code = main(["eval", "-m", str(MODERN / example), "-d", str(MODERN / "data" / "calculator.jsonl"),
                 "--via", via, "-q", "-o", str(output)])
    assert code == 0, capsys.readouterr()
    rows = lines(output)
    assert rows and all(r["status"] == "completed" and r["passed"] for r in rows)
    assert all(r["final_message"] for r in rows)


def test_ctrl_c_keeps_the_rows_that_finished(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(ROW) + "\n{broken\n")
    output = tmp_path / "out.jsonl"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "osmosis_compat.cli.main", "eval", "-m", f"{AGENTS}:sleepy_loop", "-d", str(dataset),
         "-o", str(output)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in proc.stderr:  # the invalid row is reported while the sleepy one runs
            if "row 1: invalid" in line:
                break
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in out and "Interrupted: 1 of 2 row(s) finished." in err
    assert [(r["row_index"], r["status"]) for r in lines(output)] == [(1, "invalid")]
