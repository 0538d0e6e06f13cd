"""The real osmosis-ai 0.3.8 ``evaluate_rubric`` (side venv) and ours, against the same local judge: the judge
must receive the same requests, and both must end the same way (score, or error class and message).

0.2.17's rubric code is not obtainable here (PyPI starts at 0.2.25, no repository is reachable); 0.2.25–0.3.8
ship one and the same engine (``osmosis_ai/eval/rubric/engine.py``), so 0.3.8 is the oracle.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from osmosis_compat.legacy import rubric
from osmosis_compat.testing.serving import serve_app

sys.path.insert(0, str(Path(__file__).parent))
from fake_judge import create_judge_app  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
from upstream.venvs import require_upstream, upstream_env  # noqa: E402

MODELS = ["good", "high", "fenced", "garbage", "noscore", "empty", "ratelimited", "broken", "missing"]
CALL = dict(rubric="Name the capital of France.", solution_str="  Paris is the capital.  ", ground_truth="Paris",
            original_input="What is the capital?", metadata={"z": [1, 2], "a": "x"}, score_min=0.0, score_max=2.0,
            system_prompt="Be terse.")

_SCRIPT = r"""
import asyncio, json, sys
from osmosis_ai import evaluate_rubric
call = json.loads(sys.argv[1])
out = []
for model in json.loads(sys.argv[2]):
    try:
        r = asyncio.run(evaluate_rubric(model="openai/" + model, **call))
        out.append({"score": r.score, "explanation": r.explanation})
    except Exception as exc:
        out.append({"error": type(exc).__name__, "message": str(exc)})
print(json.dumps(out))
"""


def _ours(models):
    out = []
    for model in models:
        try:
            r = asyncio.run(rubric.evaluate_rubric(model="openai/" + model, **CALL))
            out.append({"score": r.score, "explanation": r.explanation})
        except Exception as exc:
            out.append({"error": type(exc).__name__, "message": str(exc)})
    return out


def _comparable(results):
    # LiteLLM's own wording of an HTTP error differs between its versions (0.3.8's venv pins 1.105.7); the
    # judge's message and everything osmosis-ai adds must be equal.
    return [{**r, "message": r["message"].split(" failed. ")[0]} if "error" in r else r for r in results]


def test_same_requests_and_outcomes_as_the_real_0_3_8(monkeypatch):
    python = require_upstream("0.3.8")
    app = create_judge_app()
    with serve_app(app) as judge:
        env = upstream_env("0.3.8", {"OPENAI_API_KEY": "sk-local", "OPENAI_BASE_URL": judge.url + "/v1"})
        proc = subprocess.run([str(python), "-c", _SCRIPT, json.dumps(CALL), json.dumps(MODELS)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        theirs, their_requests = json.loads(proc.stdout.strip().splitlines()[-1]), list(app.state.requests)
        app.state.requests.clear()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        monkeypatch.setenv("OPENAI_BASE_URL", judge.url + "/v1")
        ours, our_requests = _ours(MODELS), list(app.state.requests)
    assert _comparable(ours) == _comparable(theirs)
    for mine, real in zip(ours, theirs):
        if "error" in real:
            assert real["message"].split(" failed. ")[1].split(":")[0] in mine["message"]
    assert [r["body"] for r in our_requests] == [r["body"] for r in their_requests]
    assert [r["authorization"] for r in our_requests] == [r["authorization"] for r in their_requests]
    assert ours[0] == {"score": 0.8, "explanation": "mentions Paris"} and ours[1]["score"] == 2.0
