"""Issue 12 item 1: bad input gets a 4xx — never a 500, never an accepted-then-silent rollout — on every route that
starts a rollout (legacy init, 0.2.31 callbacks, 0.3.8 polling; single-agent and mixed servers), and a 422 never
echoes a key back. Real uvicorn servers on 127.0.0.1, real httpx, bodies written as raw JSON text (``NaN``,
``Infinity`` and ``\\ud800`` escapes are what a Python controller's ``json.dumps`` can produce).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import dataclasses

import httpx
import pytest

from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY, set_workflow_callback_policy
from osmosis_compat.runtime.retry import Backoff

from osmosis_compat.server.agents import AgentSpec
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.server.mixed_app import create_mixed_app
from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app
from osmosis_compat.workflow import LocalBackend
from tests.legacy.wire.conftest import fast_settings, prompt
from tests.legacy.wire.loops import ToolLoop
from tests.server import polling_agents
from tests.server.polling_agents import SteeredGrader, SteeredWorkflow, steered_app

SECRET = "SECRET-do-not-echo-7f3a"
DEAD_URL = "http://127.0.0.1:9"  # nothing listens: an admitted rollout would have to fail, loudly or silently


class RecordingLoop(ToolLoop):
    """Records every rollout whose init got as far as ``get_tools`` (i.e. was admitted)."""

    name = "recording"
    admitted: list[str] = []

    def get_tools(self, request: Any) -> list:
        type(self).admitted.append(request.rollout_id)
        return super().get_tools(request)


class LoggingLoop(ToolLoop):
    """Writes a debug event per rollout (what `serve --log DIR` records)."""

    name = "logging"

    async def run(self, ctx: Any) -> Any:
        ctx.log_event("start", turns=ctx.request.max_turns)
        return await super().run(ctx)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    # Rollouts the fuzz test gets admitted fail against DEAD_URL: let their callback retries end quickly.
    set_workflow_callback_policy(dataclasses.replace(WORKFLOW_CALLBACK_POLICY, backoff=Backoff(0.001, 0.004)))
    legacy = create_app(RecordingLoop(), settings=fast_settings(), drain_timeout_seconds=0.1)
    mixed = create_mixed_app(
        [
            AgentSpec(name="calc", loop=RecordingLoop(), expose="both"),
            AgentSpec(name="wf", backend=LocalBackend(workflow=SteeredWorkflow, grader=SteeredGrader)),
        ],
        default="calc",
        drain_timeout_seconds=0.1,
    )
    with serve_app(legacy) as legacy_server, serve_app(steered_app(drain_timeout_seconds=0.2)) as workflow_server, serve_app(mixed) as mixed_server:
        yield {"legacy": legacy_server.url, "workflow": workflow_server.url, "mixed": mixed_server.url}
    set_workflow_callback_policy(None)


_ids = itertools.count()


def fresh(prefix: str) -> str:
    """A rollout id no other test uses (one path segment, so every protocol accepts it)."""
    return f"{prefix}-{next(_ids)}"


def legacy_body(rollout_id: str) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "server_url": DEAD_URL, "messages": prompt(), "completion_params": {}}


def callback_body(rollout_id: str) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "initial_messages": prompt(),
        "chat_completions_url": DEAD_URL + "/v1",
        "completion_callback_url": DEAD_URL + "/callback/completion",
        "grader_callback_url": DEAD_URL + "/callback/grader",
    }


def polling_body(rollout_id: str) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "initial_messages": prompt(), "chat_completions_url": DEAD_URL + "/v1"}


#: (name, server, path, body kind): every route of the three servers that starts a rollout.
ENDPOINTS = [
    ("legacy-init", "legacy", "/v1/rollout/init", "legacy"),
    ("legacy-polling", "legacy", "/rollout", "polling"),
    ("workflow-callbacks", "workflow", "/rollout", "callback"),
    ("workflow-polling", "workflow", "/rollout", "polling"),
    ("mixed-legacy", "mixed", "/agents/calc/v1/rollout/init", "legacy"),
    ("mixed-root-legacy", "mixed", "/v1/rollout/init", "legacy"),
    ("mixed-adapted-callbacks", "mixed", "/agents/calc/rollout", "callback"),
    ("mixed-workflow-callbacks", "mixed", "/agents/wf/rollout", "callback"),
    ("mixed-workflow-polling", "mixed", "/agents/wf/rollout", "polling"),
]
BODIES = {"legacy": legacy_body, "callback": callback_body, "polling": polling_body}
WORKFLOW_KINDS = ("callback", "polling")


def endpoints(*kinds: str) -> list[Any]:
    return [pytest.param(server, path, kind, id=name) for name, server, path, kind in ENDPOINTS if kind in kinds]


def raw_body(body: dict[str, Any], **raw_fields: str) -> bytes:
    """``body`` as JSON text with ``raw_fields`` spliced in verbatim (``NaN``, ``"x\\ud800y"`` …)."""
    text = json.dumps({k: v for k, v in body.items() if k not in raw_fields})[:-1]
    for name, raw in raw_fields.items():
        text += f', "{name}": {raw}'
    return (text + "}").encode("utf-8")


def strict_json(text: str) -> Any:
    """Parse ``text`` as RFC 8259 JSON: NaN/Infinity are refused (a peer's strict parser would refuse them too)."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {constant} in the answer: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


_client = httpx.Client(timeout=10)


def post(servers: dict[str, str], server: str, path: str, content: bytes, **headers: str) -> httpx.Response:
    return _client.post(servers[server] + path, content=content, headers={"Content-Type": "application/json", **headers})


def assert_422(response: httpx.Response, *, field: str | None = None) -> list[dict[str, Any]]:
    assert response.status_code == 422, (response.status_code, response.text)
    response.content.decode("utf-8")  # encodable as UTF-8 …
    detail = strict_json(response.text)["detail"]  # … and strict JSON
    assert isinstance(detail, list) and detail
    assert SECRET not in response.text
    if field is not None:
        assert any(entry["loc"][:2] == ["body", field] for entry in detail), detail
    return detail


def never_started(rollout_id: str) -> None:
    assert rollout_id not in RecordingLoop.admitted
    assert rollout_id not in polling_agents.started


# -- NaN / Infinity -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "raw"), [
    ("max_turns", "Infinity"), ("max_turns", "NaN"), ("max_turns", "-Infinity"), ("max_tokens_total", "NaN"),
    ("max_turns", "1e400"), ("completion_params", '{"temperature": NaN}'),
    ("messages", '[{"role": "user", "content": "hi", "weight": Infinity}]'),
])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy"))
def test_non_finite_numbers_in_legacy_fields_are_422(servers, server, path, kind, field, raw):
    rollout_id = fresh("nan")
    content = raw_body(legacy_body(rollout_id), **{field: raw})
    detail = assert_422(post(servers, server, path, content), field=field)
    assert not any(isinstance(entry.get("input"), float) for entry in detail)
    never_started(rollout_id)


@pytest.mark.parametrize(("field", "raw"), [
    ("label", "NaN"), ("agent_timeout_sec", "Infinity"), ("grader_timeout_sec", "-Infinity"), ("grade", "NaN"),
    ("rollout_id", "NaN"), ("initial_messages", '[{"role": "user", "content": "hi", "score": NaN}]'),
])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints(*WORKFLOW_KINDS))
def test_non_finite_numbers_in_workflow_fields_are_422(servers, server, path, kind, field, raw):
    rollout_id = fresh("nan")
    content = raw_body(BODIES[kind](rollout_id), **{field: raw})
    assert_422(post(servers, server, path, content), field=field)
    never_started(rollout_id)


def test_the_422_shows_non_finite_input_as_text(servers):
    detail = assert_422(post(servers, "legacy", "/v1/rollout/init", raw_body(legacy_body("shape"), max_turns="NaN")))
    assert detail == [
        {"type": "finite_number", "loc": ["body", "max_turns"], "msg": "Input should be a finite number", "input": "NaN"}
    ]


# -- lone surrogates ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy", *WORKFLOW_KINDS))
def test_a_lone_surrogate_in_rollout_id_is_422(servers, server, path, kind):
    content = raw_body(BODIES[kind]("unused"), rollout_id='"x\\ud800y"')
    detail = assert_422(post(servers, server, path, content), field="rollout_id")
    assert "\\ud800" in json.dumps(detail)  # shown escaped, so the caller sees what was wrong
    never_started("x\ud800y")


@pytest.mark.parametrize(("field", "raw"), [
    ("idempotency_key", '"k\\udc00"'),
    ("messages", '[{"role": "user", "content": "broken \\ud83d half"}]'),
    ("completion_params", '{"stop": ["\\ud800"]}'),
    ("metadata", '{"\\ud800": 1}'),
])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy"))
def test_lone_surrogates_elsewhere_in_a_legacy_body_are_422(servers, server, path, kind, field, raw):
    rollout_id = fresh("surrogate")
    assert_422(post(servers, server, path, raw_body(legacy_body(rollout_id), **{field: raw})), field=field)
    never_started(rollout_id)


@pytest.mark.parametrize(("field", "raw"), [
    ("label", '"\\ud800"'),  # was 202: the label comes back in the polling result, which then could not be encoded
    ("initial_messages", '[{"role": "user", "content": "\\udfff"}]'),
    ("metadata", '{"note": "\\ud800"}'),
])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints(*WORKFLOW_KINDS))
def test_lone_surrogates_elsewhere_in_a_workflow_body_are_422(servers, server, path, kind, field, raw):
    rollout_id = fresh("surrogate")
    assert_422(post(servers, server, path, raw_body(BODIES[kind](rollout_id), **{field: raw})), field=field)
    never_started(rollout_id)


@pytest.mark.parametrize("body", [b'{"ids": ["\\ud800"]}', b'{"prefix": "a\\udfffb"}', b'{"ids": [NaN]}'])
@pytest.mark.parametrize("server,path", [("workflow", "/rollout/cancel"), ("legacy", "/rollout/cancel"),
                                         ("mixed", "/agents/wf/rollout/cancel")])
def test_cancel_selectors_that_cannot_be_echoed_are_422(servers, server, path, body):
    assert_422(post(servers, server, path, body))


# -- keys and URLs the server will send on -------------------------------------------------------------------------


HEADER_UNSAFE_KEYS = [f"k\u00e9y-{SECRET}", f"{SECRET}\r\nX-Injected: 1", f"{SECRET}\t", f"{SECRET}\n", f" {SECRET}"]


@pytest.mark.parametrize("key", HEADER_UNSAFE_KEYS, ids=["non-ascii", "crlf", "trailing-tab", "lf", "leading-space"])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy"))
def test_a_legacy_callback_key_that_cannot_be_a_header_is_422(servers, server, path, kind, key):
    rollout_id = fresh("key")
    body = dict(legacy_body(rollout_id), api_key=key)
    detail = assert_422(post(servers, server, path, json.dumps(body).encode()), field="api_key")
    assert [entry["input"] for entry in detail] == ["[redacted]"]
    never_started(rollout_id)


@pytest.mark.parametrize("field", ["controller_api_key", "llm_api_key"])
@pytest.mark.parametrize("key", HEADER_UNSAFE_KEYS, ids=["non-ascii", "crlf", "trailing-tab", "lf", "leading-space"])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints(*WORKFLOW_KINDS))
def test_a_controller_key_that_cannot_be_a_header_is_422(servers, server, path, kind, key, field):
    rollout_id = fresh("key")
    body = dict(BODIES[kind](rollout_id), **{field: key})
    detail = assert_422(post(servers, server, path, json.dumps(body).encode()), field=field)
    assert [entry["input"] for entry in detail] == ["[redacted]"]
    never_started(rollout_id)


BAD_URLS = [
    "http://127.0.0.1:9/\r\nX-Injected: 1", "http://127.0.0.1:9/a b", "http://127.0.0.1:9/\t", " http://127.0.0.1:9",
    "http://127.0.0.1:99999/", "http://127.0.0.1:port/", "http://:80/", "http://user@/x",
]


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy"))
def test_a_server_url_no_request_could_use_is_422(servers, server, path, kind, url):
    rollout_id = fresh("url")
    body = dict(legacy_body(rollout_id), server_url=url)
    assert_422(post(servers, server, path, json.dumps(body).encode()), field="server_url")
    never_started(rollout_id)


@pytest.mark.parametrize("field", ["completion_callback_url", "grader_callback_url"])
@pytest.mark.parametrize("url", BAD_URLS[:4])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("callback"))
def test_a_callback_url_no_request_could_use_is_422(servers, server, path, kind, url, field):
    rollout_id = fresh("cb")
    body = dict(callback_body(rollout_id), **{field: url})
    assert_422(post(servers, server, path, json.dumps(body).encode()), field=field)
    never_started(rollout_id)


BAD_CHAT_URLS = ["", "   ", "localhost:8000", "http://", "https:///v1", "ftp://127.0.0.1/v1", "/v1",
                 "127.0.0.1:9/v1", "http://127.0.0.1:9/v1\r\n", "http://127.0.0.1:bad/v1"]


@pytest.mark.parametrize("url", BAD_CHAT_URLS)
@pytest.mark.parametrize(("server", "path", "kind"), endpoints(*WORKFLOW_KINDS))
def test_an_empty_or_malformed_chat_completions_url_is_422(servers, server, path, kind, url, monkeypatch):
    # Before: an empty URL let the integrations fall back to the public OpenAI API, with the controller's key as
    # bearer. Now nothing is admitted, so no model call can leave for a host the request did not name.
    rollout_id = fresh("chat")
    body = dict(BODIES[kind](rollout_id), chat_completions_url=url, controller_api_key=SECRET)
    assert_422(post(servers, server, path, json.dumps(body).encode()), field="chat_completions_url")
    never_started(rollout_id)


# -- control characters in ids -----------------------------------------------------------------------------------


CONTROL_IDS = ["a\u0000b", "a\u001fb", "a\u007fb", "a\nb", "a\rb", "tab\tid"]


@pytest.mark.parametrize("rollout_id", CONTROL_IDS, ids=["nul", "unit-sep", "del", "lf", "cr", "tab"])
@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy", *WORKFLOW_KINDS))
def test_control_characters_in_a_rollout_id_are_refused_at_admission(servers, server, path, kind, rollout_id):
    detail = assert_422(post(servers, server, path, json.dumps(BODIES[kind](rollout_id)).encode()), field="rollout_id")
    assert "control characters" in detail[0]["msg"] or "single path segment" in detail[0]["msg"]
    never_started(rollout_id)


async def test_with_a_debug_log_a_nul_id_is_refused_and_a_plain_one_still_completes(tmp_path):
    # Before: with `serve --log DIR` a NUL in the id turned a successful rollout into ERROR "embedded null byte".
    app = create_app(LoggingLoop(), settings=fast_settings(), debug_dir=str(tmp_path), drain_timeout_seconds=0.1)
    with FakeTrainGate(ScriptedPolicy()).serve() as gate, serve_app(app) as server:
        refused = httpx.post(server.url + "/v1/rollout/init", json=gate.init_body(rollout_id="nul\u0000id", messages=prompt()))
        assert_422(refused, field="rollout_id")
        record = await gate.run_rollout(server.url, rollout_id="plain-id", messages=prompt("What is 2 + 3?"))
    assert record.callback["status"] == "COMPLETED"
    assert gate.callbacks("nul\u0000id") == [] and gate.chat_requests("nul\u0000id") == []
    assert (tmp_path / "plain-id.jsonl").exists()


async def test_unusual_but_valid_input_is_still_admitted():
    # The checks refuse what cannot be used, nothing more: non-ASCII ids and text, NaN in free-form metadata (as
    # upstream), a key with inner spaces.
    with FakeTrainGate(ScriptedPolicy()).serve() as gate:
        app = create_app(ToolLoop(), settings=fast_settings(), drain_timeout_seconds=0.1)
        with serve_app(app) as server:
            record = await gate.run_rollout(
                server.url, rollout_id="résumé-✓-1", messages=prompt("What is 2 + 3? 🙂"), callback_api_key="a key",
            )
            body = raw_body(gate.init_body(rollout_id="nan-metadata", messages=prompt()), metadata='{"score": NaN}')
            accepted = httpx.post(server.url + "/v1/rollout/init", content=body,
                                  headers={"Content-Type": "application/json"}, timeout=10)
            await gate.wait_for_callbacks("nan-metadata")
    assert record.callback["status"] == "COMPLETED"
    assert accepted.status_code == 202


# -- secrets are never echoed ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("server", "path", "kind"), endpoints("legacy", *WORKFLOW_KINDS))
def test_a_422_never_echoes_the_keys_sent(servers, server, path, kind):
    keys = {"api_key": SECRET} if kind == "legacy" else {"controller_api_key": SECRET, "llm_api_key": SECRET + "-llm"}
    body = dict(BODIES[kind]("x"), **keys)
    cases = [
        {k: v for k, v in body.items() if k != "rollout_id"},  # "missing": pydantic echoes the whole body as input
        dict(body, rollout_id=""),
        dict(body, rollout_id=["not", "a", "string"]),
        dict(body, metadata={"nested": {"api_key": SECRET, "Authorization": f"Bearer {SECRET}"}}, rollout_id=7),
    ]
    for case in cases:
        response = post(servers, server, path, json.dumps(case).encode())
        assert_422(response)  # asserts SECRET is nowhere in the answer


def test_a_body_that_is_not_an_object_is_422_and_a_non_utf8_body_is_4xx(servers):
    for content in (b"[1, 2]", b'"text"', b"null", b"{", b"NaN"):
        assert_422(post(servers, "legacy", "/v1/rollout/init", content))
        assert_422(post(servers, "workflow", "/rollout", content))
    for content in (b"\xff\xfe{}", b'{"rollout_id": "\xc3"}'):
        response = post(servers, "legacy", "/v1/rollout/init", content)
        assert 400 <= response.status_code < 500, response.text


# -- no 5xx, whatever the field ----------------------------------------------------------------------------------

NASTY = ["NaN", "Infinity", "-Infinity", "1e400", '"\\ud800"', '"\\u0000"', '"a\\r\\nb"', "[]", "{}", "null", "true",
         "-0", '{"\\udc80": NaN}', "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "1" + "0" * 5000,
         "[" * 5_000 + "]" * 5_000]
FUZZED = {"legacy-init", "legacy-polling", "workflow-callbacks", "workflow-polling", "mixed-workflow-callbacks"}


@pytest.mark.parametrize(
    ("server", "path", "kind"), [p for p in endpoints("legacy", *WORKFLOW_KINDS) if p.id in FUZZED]
)
def test_no_field_value_makes_a_5xx(servers, server, path, kind):
    base = BODIES[kind]("fuzz")
    fields = list(base) + (["api_key", "idempotency_key", "metadata", "max_turns", "tool_server_url"]
                           if kind == "legacy" else ["label", "metadata", "llm_api_key", "grade", "extra_fields"])
    for n, field in enumerate(fields):
        for m, raw in enumerate(NASTY):
            rollout_id = fresh("fuzz")
            body = dict(base, rollout_id=rollout_id)
            response = post(servers, server, path, raw_body(body, **{field: raw}))
            assert response.status_code < 500, (field, raw[:40], response.status_code, response.text[:300])
            if response.status_code == 422:
                strict_json(response.text)


def test_a_legacy_init_colliding_with_a_polling_rollout_is_409_not_202_null(servers):
    # Both protocols of a legacy app share one key space; the init used to answer 202 `null` and start nothing.
    rollout_id = fresh("shared")
    admitted = post(servers, "legacy", "/rollout", json.dumps(polling_body(rollout_id)).encode())
    assert admitted.status_code == 202, admitted.text
    collided = post(servers, "legacy", "/v1/rollout/init", json.dumps(legacy_body(rollout_id)).encode())
    assert collided.status_code == 409, collided.text
    assert "polling" in collided.json()["detail"]
