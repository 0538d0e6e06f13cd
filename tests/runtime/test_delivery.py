"""The one POST-with-retry loop, against a real uvicorn server on 127.0.0.1."""

import socket

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY, CallbackLedger, CallbackSender
from osmosis_compat.runtime.delivery import DeliveryError, DeliveryPolicy, post_json
from osmosis_compat.runtime.jsonwire import NotJSONError
from osmosis_compat.runtime.retry import Backoff
from osmosis_compat.testing.serving import serve_app

FAST = Backoff(0.001, 0.002)


class Scripted:
    """Answers each POST with the next status of a script (the last one repeats)."""

    def __init__(self):
        self.script = [200]
        self.bodies = []
        self.app = Starlette(routes=[Route("/cb", self.handle, methods=["POST"])])

    async def handle(self, request):
        self.bodies.append(await request.json())
        status = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if status == 204:
            return Response(status_code=204)
        return JSONResponse({"status": status}, status_code=status)


@pytest.fixture(scope="module")
def server():
    scripted = Scripted()
    with serve_app(scripted.app) as handle:
        scripted.url = handle.url + "/cb"
        yield scripted


@pytest.fixture
def scripted(server):
    server.bodies.clear()
    server.script = [200]
    return server


def policy(**kw):
    return DeliveryPolicy(attempts=3, backoff=FAST, **kw)


async def test_retries_5xx_then_succeeds(scripted):
    scripted.script = [500, 503, 200]
    response = await post_json(scripted.url, {"a": 1}, policy=policy())
    assert response.status_code == 200
    assert len(scripted.bodies) == 3


async def test_gives_up_after_last_attempt_with_the_last_status(scripted):
    scripted.script = [500]
    with pytest.raises(DeliveryError) as info:
        await post_json(scripted.url, {"a": 1}, policy=policy())
    assert info.value.status_code == 500
    assert len(scripted.bodies) == 3


async def test_client_error_is_not_retried(scripted):
    scripted.script = [422]
    with pytest.raises(DeliveryError) as info:
        await post_json(scripted.url, {}, policy=policy())
    assert info.value.status_code == 422
    assert len(scripted.bodies) == 1


async def test_silently_retried_status_ends_in_exhausted_error(scripted):
    scripted.script = [204]
    strict = policy(is_success=lambda s: s == 200, is_silently_retried=lambda s: s < 400)
    with pytest.raises(DeliveryError, match="No attempts made"):
        await post_json(scripted.url, {}, policy=strict)
    assert len(scripted.bodies) == 3


async def test_transport_error_is_retried_then_raised():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(DeliveryError, match="ConnectError"):
        await post_json(f"http://127.0.0.1:{port}/x", {}, policy=policy())


async def test_non_json_payload_fails_before_any_request(scripted):
    with pytest.raises(NotJSONError, match=r"\$\.samples\.s1\.reward"):
        await post_json(scripted.url, {"samples": {"s1": {"reward": float("nan")}}}, policy=policy())
    assert scripted.bodies == []


async def test_body_is_compact_utf8_json(scripted):
    await post_json(scripted.url, {"text": "héllo"}, policy=policy())
    assert scripted.bodies == [{"text": "héllo"}]


async def test_callback_sender_delivers_each_kind_once(scripted):
    sender = CallbackSender(WORKFLOW_CALLBACK_POLICY)
    ledger = CallbackLedger("r1")
    assert (await sender.send(scripted.url, {"n": 1}, kind="completion", ledger=ledger)).status_code == 200
    assert await sender.send(scripted.url, {"n": 2}, kind="completion", ledger=ledger) is None
    assert scripted.bodies == [{"n": 1}]


async def test_workflow_policy_fails_at_once_on_401(scripted):
    scripted.script = [401]
    fast = WORKFLOW_CALLBACK_POLICY
    with pytest.raises(DeliveryError) as info:
        await post_json(scripted.url, {}, policy=fast)
    assert info.value.status_code == 401 and len(scripted.bodies) == 1


def test_backoff_schedules():
    assert [Backoff(1.0, 30.0).delay(n) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert [Backoff(0.5, 8.0).delay(n) for n in range(4)] == [0.5, 1, 2, 4]
