"""Conformance with today's controller, osmosis-ai 0.3.8, using the real package as the oracle (issue 11, item 5).

1. The real 0.3.8 ``RolloutClient`` (side venv, tests/upstream/scripts/rollout_client_driver.py) drives the
   project's servers: an unchanged legacy file, 0.2.31 workflows, workflows written for 0.3, and the edges
   (409, 403, 404, 422, cancel, lease expiry, deadline, ``grade: false``). The client validates every answer with
   its own types, so anything 0.3.8 would reject fails here.
2. Differential: one 0.3-API entrypoint (tests/upstream/entrypoints/steered_03.py) is served by the real 0.3.8
   server and by osmosis-compat, and the same scenarios — driven by the project's fake 0.3.8 controller — must
   observe the same thing from both. This also proves the fake controller against the reference.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_compat.cli.loading import _import_file
from osmosis_compat.testing import FakePollingController, ScriptedPolicy, serve_app
from osmosis_compat.testing.recording import UnexpectedStatus
from tests.upstream.servers import UpstreamServer
from tests.upstream.venvs import require_upstream, upstream_env

pytestmark = pytest.mark.upstream

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).parent / "scripts" / "rollout_client_driver.py"
STEERED = Path(__file__).parent / "entrypoints" / "steered_03.py"
RELEASE = "0.3.8"
PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]
CALC = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "Compute (2 + 3) * 4"}]


def drive(server_url: str, chat_url: str, cases: list[dict[str, Any]], server_key: str | None = None) -> dict[str, Any]:
    """Run the real RolloutClient over ``cases``; returns what it saw per case name."""
    python = require_upstream(RELEASE)
    spec = {"server": server_url, "chat": chat_url, "server_key": server_key, "cases": cases}
    done = subprocess.run(
        [str(python), str(DRIVER)], input=json.dumps(spec), capture_output=True, text=True, timeout=240, env=upstream_env(RELEASE)
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"driver failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@contextmanager
def chat_endpoint():
    """The LLM side: the fake controller's per-rollout chat routes (keys are handed out by the real client here,
    so the fake records them instead of checking)."""
    controller = FakePollingController(ScriptedPolicy(), check_keys=False)
    with controller.serve():
        yield controller


def assert_ok(seen: dict[str, Any], name: str) -> dict[str, Any]:
    case = seen[name]
    assert case["ok"], f"{name}: {case}"
    return case


# -- 1. the real RolloutClient drives our servers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("entrypoint", "messages", "label"),
    [
        ("examples/legacy/calculator_agent.py", CALC, "20"),  # unchanged legacy file: app = create_app(agent_loop)
        ("examples/modern/strands_calculator.py", CALC, "20"),  # 0.2.31
        ("examples/modern/openai_agents_calculator.py", CALC, "20"),  # 0.2.31
        ("examples/modern/v03/strands_calculator.py", CALC, "20"),  # written for 0.3
        ("examples/modern/v03/openai_agents_calculator.py", CALC, "20"),  # written for 0.3
    ],
)
def test_real_rollout_client_runs_every_kind_of_agent(entrypoint: str, messages: list, label: str) -> None:
    app = _import_file(str(ROOT / entrypoint)).app
    with chat_endpoint() as chat, serve_app(app) as server:
        seen = drive(
            server.url,
            chat.require_url(),
            [
                {"name": "one", "kind": "run", "rollout_id": "k-1", "messages": messages, "label": label},
                {"name": "many", "kind": "run_many", "rollout_id": "k-m", "count": 4, "messages": messages, "label": label},
                {"name": "ungraded", "kind": "run", "rollout_id": "k-g", "messages": messages, "label": label, "grade": False},
                {"name": "health", "kind": "health"},
            ],
        )
        calls = chat.chat_requests()
    one = assert_ok(seen, "one")
    assert one["first_status"] == "queued"
    assert one["result"]["status"] == "success" and one["result"]["sample"]["reward"] == 1.0, one
    assert all(r["status"] == "success" and r["sample"]["reward"] == 1.0 for r in assert_ok(seen, "many")["results"])
    ungraded = assert_ok(seen, "ungraded")["result"]
    assert ungraded["status"] == "success" and ungraded["sample"]["reward"] is None and ungraded["sample"]["messages"]
    health = assert_ok(seen, "health")
    assert health["idle_process"] == health["health"]["process_id"]
    # every model call went to its rollout's own URL with the key the client handed that rollout
    assert calls
    for call in calls:
        assert call.path == f"/v1/rollouts/{call.rollout_id}/chat/completions"
        assert call.headers["authorization"] == f"Bearer key-{call.rollout_id}"
        assert "x-rollout-id" not in call.headers


def test_real_rollout_client_edges() -> None:
    module = _import_file(str(ROOT / "tests/server/polling_agents.py"))
    app = module.steered_app(result_wait_timeout_sec=0.5, polling_lease_timeout_sec=1.0)
    with chat_endpoint() as chat, serve_app(app) as server:
        seen = drive(
            server.url,
            chat.require_url(),
            [
                {"name": "dup", "kind": "duplicate", "rollout_id": "e-dup", "messages": PROMPT, "label": "4", "metadata": {"sleep": 0.5}},
                {"name": "cancel", "kind": "cancel", "rollout_id": "e-cancel", "messages": PROMPT, "metadata": {"sleep": 10}},
                {"name": "leases", "kind": "leases", "rollout_id": "e-lease", "messages": PROMPT, "metadata": {"sleep": 10}, "idle": 2.0},
                {"name": "deadline", "kind": "run", "rollout_id": "e-dl", "messages": PROMPT, "label": "4", "metadata": {"sleep": 10}, "agent_timeout_sec": 0.3},
                {"name": "fails", "kind": "run", "rollout_id": "e-fail", "messages": PROMPT, "label": "4", "metadata": {"fail": True}},
                {"name": "slash", "kind": "bad_request", "rollout_id": "e-bad", "messages": PROMPT, "change": {"rollout_id": "a/b"}},
                {"name": "empty_key", "kind": "bad_request", "rollout_id": "e-bad", "messages": PROMPT, "change": {"llm_api_key": ""}},
                {"name": "no_url", "kind": "bad_request", "rollout_id": "e-bad", "messages": PROMPT, "change": {}, "drop": ["chat_completions_url"]},
            ],
        )
    dup = assert_ok(seen, "dup")
    assert dup["second"]["status_code"] == 409 and dup["first"]["status"] == "success"
    cancel = assert_ok(seen, "cancel")
    assert cancel["dispositions"] == {"e-cancel": "cancelled_running"} and cancel["again"] == {"e-cancel": "not_found"}
    assert cancel["result"] == {"rollout_id": "e-cancel", "status": "cancelled", "sample": None, "err_message": "cancelled", "err_category": None}
    leases = assert_ok(seen, "leases")
    assert leases["admission_status"] == 202
    assert leases["wrong"] == [403, {"detail": "invalid polling lease"}]
    assert leases["unknown"] == [404, {"detail": "unknown rollout_id"}]
    assert leases["missing"] == [422, [["header", "X-Osmosis-Rollout-Lease"]]]
    assert leases["late"]["status"] == "failure" and leases["late"]["err_category"] == "lease_expired"
    deadline = assert_ok(seen, "deadline")["result"]
    assert (deadline["status"], deadline["err_category"]) == ("failure", "timeout")
    fails = assert_ok(seen, "fails")["result"]
    assert (fails["status"], fails["err_category"], fails["err_message"]) == ("failure", "agent_error", "asked to fail")
    for name in ("slash", "empty_key", "no_url"):
        assert assert_ok(seen, name)["status_code"] == 422, seen[name]


def test_real_rollout_client_with_a_server_key() -> None:
    module = _import_file(str(ROOT / "tests/server/polling_agents.py"))
    with chat_endpoint() as chat, serve_app(module.steered_app(api_key="srv")) as server:
        seen = drive(
            server.url,
            chat.require_url(),
            [{"name": "one", "kind": "run", "rollout_id": "a-1", "messages": PROMPT, "label": "4"}],
            server_key="srv",
        )
        denied = drive(
            server.url, chat.require_url(), [{"name": "one", "kind": "run", "rollout_id": "a-2", "messages": PROMPT}]
        )
    assert assert_ok(seen, "one")["result"]["status"] == "success"
    assert denied["one"]["status_code"] == 401


# -- 2. differential: the real 0.3.8 server and ours, same entrypoint, same scenarios -------------------------

Scenario = Callable[[str, FakePollingController], Awaitable[Any]]


async def _run(url: str, c: FakePollingController, rid: str, **kw: Any) -> dict[str, Any]:
    record = await c.run_rollout(url, rollout_id=rid, initial_messages=PROMPT, **kw)
    return record.result


async def scenario_graded(url: str, c: FakePollingController) -> Any:
    record = await c.run_rollout(url, rollout_id="d-graded", initial_messages=PROMPT, label="4", metadata={"chat": True, "reward": 0.5})
    calls = c.chat_requests("d-graded")
    return {
        "result": record.result,
        "first_status": record.statuses[0],
        "chat": [(r.path, r.headers["authorization"] == f"Bearer {record.admission.llm_api_key}") for r in calls],
    }


async def scenario_ungraded(url: str, c: FakePollingController) -> Any:
    return await _run(url, c, "d-ungraded", label="4", grade=False)


async def scenario_nothing_to_grade(url: str, c: FakePollingController) -> Any:
    result = await _run(url, c, "d-nothing")
    # osmosis-compat adds a message saying why (0.3.8 sends null); status, sample and category agree
    return {k: result[k] for k in ("rollout_id", "status", "sample", "err_category")}


async def scenario_failure(url: str, c: FakePollingController) -> Any:
    return await _run(url, c, "d-fail", label="4", metadata={"fail": True})


async def scenario_deadline(url: str, c: FakePollingController) -> Any:
    return await _run(url, c, "d-deadline", label="4", metadata={"sleep": 5}, agent_timeout_sec=0.3)


async def scenario_grader_deadline(url: str, c: FakePollingController) -> Any:
    return await _run(url, c, "d-gdeadline", label="4", metadata={"grader_sleep": 5}, grader_timeout_sec=0.3)


async def scenario_duplicate(url: str, c: FakePollingController) -> Any:
    first = await c.admit(url, rollout_id="d-dup", initial_messages=PROMPT, metadata={"sleep": 0.3})
    try:
        await c.admit(url, rollout_id="d-dup", initial_messages=PROMPT)
        second: Any = "admitted"
    except UnexpectedStatus as exc:
        second = (exc.status_code, exc.body)
    result, _, _ = await c.wait_for_result(url, first)
    try:
        await c.admit(url, rollout_id="d-dup", initial_messages=PROMPT)
        retained: Any = "admitted"
    except UnexpectedStatus as exc:
        retained = (exc.status_code, exc.body)
    return {"second": second, "retained": retained, "status": result["status"]}


async def scenario_leases(url: str, c: FakePollingController) -> Any:
    admission = await c.admit(url, rollout_id="d-lease", initial_messages=PROMPT, metadata={"sleep": 10})
    wrong = await c.poll(url, admission, lease_token="nope")
    async with httpx.AsyncClient() as client:
        unknown = await client.get(f"{url}/rollout/never/result", headers={"X-Osmosis-Rollout-Lease": "x"})
        missing = await client.get(f"{url}/rollout/d-lease/result")
    await asyncio.sleep(1.6)  # lease 1.0 s, unpolled
    late = await c.poll(url, admission)
    return {
        "wrong": (wrong.status_code, wrong.json()),
        "unknown": (unknown.status_code, unknown.json()),
        "missing": (missing.status_code, [e["loc"] for e in missing.json()["detail"]]),
        "late": (late.status_code, late.json()),
        "admission": {k: admission.body[k] for k in ("rollout_id", "status", "result_wait_timeout_sec", "polling_lease_timeout_sec")},
    }


async def scenario_wait(url: str, c: FakePollingController) -> Any:
    admission = await c.admit(url, rollout_id="d-wait", initial_messages=PROMPT, metadata={"sleep": 5})
    await asyncio.sleep(0.2)
    first = (await c.poll(url, admission)).json()  # nothing changes within the 0.5 s wait: the current status
    await c.cancel(url, ids=["d-wait"])
    return first


async def scenario_cancel(url: str, c: FakePollingController) -> Any:
    admissions = [await c.admit(url, rollout_id=rid, initial_messages=PROMPT, metadata={"sleep": 10}) for rid in ("d-c1", "d-c2", "d-x")]
    await asyncio.sleep(0.2)
    responses = [
        await c.cancel(url, ids=["d-c1", "d-none"]),
        await c.cancel(url, prefix="d-c"),
        await c.cancel(url),  # no selector
        await c.cancel(url, ids=["d-x"], all=True),  # two selectors
        await c.cancel(url, all=True),
    ]
    dispositions = [(r.status_code, r.json()) for r in responses]
    # "all" also lists every retained rollout of earlier scenarios: keep this scenario's own
    status, body = dispositions[-1]
    dispositions[-1] = (status, {k: v for k, v in body["dispositions"].items() if k.startswith(("d-c", "d-x"))})
    results = [(await c.poll(url, a)).json() for a in admissions]
    return {"dispositions": dispositions, "results": results}


async def scenario_bad_bodies(url: str, c: FakePollingController) -> Any:
    out = []
    changes: list[dict[str, Any]] = [
        {"rollout_id": "a/b"},
        {"rollout_id": ".."},
        {"llm_api_key": ""},
        {"chat_completions_url": None},
        {"initial_messages": None},
        {"agent_timeout_sec": "NaN"},
        {"grade": "maybe"},
    ]
    async with httpx.AsyncClient() as client:
        for change in changes:
            body = c.rollout_body(rollout_id="d-bad", initial_messages=PROMPT, llm_api_key="k")
            body.update(change)
            body = {k: v for k, v in body.items() if not (k in change and v is None)}  # None here = left out
            response = await client.post(f"{url}/rollout", json=body)
            detail = response.json().get("detail")
            out.append((response.status_code, sorted(tuple(e["loc"]) for e in detail) if isinstance(detail, list) else detail))
    return out


async def scenario_health(url: str, c: FakePollingController) -> Any:
    async with httpx.AsyncClient() as client:
        health = (await client.get(f"{url}/health")).json()
    return {
        "keys": sorted(health),
        "lifecycle": sorted(health["lifecycle"]),
        "concurrency": sorted(health["concurrency"]),
        "same_id": health["instance_id"] == health["process_id"],
    }


SCENARIOS: list[Scenario] = [
    scenario_graded,
    scenario_ungraded,
    scenario_nothing_to_grade,
    scenario_failure,
    scenario_deadline,
    scenario_grader_deadline,
    scenario_duplicate,
    scenario_leases,
    scenario_wait,
    scenario_cancel,
    scenario_bad_bodies,
    scenario_health,
]

SETTINGS = {"STEERED_WAIT": "0.5", "STEERED_LEASE": "1.0", "STEERED_RETENTION": "60"}


async def _observe(url: str) -> dict[str, Any]:
    controller = FakePollingController(ScriptedPolicy())
    observed: dict[str, Any] = {}
    async with controller.serve_async():
        for scenario in SCENARIOS:
            observed[scenario.__name__] = await scenario(url, controller)
    await controller.aclose()
    return observed


@pytest.fixture(scope="module")
def upstream_observations() -> dict[str, Any]:
    with UpstreamServer(STEERED, RELEASE, env=SETTINGS) as server:
        return asyncio.run(_observe(server.url))


@pytest.fixture(scope="module")
def our_observations() -> dict[str, Any]:
    saved = {k: os.environ.get(k) for k in SETTINGS}
    os.environ.update(SETTINGS)
    try:
        app = _import_file(str(STEERED)).app
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    with serve_app(app) as server:
        return asyncio.run(_observe(server.url))


@pytest.mark.parametrize("scenario", [s.__name__ for s in SCENARIOS])
def test_osmosis_compat_observes_what_the_real_server_does(
    scenario: str, upstream_observations: dict[str, Any], our_observations: dict[str, Any]
) -> None:
    assert our_observations[scenario] == upstream_observations[scenario]
