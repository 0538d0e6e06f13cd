"""The three protocols are peers over one engine (issue 20 items 5 and 7): an id one protocol holds gets the same
clear refusal — 409, one body naming the holder — from every other protocol of the app, and nothing starts.

Before, a 0.2.31 callback body reusing the id of a polling rollout got 200 ``{}`` and then nothing: no run, no
callback (accepted, then silent); a polling body reusing a legacy or 0.2.x id got 0.3.8's bare 409.
"""

from __future__ import annotations

from typing import Any

import httpx

from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakePollingController, FakeTrainGate, FakeWorkflowController, ScriptedPolicy, serve_app_async
from tests.server import polling_agents
from tests.server.polling_agents import SleepyLoop, steered_app

PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]


def conflict(holder: str, rollout_id: str) -> str:
    return f"rollout_id {rollout_id!r} is already registered by a rollout of the {holder} protocol"


def callback_body(controller: FakeWorkflowController, rollout_id: str, **metadata: Any) -> dict[str, Any]:
    return controller.rollout_body(rollout_id=rollout_id, initial_messages=PROMPT, metadata=metadata)


def polling_body(rollout_id: str, controller_url: str, **metadata: Any) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "initial_messages": PROMPT, "chat_completions_url": f"{controller_url}/v1",
            "metadata": metadata}


def legacy_body(rollout_id: str, controller_url: str, **metadata: Any) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "server_url": controller_url, "messages": PROMPT, "completion_params": {},
            "metadata": metadata}


async def test_workflow_app_callbacks_and_polling_refuse_each_others_ids_alike() -> None:
    callbacks = FakeWorkflowController(ScriptedPolicy())
    polling = FakePollingController(ScriptedPolicy())
    server = await serve_app_async(steered_app(unlimited=True))
    try:
        async with callbacks.serve_async(), polling.serve_async(), httpx.AsyncClient() as client:
            # polling holds "p" (running, then retained): a 0.2.31 callback body for "p" is refused, starts nothing
            held = await polling.admit(server.url, rollout_id="p", initial_messages=PROMPT, metadata={"sleep": 0.5})
            refused = await client.post(f"{server.url}/rollout", json=callback_body(callbacks, "p"))
            assert refused.status_code == 409, refused.text
            assert refused.json()["detail"].startswith(conflict("polling", "p"))
            # a 0.2.31 rollout holds "c" while it runs: a polling body for "c" gets the same refusal
            admitted = await client.post(f"{server.url}/rollout", json=callback_body(callbacks, "c", sleep=0.5))
            assert admitted.status_code == 200
            refused_too = await client.post(f"{server.url}/rollout", json=polling_body("c", polling.url))
            assert refused_too.status_code == 409, refused_too.text
            assert refused_too.json()["detail"].startswith(conflict("workflow", "c"))
            assert (await polling.wait_for_result(server.url, held))[0]["status"] == "success"
            assert (await callbacks.wait_for_callbacks("c"))[0]["status"] == "success"
    finally:
        await polling.aclose()
        await server.close()
    assert polling_agents.started.count("p") == 1 and polling_agents.started.count("c") == 1


async def test_legacy_app_legacy_and_polling_refuse_each_others_ids_alike() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    polling = FakePollingController(ScriptedPolicy())
    server = await serve_app_async(create_app(SleepyLoop()))
    try:
        async with gate.serve_async(), polling.serve_async(), httpx.AsyncClient() as client:
            lp = await polling.admit(server.url, rollout_id="lp", initial_messages=PROMPT)
            refused = await client.post(f"{server.url}/v1/rollout/init", json=legacy_body("lp", gate.url))
            assert refused.status_code == 409, refused.text
            assert refused.json()["detail"].startswith(conflict("polling", "lp"))

            held = await client.post(f"{server.url}/v1/rollout/init", json=legacy_body("ll", gate.url, sleep=0.3))
            assert held.status_code == 202
            refused_too = await client.post(f"{server.url}/rollout", json=polling_body("ll", polling.url))
            assert refused_too.status_code == 409, refused_too.text
            assert refused_too.json()["detail"].startswith(conflict("legacy", "ll"))
            assert (await polling.wait_for_result(server.url, lp))[0]["status"] == "success"
            assert (await gate.wait_for_callbacks("ll"))[0]["status"] == "COMPLETED"
    finally:
        await polling.aclose()
        await server.close()
    assert polling_agents.started.count("lp") == 1 and polling_agents.started.count("ll") == 1


async def test_an_id_too_long_for_the_result_url_is_refused_at_admission_and_the_longest_is_collected() -> None:
    """A 1 MB id was admitted (202), then its result URL was refused at the HTTP layer: never collectable."""
    from osmosis_compat.runtime.wirecheck import MAX_ID_URL_BYTES

    longest = "é" * (MAX_ID_URL_BYTES // 6) + "x" * (MAX_ID_URL_BYTES % 6)  # é is 6 bytes in a URL: %C3%A9
    polling = FakePollingController(ScriptedPolicy())
    callbacks = FakeWorkflowController(ScriptedPolicy())
    server = await serve_app_async(steered_app(unlimited=True))
    try:
        async with polling.serve_async(), callbacks.serve_async(), httpx.AsyncClient() as client:
            for too_long in (longest + "x", "r" * 1_000_000):
                for body in (polling_body(too_long, polling.url), callback_body(callbacks, too_long)):
                    refused = await client.post(f"{server.url}/rollout", json=body)
                    assert refused.status_code == 422, refused.status_code
                    assert refused.json()["detail"][0]["loc"] == ["body", "rollout_id"]
            admission = await polling.admit(server.url, rollout_id=longest, initial_messages=PROMPT, label="4")
            result, _, _ = await polling.wait_for_result(server.url, admission)
            assert result["status"] == "success" and result["rollout_id"] == longest, result["err_message"]
    finally:
        await polling.aclose()
        await server.close()
