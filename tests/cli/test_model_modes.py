"""``osmosis test`` / ``osmosis eval`` model modes: LiteLLM against a local fake model server via ``--base-url``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.legacy_cli import main
from osmosis_compat.cli.legacy_eval import pass_at_k
from osmosis_compat.evaluation.policies import litellm_model_id, missing_api_key
from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy

CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
DATASET = str(EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl")

EVAL_FNS = '''
def exact(solution_str, ground_truth, extra_info=None):
    return 1.0 if ground_truth in (solution_str or "") else 0.0

async def turns(messages, ground_truth, metadata=None):
    return len([m for m in messages if m.get("role") == "assistant"])

def broken(solution_str, ground_truth, extra_info=None):
    raise RuntimeError("eval fn failed")
'''


@pytest.fixture(scope="module")
def endpoint():
    # The fake workflow controller's /v1/chat/completions is an OpenAI-compatible endpoint that checks its key.
    fake = FakeWorkflowController(ScriptedPolicy(), controller_api_key="endpoint-key")
    with fake.serve():
        yield fake


def test_model_ids_and_key_checks():
    assert litellm_model_id("gpt-5-mini", None) == "openai/gpt-5-mini"
    assert litellm_model_id("anthropic/claude-sonnet-4-5", None) == "anthropic/claude-sonnet-4-5"
    assert litellm_model_id("Qwen/Qwen3-8B", "http://x/v1") == "openai/Qwen/Qwen3-8B"
    assert litellm_model_id("openai/m", "http://x/v1") == "openai/m"
    env = {}
    assert missing_api_key("together_ai/x", api_key=None, base_url=None, environ=env) == "TOGETHERAI_API_KEY"
    assert missing_api_key("openai/x", api_key="k", base_url=None, environ=env) is None
    assert missing_api_key("openai/x", api_key=None, base_url="http://h", environ=env) is None
    assert missing_api_key("openai/x", api_key=None, base_url=None, environ={"LITELLM_API_KEY": "k"}) is None


def test_osmosis_test_through_litellm(endpoint, tmp_path, capsys):
    before = len(endpoint.chat_requests())
    out = tmp_path / "r.json"
    code = main(["test", "-m", CALCULATOR, "-d", DATASET, "--limit", "2", "--model", "my-model",
                 "--base-url", f"{endpoint.url}/v1", "--api-key", "endpoint-key", "--temperature", "0.3",
                 "-o", str(out)])
    assert code == 0, capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["summary"]["passed"] == 2 and report["summary"]["total_tokens"] > 0
    preflight, *calls = [r for r in endpoint.chat_requests()[before:]]
    assert preflight.body["messages"] == [{"role": "user", "content": "hi"}] and preflight.body["max_tokens"] == 1
    assert all(c.body["model"] == "my-model" and c.body["temperature"] == 0.3 for c in calls)
    # As upstream's test mode: all the agent's sampling parameters reach the model, the tools in every call.
    assert all(c.body["max_tokens"] == 512 and c.body["top_p"] == 1.0 for c in calls)
    assert [t["function"]["name"] for t in calls[0].body["tools"]] == ["add", "subtract", "multiply", "divide"]
    assert "openai" in calls[0].headers.get("user-agent", "").lower()  # the OpenAI SDK under LiteLLM


def test_osmosis_test_key_errors(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("LITELLM_API_KEY", raising=False)
    assert main(["test", "-m", CALCULATOR, "-d", DATASET]) == 1
    assert "no API key for openai/gpt-5-mini: set OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["test", "-m", CALCULATOR, "-d", DATASET, "--model", "anthropic/claude-sonnet-4-5"]) == 1
    assert "set ANTHROPIC_API_KEY or pass --api-key" in capsys.readouterr().err
    assert main(["test", "-m", CALCULATOR, "--mcp", "x", "-d", DATASET]) == 1
    assert "mutually exclusive" in capsys.readouterr().err


def test_a_failing_endpoint_fails_the_preflight(endpoint, capsys):
    code = main(["test", "-m", CALCULATOR, "-d", DATASET, "--model", "m", "--base-url", f"{endpoint.url}/v1",
                 "--api-key", "wrong"])
    assert code == 1 and "failed the preflight call" in capsys.readouterr().err


def test_osmosis_eval_scores_with_eval_functions_and_pass_at_k(endpoint, tmp_path, capsys):
    fns = tmp_path / "evalfns.py"
    fns.write_text(EVAL_FNS)
    out = tmp_path / "report.json"
    before = len(endpoint.chat_requests())
    code = main(["eval", "-m", CALCULATOR, "-d", DATASET, "--limit", "2", "--n", "2", "--model", "builtin",
                 "--eval-fn", f"{fns}:exact", "--eval-fn", f"{fns}:turns", "--eval-fn", f"{fns}:broken",
                 "--baseline-model", "base-model", "--baseline-base-url", f"{endpoint.url}/v1",
                 "--baseline-api-key", "endpoint-key", "--batch-size", "2", "-o", str(out), "-q"])
    assert code == 0, capsys.readouterr()
    report = json.loads(out.read_text())
    primary = report["primary"]
    assert [(r["row_index"], r["run_index"], r["rollout_id"]) for r in primary["results"]] == [
        (0, 0, "eval-0-run-0"), (0, 1, "eval-0-run-1"), (1, 0, "eval-1-run-0"), (1, 1, "eval-1-run-1")]
    summary = primary["summary"]["eval_fns"]
    assert summary["exact"]["mean"] == 1.0 and summary["exact"]["pass@1"] == 1.0 and summary["exact"]["pass@2"] == 1
    assert summary["turns"]["mean"] == 2.5  # 2 and 3 assistant messages: a number, not only 0/1
    assert summary["broken"]["mean"] == 0.0 and summary["broken"]["pass@1"] == 0.0
    baseline = report["baseline"]["results"]
    assert baseline[0]["rollout_id"] == "eval-0-run-0-baseline"
    calls = endpoint.chat_requests()[before:]
    assert calls and all(c.body["model"] == "base-model" for c in calls)


def test_eval_function_signature_errors(tmp_path, capsys):
    fns = tmp_path / "badfns.py"
    fns.write_text("def score(text, truth):\n    return 1.0\n")
    code = main(["eval", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "--eval-fn", f"{fns}:score"])
    assert code == 1 and "first parameter must be 'solution_str'" in capsys.readouterr().err


def test_pass_at_k_estimator():
    assert pass_at_k(5, 0, 1) == 0.0 and pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)
