"""Runs in the osmosis-ai 0.3.8 side venv: drives a rollout server with the REAL ``RolloutClient``.

Input (JSON on stdin): ``{"server": url, "chat": controller base url, "server_key": str|null, "cases": [...]}``;
each case has a ``name`` and a ``kind``. Output: one line ``RESULT <json>`` mapping case names to what the client
saw — the real client's own types validate every answer (``RolloutInitResponse``, ``RolloutResultResponse``, …), so
a server that answers anything 0.3.8 would not accept fails here.
"""

import asyncio
import json
import sys

import httpx
from osmosis_ai.rollout.client import RolloutClient, RolloutProtocolError
from osmosis_ai.rollout.types import (
    POLLING_LEASE_HEADER,
    RolloutInitRequest,
    RolloutInitResponse,
    RolloutResultResponse,
)


def chat_url(spec, rollout_id):
    return f"{spec['chat']}/v1/rollouts/{rollout_id}"


def rollout_kwargs(spec, case):
    rid = case["rollout_id"]
    return dict(
        initial_messages=case["messages"],
        chat_completions_url=chat_url(spec, rid),
        rollout_id=rid,
        llm_api_key=case.get("llm_api_key", f"key-{rid}"),
        label=case.get("label"),
        metadata=case.get("metadata"),
        grade=case.get("grade", True),
        agent_timeout_sec=case.get("agent_timeout_sec"),
        grader_timeout_sec=case.get("grader_timeout_sec"),
    )


def dump(result):
    return result.model_dump(mode="json", exclude={"sample": {"trajectory_messages"}})


async def run_case(client, spec, case):
    kind = case["kind"]
    if kind == "run":  # one rollout end to end, as the trainer does
        handle = await client.run_rollout_async(**rollout_kwargs(spec, case))
        seen = [handle.status.value]
        result = await handle
        return {"result": dump(result), "first_status": seen[0]}
    if kind == "run_many":  # several at once
        results = await asyncio.gather(
            *(client.run_rollout(**rollout_kwargs(spec, {**case, "rollout_id": f"{case['rollout_id']}-{i}"})) for i in range(case["count"]))
        )
        return {"results": [dump(r) for r in results]}
    if kind == "duplicate":  # 409 while the first runs
        first = await client.run_rollout_async(**rollout_kwargs(spec, case))
        try:
            await client.run_rollout_async(**rollout_kwargs(spec, case))
            second = {"accepted": True}
        except RolloutProtocolError as exc:
            second = {"status_code": exc.status_code, "error": str(exc)}
        return {"second": second, "first": dump(await first)}
    if kind == "cancel":  # cancel a running rollout through the client, then read its result
        handle = await client.run_rollout_async(**rollout_kwargs(spec, case))
        await handle.wait_for_running()
        await asyncio.sleep(case.get("after", 0.2))
        cancelled = await client.cancel_rollout(case["rollout_id"])
        again = await client.cancel_rollout(case["rollout_id"])
        return {"dispositions": cancelled.dispositions, "again": again.dispositions, "result": dump(await handle)}
    if kind == "health":
        health = await client.health()
        idle = await client.wait_idle(timeout_sec=10, poll_interval_sec=0.05)
        return {"health": health, "idle_process": idle.get("process_id")}
    if kind == "bad_request":  # a body 0.3.8's client would never send, posted raw: the answer must be 422
        body = RolloutInitRequest(**rollout_kwargs(spec, case)).model_dump(mode="json")
        body.update(case["change"])
        for key in case.get("drop", []):
            body.pop(key, None)
        response = await client.http_client.post(f"{client.url}/rollout", json=body, headers=client._auth_headers)
        return {"status_code": response.status_code, "body": response.json()}
    if kind == "leases":  # raw admission; wrong lease 403, unknown id 404, missing header 422, expiry if unpolled
        body = RolloutInitRequest(**rollout_kwargs(spec, case)).model_dump(mode="json")
        response = await client.http_client.post(f"{client.url}/rollout", json=body, headers=client._auth_headers)
        admission = RolloutInitResponse.model_validate(response.json())
        url = f"{client.url}/rollout/{case['rollout_id']}/result"
        wrong = await client.http_client.get(url, headers={**client._auth_headers, POLLING_LEASE_HEADER: "nope"})
        unknown = await client.http_client.get(f"{client.url}/rollout/never-admitted/result", headers={**client._auth_headers, POLLING_LEASE_HEADER: "x"})
        missing = await client.http_client.get(url, headers=client._auth_headers)
        await asyncio.sleep(case["idle"])  # nobody polls: the lease runs out while the rollout still runs
        late = await client.http_client.get(
            url, headers={**client._auth_headers, POLLING_LEASE_HEADER: admission.polling_lease_token}, timeout=30
        )
        return {
            "admission_status": response.status_code,
            "wrong": [wrong.status_code, wrong.json()],
            "unknown": [unknown.status_code, unknown.json()],
            "missing": [missing.status_code, [e["loc"] for e in missing.json()["detail"]]],
            "late": dump(RolloutResultResponse.model_validate(late.json())),
        }
    raise ValueError(f"unknown case kind {kind!r}")


async def main():
    spec = json.loads(sys.stdin.read())
    out = {}
    async with httpx.AsyncClient(timeout=60) as http:
        client = RolloutClient(url=spec["server"], http_client=http, api_key=spec.get("server_key"))
        for case in spec["cases"]:
            try:
                out[case["name"]] = {"ok": True, **(await run_case(client, spec, case))}
            except RolloutProtocolError as exc:
                out[case["name"]] = {"ok": False, "status_code": exc.status_code, "error": str(exc)}
            except Exception as exc:  # reported, not raised: the test prints it
                out[case["name"]] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print("RESULT " + json.dumps(out))


asyncio.run(main())
