"""Structured logs (issue 20 item 3): one JSON object per line with the rollout's id, protocol and agent, and never
a key or a bearer token — a real server on 127.0.0.1 driven by the fake TrainGate."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from osmosis_compat.legacy.base import RolloutAgentLoop
from osmosis_compat.observability import logs
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app_async
from tests.server.mixed_agents import QUESTION

SERVER_KEY = "server-key-9f8e7d6c5b4a"
CONTROLLER_KEY = "controller-key-1a2b3c4d5e"
agent_logger = logging.getLogger("tests.agent")


class ChattyLoop(RolloutAgentLoop):
    """Logs what a careless agent logs: its whole request (keys included) and an Authorization header."""

    name = "chatty"

    def get_tools(self, request: Any) -> list:
        return []

    async def run(self, ctx: Any) -> Any:
        agent_logger.info("got request %r", ctx.request)
        agent_logger.warning("calling with {'Authorization': 'Bearer %s'}", ctx.request.api_key)
        result = await ctx.chat(list(ctx.request.messages))
        return ctx.complete(list(ctx.request.messages) + [result.message], reward=1.0)


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JSONFormatter())
    handler.addFilter(logs.RedactSecrets())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logs.redact_value(SERVER_KEY)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_json_lines_carry_the_rollout_and_no_secret(json_lines: io.StringIO) -> None:
    gate = FakeTrainGate(ScriptedPolicy(), require_api_key=CONTROLLER_KEY)
    async with gate.serve_async():
        server = await serve_app_async(create_app(ChattyLoop(), api_key=SERVER_KEY))
        try:
            record = await gate.run_rollout(server.url, rollout_id="logged-1", messages=QUESTION, api_key=SERVER_KEY,
                                            callback_api_key=CONTROLLER_KEY)
        finally:
            await server.close()
    assert record.status == "COMPLETED"
    text = json_lines.getvalue()
    assert SERVER_KEY not in text and CONTROLLER_KEY not in text
    entries = [json.loads(line) for line in text.splitlines()]
    assert all({"timestamp", "level", "logger", "message"} <= set(e) for e in entries)
    mine = [e for e in entries if e.get("rollout_id") == "logged-1"]
    assert {e["logger"] for e in mine} >= {"tests.agent", "osmosis_ai.rollout.server"}
    assert all(e["protocol"] == "legacy" and e["agent"] == "chatty" for e in mine)
    assert any(e["message"].startswith("calling with") and "[redacted]" in e["message"] for e in mine), mine
    assert any(e["message"].startswith("got request") and "api_key='[redacted]'" in e["message"] for e in mine), mine


def test_redaction_covers_the_wire_protocols_credential_fields() -> None:
    text = logs.redact(
        'Authorization: Bearer abc.def-ghi llm_api_key="s3cr1" controller_api_key: s3cr2 '
        "{'polling_lease_token': 's3cr3'} X-Osmosis-Rollout-Lease=s3cr4 api_key=s3cr5"
    )
    for secret in ("abc.def-ghi", "s3cr1", "s3cr2", "s3cr3", "s3cr4", "s3cr5"):
        assert secret not in text.replace("[redacted]", ""), text


def test_the_format_comes_from_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logs.LOG_FORMAT_ENV, raising=False)
    assert logs.resolve_format(None) == "text"
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "JSON")
    assert logs.resolve_format(None) == "json"
    assert logs.resolve_format("text") == "text"
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "yaml")
    with pytest.raises(ValueError, match="log format must be one of text, json"):
        logs.resolve_format(None)
