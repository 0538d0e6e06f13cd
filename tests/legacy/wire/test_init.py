"""POST /v1/rollout/init, /health and /platform/health at the HTTP level (spec/legacy-protocol.md §1.2)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.legacy.wire.conftest import prompt, serving
from tests.legacy.wire.loops import ADD_TOOL, AsyncTools, RaisingTools, SlowLoop, ToolLoop


def init_body(server_url: str = "http://127.0.0.1:9/", **overrides):
    body = {"rollout_id": "r1", "server_url": server_url, "messages": prompt(), "completion_params": {}}
    body.update(overrides)
    return body


def post_init(server, body, **kwargs):
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
    return httpx.post(server.url + "/v1/rollout/init", content=content, headers=headers, timeout=5)


@pytest.fixture(scope="module")
def slow_server():
    """A server whose agent never calls back on its own: init answers are all we look at here."""
    loop = SlowLoop()
    with serving(loop, api_key="secret-key") as server:
        yield server


def _detail(response):
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    return detail


@pytest.mark.parametrize(
    ("body", "loc", "message"),
    [
        ({"rollout_id": ""}, ["body", "rollout_id"], "at least 1 character"),
        ({"rollout_id": "   "}, ["body", "rollout_id"], "rollout_id cannot be empty or whitespace only"),
        ({"rollout_id": "x" * 257}, ["body", "rollout_id"], "at most 256 characters"),
        ({"rollout_id": 5}, ["body", "rollout_id"], "valid string"),
        ({"server_url": "ftp://host/x"}, ["body", "server_url"], "server_url must use http or https scheme"),
        ({"server_url": "http://"}, ["body", "server_url"], "server_url must have a valid host"),
        ({"messages": "hi"}, ["body", "messages"], "valid list"),
        ({"messages": ["hi"]}, ["body", "messages", 0], "valid dictionary"),
        ({"max_turns": "many"}, ["body", "max_turns"], "valid integer"),
        ({"metadata": {"blob": "x" * (1024 * 1024 + 10)}}, ["body", "metadata"], "metadata size exceeds maximum allowed size of 1MB"),
    ],
)
def test_bad_bodies_answer_422_with_details(slow_server, body, loc, message):
    detail = _detail(post_init(slow_server, init_body(**body), headers={"Authorization": "Bearer secret-key"}))
    assert detail[0]["loc"] == loc
    assert message in detail[0]["msg"]


def test_missing_required_fields_are_each_reported(slow_server):
    detail = _detail(post_init(slow_server, {}, headers={"Authorization": "Bearer secret-key"}))
    assert {tuple(d["loc"]) for d in detail} == {
        ("body", "rollout_id"), ("body", "server_url"), ("body", "messages"), ("body", "completion_params")
    }
    assert all(d["type"] == "missing" for d in detail)


def test_malformed_json_answers_422(slow_server):
    detail = _detail(post_init(slow_server, b'{"rollout_id": "r1",', headers={"Authorization": "Bearer secret-key"}))
    assert detail[0]["type"] == "json_invalid"


def test_body_validation_comes_before_auth(slow_server):
    assert post_init(slow_server, {"rollout_id": "r1"}).status_code == 422


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearer", "Bearer secret-key extra", "Basic secret-key"])
def test_missing_or_wrong_key_answers_401(slow_server, header):
    headers = {"Authorization": header} if header is not None else {}
    response = post_init(slow_server, init_body(rollout_id="auth-" + str(header)), headers=headers)
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid or missing API key"}


@pytest.mark.parametrize("header", ["Bearer secret-key", "bearer   secret-key", "secret-key", "Bearer  secret-key"])
def test_accepted_key_forms(slow_server, header):
    response = post_init(slow_server, init_body(rollout_id="ok-" + header.strip()), headers={"Authorization": header})
    assert response.status_code == 202


def test_init_response_shape_and_whole_tool_schemas():
    rich_tool = {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                    "filters": {"type": "object", "properties": {"year": {"type": "integer", "minimum": 1900}}},
                    "mode": {"type": "string", "enum": ["fast", "deep"]},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }
    loop = ToolLoop()
    loop.tools = [ADD_TOOL, rich_tool]
    with serving(loop) as server:
        response = post_init(server, init_body(rollout_id="shape"))
    assert response.status_code == 202
    body = response.json()
    assert body["rollout_id"] == "shape"
    add, search = body["tools"]
    assert add == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": None, "enum": None},
                    "b": {"type": "number", "description": None, "enum": None},
                },
                "required": ["a", "b"],
            },
            "strict": False,
        },
    }
    params = search["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert params["properties"]["tags"]["items"] == {"type": "string"}
    assert params["properties"]["tags"]["default"] == []
    assert params["properties"]["filters"]["properties"]["year"]["minimum"] == 1900
    assert params["properties"]["mode"]["enum"] == ["fast", "deep"]


def test_get_tools_raising_answers_500_and_starts_no_rollout(gate):
    RaisingTools.runs = 0
    with serving(RaisingTools()) as server:
        response = post_init(server, init_body(server_url=gate.url, rollout_id="rt"))
        health = httpx.get(server.url + "/health").json()
    assert response.status_code == 500
    assert "tool registry offline" in response.json()["detail"]
    assert RaisingTools.runs == 0
    assert health["active_rollouts"] == 0 and health["completed_rollouts"] == 0
    assert gate.callbacks("rt") == []


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        ("not a list", "list"),
        ([{"type": "function", "function": {"name": "x"}}], "description"),
        ([{"type": "function"}], "function"),
        ([42], "0"),
    ],
)
def test_invalid_tool_list_answers_500_and_starts_no_rollout(gate, tools, problem):
    loop = ToolLoop()
    loop.tools = tools
    with serving(loop) as server:
        response = post_init(server, init_body(server_url=gate.url, rollout_id="bad-tools"))
        health = httpx.get(server.url + "/health").json()
    assert response.status_code == 500
    assert problem in response.json()["detail"]
    assert health["active_rollouts"] == 0 and health["completed_rollouts"] == 0


async def test_async_get_tools_is_awaited(gate):
    with serving(AsyncTools()) as server:
        record = await gate.run_rollout(server.url, rollout_id="async-tools", messages=prompt())
    assert [t["function"]["name"] for t in record.tools] == ["add"]
    assert record.status == "COMPLETED"


def test_health_bodies(slow_server):
    body = httpx.get(slow_server.url + "/health").json()
    legacy = {"status", "agent_loop", "active_rollouts", "completed_rollouts"}
    polling = {"concurrency", "instance_id", "process_id", "lifecycle"}  # what a 0.3.8 controller reads
    assert set(body) == legacy | polling
    assert body["status"] == "healthy" and body["agent_loop"] == "slow"
    assert body["concurrency"]["max_concurrent"] == 100  # the legacy default (settings.server)
    assert body["lifecycle"]["accepting_rollouts"] is True
    assert body["lifecycle"]["active_rollouts"] == body["active_rollouts"]


def test_platform_health_needs_the_key(slow_server):
    assert httpx.get(slow_server.url + "/platform/health").status_code == 401
    ok = httpx.get(slow_server.url + "/platform/health", headers={"Authorization": "Bearer secret-key"})
    assert ok.status_code == 200 and ok.json()["status"] == "healthy"


def test_platform_health_is_404_without_server_key():
    with serving(ToolLoop()) as server:
        response = httpx.get(server.url + "/platform/health")
    assert response.status_code == 404 and response.json() == {"detail": "Not found"}


def test_duplicates_get_the_leaders_response_and_start_nothing():
    with serving(SlowLoop()) as server:
        first = post_init(server, init_body(rollout_id="dup", idempotency_key="k1"))
        again = post_init(server, init_body(rollout_id="dup", idempotency_key="k1"))
        other_id = post_init(server, init_body(rollout_id="dup-2", idempotency_key="k1"))
        # an empty idempotency key counts as absent: keyed by rollout_id
        a = post_init(server, init_body(rollout_id="plain", idempotency_key=""))
        b = post_init(server, init_body(rollout_id="plain"))
        # same rollout_id, different idempotency keys: two independent rollouts (upstream behaviour)
        c = post_init(server, init_body(rollout_id="twice", idempotency_key="x"))
        d = post_init(server, init_body(rollout_id="twice", idempotency_key="y"))
        active = httpx.get(server.url + "/health").json()["active_rollouts"]
    assert {r.status_code for r in (first, again, other_id, a, b, c, d)} == {202}
    assert first.json() == again.json() == other_id.json()
    assert other_id.json()["rollout_id"] == "dup"
    assert a.json() == b.json()
    assert c.json() == d.json()
    assert active == 4  # k1, plain, x, y
