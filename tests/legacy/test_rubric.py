"""``evaluate_rubric`` against a local OpenAI-compatible judge on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from osmosis_compat.legacy import rubric
from osmosis_compat.legacy.exceptions import MissingAPIKeyError, ModelNotFoundError, ProviderRequestError
from osmosis_compat.testing.serving import serve_app

sys.path.insert(0, str(Path(__file__).parent))
from fake_judge import create_judge_app  # noqa: E402

RUBRIC = "The answer must name the capital of France."


@pytest.fixture(scope="module")
def judge():
    app = create_judge_app()
    with serve_app(app) as handle:
        handle.requests = app.state.requests
        yield handle


def _info(judge, model, **extra):
    return {"provider": "openai", "model": model, "base_url": judge.url + "/v1", **extra}


def test_legacy_form_returns_the_clamped_score_and_sends_upstreams_prompts(judge):
    judge.requests.clear()
    score = rubric.evaluate_rubric(RUBRIC, "Paris.", _info(judge, "good"), ground_truth="Paris",
                                   original_input="Capital of France?", metadata={"b": 2, "a": 1})
    assert score == 0.8
    body = judge.requests[-1]["body"]
    assert body["model"] == "good" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}  # an unknown model: LiteLLM knows no schema support
    system, user = body["messages"]
    assert system["content"].startswith("You are an impartial reward judge.")
    assert "between 0.0 and 1.0 (inclusive)" in system["content"]
    assert user["content"].split("\n")[:4] == ["Rubric:", RUBRIC, "", "Score range: 0.0 to 1.0."]
    assert "<<<BEGIN_ORIGINAL_INPUT>>>\nCapital of France?\n<<<END_ORIGINAL_INPUT>>>" in user["content"]
    assert "<<<BEGIN_GROUND_TRUTH>>>\nParis\n<<<END_GROUND_TRUTH>>>" in user["content"]
    assert '<<<BEGIN_METADATA>>>\n{\n  "a": 1,\n  "b": 2\n}\n<<<END_METADATA>>>' in user["content"]
    assert judge.requests[-1]["authorization"] == "Bearer none"  # a local judge needs no key


def test_details_clamping_fences_and_custom_range(judge):
    details = rubric.evaluate_rubric(RUBRIC, "Paris", _info(judge, "high", score_min=0, score_max=5),
                                     return_details=True)
    assert details["score"] == 5 and details["explanation"] == "way above"
    assert details["raw"]["choices"][0]["message"]["content"]
    assert rubric.evaluate_rubric(RUBRIC, "Paris", _info(judge, "fenced")) == 0.25
    custom = rubric.evaluate_rubric(RUBRIC, "Paris", _info(judge, "good", system_prompt="Be strict."))
    assert custom == 0.8 and judge.requests[-1]["body"]["messages"][0]["content"].startswith("Be strict.\n\n")


@pytest.mark.parametrize(("model", "error", "text"), [
    ("garbage", ProviderRequestError, "Model response was not valid JSON"),
    ("noscore", ProviderRequestError, "must include a numeric 'score'"),
    ("empty", ProviderRequestError, "did not include any content"),
    ("ratelimited", ProviderRequestError, "judge is rate limited"),
    ("broken", ProviderRequestError, "judge exploded"),
    ("missing", ModelNotFoundError, "Model 'missing' was not found"),
])
def test_judge_failures_raise_the_rubric_errors(judge, model, error, text):
    with pytest.raises(error) as info:
        rubric.evaluate_rubric(RUBRIC, "Paris", _info(judge, model))
    assert text in str(info.value)
    assert info.value.provider == "openai" and info.value.model == model


def test_a_judge_that_times_out(judge):
    with pytest.raises(ProviderRequestError) as info:
        rubric.evaluate_rubric(RUBRIC, "Paris", _info(judge, "slow", timeout=0.3))
    assert "timed out" in str(info.value).lower()


def test_modern_form_is_a_coroutine_returning_rubric_result(judge, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    result = asyncio.run(rubric.evaluate_rubric(solution_str="Paris", rubric=RUBRIC, model="openai/good",
                                                base_url=judge.url + "/v1"))
    assert result == rubric.RubricResult(score=0.8, explanation="mentions Paris")
    assert judge.requests[-1]["authorization"] == "Bearer sk-local"


def test_missing_key_and_bad_arguments(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(rubric.BASE_URL_ENV, raising=False)
    with pytest.raises(MissingAPIKeyError, match="'OPENAI_API_KEY' is not set"):
        rubric.evaluate_rubric(RUBRIC, "Paris", {"provider": "openai", "model": "gpt-4o"})
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="'JUDGE_KEY' is not set"):
        rubric.evaluate_rubric(RUBRIC, "Paris", {"provider": "openai", "model": "gpt-4o", "api_key_env": "JUDGE_KEY"})
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        asyncio.run(rubric.evaluate_rubric(solution_str="x", rubric=RUBRIC, model="claude-3-haiku"))
    with pytest.raises(TypeError, match="solution_str"):
        rubric.evaluate_rubric(RUBRIC, "  ", {"provider": "openai", "model": "gpt-4o", "api_key": "k"})
    with pytest.raises(ValueError, match="score_max"):
        rubric.evaluate_rubric(RUBRIC, "x", {"provider": "openai", "model": "m", "api_key": "k"}, score_min=1,
                               score_max=1)
    with pytest.raises(TypeError, match="model_info"):
        rubric.evaluate_rubric(RUBRIC, "x")


def test_provider_mapping_and_timeouts():
    assert rubric._to_litellm_model("gpt-5.4") == "openai/gpt-5.4"
    assert rubric._to_litellm_model("claude-3-haiku") == "claude-3-haiku"
    assert rubric._to_litellm_model("anthropic/claude-3") == "anthropic/claude-3"
    assert rubric._parse_provider("grok-4") == "xai" and rubric._parse_provider("mystery") is None
    assert rubric._default_timeout_for_model("xai", "grok-4-fast") == 60.0
    assert rubric._default_timeout_for_model("openai", "gpt-5") == 30.0


def test_osmosis_rubric_function_calling_the_judge(judge):
    """What a legacy reward module does: a decorated classic rubric function that asks the judge."""
    from osmosis_compat.legacy.rewards import osmosis_rubric

    @osmosis_rubric
    def score(solution_str: str, ground_truth: str, extra_info: dict) -> float:
        return rubric.evaluate_rubric(RUBRIC, solution_str, _info(judge, "good"), ground_truth=ground_truth)

    assert score("Paris", "Paris", {}) == 0.8


def test_litellm_is_not_imported_by_the_module():
    import subprocess

    code = "import sys, osmosis_ai; osmosis_ai.evaluate_rubric; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

