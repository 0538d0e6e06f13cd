"""Proof on the REAL osmosis-ai (issue 18 items 3 and 5): every rewritten legacy loop of
``test_legacy_loop_behaviour.LOOPS`` — the corpus loops, this repository's docs and examples, the fixtures —
migrated for 0.3 is served by the real osmosis-ai 0.3.8 (``create_rollout_server`` + ``LocalBackend`` with its
generated grader, from the side venv of tests/upstream/venvs.py) and driven by the real 0.3.8 ``RolloutClient``
against the project's scripted policy (``FakePollingController``'s per-rollout chat routes); migrated for 0.2, it is
served by the real osmosis-ai 0.2.31 and driven by ``FakeWorkflowController`` (0.2 has no client of its own). Each
earns what the original earned when osmosis-compat's legacy server served it to ``FakeTrainGate`` with the same
policy: the same final answer and reward (for a loop that passed no reward, the grader's starting rule of the
original's answer), or a failure where the original failed.

One upstream server process per target serves all migrated modules, each mounted under ``/<case>`` (their
lifespans entered together), so the side venv's start-up is paid once. A module the rule leaves with a loop it
refused (OM390: the SDK's mock_agents.py keeps its MockAgentLoop, which returns prebuilt RolloutResults) still
imports the legacy API and cannot be imported by osmosis-ai 0.3.8 at all: its rewritten siblings are proven in
test_legacy_loop_behaviour.py (osmosis-compat) only, and listed here.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from codemods.rules._legacy_loop_plan import grader_name
from osmosis_compat.testing import FakePollingController, FakeWorkflowController, ScriptedPolicy
from osmosis_compat.workflow.messages import last_assistant_text
from tests.codemods.test_legacy_loop_behaviour import (
    CASES,
    LOOPS,
    Outcome,
    _messages,
    comparable,
    expected,
    original_outcomes,
    write_tree,
)
from tests.upstream.servers import UpstreamServer
from tests.upstream.venvs import require_upstream, upstream_env

pytestmark = pytest.mark.upstream

RELEASE = {"0.2": "0.2.31", "0.3": "0.3.8"}

#: the upstream server: every migrated module's app (or one built from its workflow + grader) mounted at /c<i>
ENTRY = '''
import contextlib, importlib.util, sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import fake_mcp
from osmosis_ai.rollout import LocalBackend
from {server} import create_rollout_server


def load(name):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / f"{{name}}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def served(module, cls, grader, args):
    if getattr(module, "app", None) is not None and args is None:
        return module.app
    workflow = getattr(module, cls) if args is None else module._bound_workflow(getattr(module, cls), *args)
    return create_rollout_server(backend=LocalBackend(workflow=workflow, grader=getattr(module, grader)))


apps = {{}}
{mounts}


@contextlib.asynccontextmanager
async def lifespan(_):
    async with contextlib.AsyncExitStack() as stack:
        for sub in apps.values():
            await stack.enter_async_context(sub.router.lifespan_context(sub))
        yield


async def health(_):
    return JSONResponse({{"status": "ok"}})


app = Starlette(routes=[Route("/health", health), *(Mount(f"/{{key}}", app=sub) for key, sub in apps.items())],
                lifespan=lifespan)
'''

#: runs in the 0.3.8 side venv: the real RolloutClient drives every case (JSON on stdin, one RESULT line out)
DRIVER = r'''
import asyncio, json, sys

import httpx
from osmosis_ai.rollout.client import RolloutClient


def answer(messages):
    for message in reversed(messages or []):
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, str) and content:
            return content
    return ""


async def main():
    spec = json.loads(sys.stdin.read())
    gate = asyncio.Semaphore(8)
    async with httpx.AsyncClient(timeout=120) as http:
        async def one(run):
            async with gate:
                client = RolloutClient(url=run["server"], http_client=http)
                result = await client.run_rollout(
                    initial_messages=run["messages"], chat_completions_url=f"{spec['chat']}/v1/rollouts/{run['id']}",
                    rollout_id=run["id"], llm_api_key=f"key-{run['id']}", label=run["label"])
                sample = result.sample.model_dump(mode="json") if result.sample is not None else {}
                return {"status": result.status.value, "reward": sample.get("reward"),
                        "answer": answer(sample.get("messages")), "error": result.err_message}
        results = await asyncio.gather(*(one(run) for run in spec["runs"]))
    print("RESULT " + json.dumps(dict(zip([run["id"] for run in spec["runs"]], results))))


asyncio.run(main())
'''

_ORIGINALS: dict[str, list[Outcome]] = {}


async def _originals(tmp_path: Path) -> dict[str, list[Outcome]]:
    for i, loop in enumerate(LOOPS):
        if loop.id not in _ORIGINALS:
            _ORIGINALS[loop.id] = await original_outcomes(loop, tmp_path / f"orig{i}")
    return _ORIGINALS


def _tree(target: str, dest: Path) -> tuple[Path, dict[str, list]]:
    """The migrated modules of every loop in ``dest`` and the entry that mounts those osmosis-ai can import (not a
    module that still holds a refused loop); TODOs per mounted loop."""
    mounts, todos = [], {}
    for i, loop in enumerate(LOOPS):
        path, found = write_tree(loop, dest, target)
        if {"OM390", "OM396"} & {t.code for t in found}:
            continue
        todos[loop.id] = found
        args = f"[{loop.args}]" if loop.args else "None"
        mounts.append(f"apps['c{i}'] = served(load({path.stem!r}), {loop.cls!r}, "
                      f"{grader_name(loop.cls, set())!r}, {args})")
    server = "osmosis_ai.rollout.server" if target == "0.3" else "osmosis_ai.rollout"
    entry = dest / "entry.py"
    entry.write_text(ENTRY.format(server=server, mounts="\n".join(mounts)))
    return entry, todos


def _drive_03(server_url: str, chat_url: str, mounted: list[int]) -> dict[str, dict]:
    runs = [{"server": f"{server_url}/c{i}", "id": f"c{i}-{j}", "messages": _messages(prompt), "label": truth}
            for i in mounted for j, (prompt, truth) in enumerate(CASES)]
    done = subprocess.run(
        [str(require_upstream(RELEASE["0.3"])), "-c", DRIVER], input=json.dumps({"chat": chat_url, "runs": runs}),
        capture_output=True, text=True, timeout=600, env=upstream_env(RELEASE["0.3"]),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"driver failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads(lines[-1][len("RESULT "):])


async def _drive_02(server_url: str, mounted: list[int]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    with FakeWorkflowController(ScriptedPolicy()).serve() as controller:
        async def one(i: int, j: int, prompt, truth) -> None:
            record = await controller.run_rollout(f"{server_url}/c{i}", rollout_id=f"c{i}-{j}",
                                                  initial_messages=_messages(prompt), label=truth, timeout=120)
            samples = list(((record.grader or {}).get("samples") or {}).values())
            ok = (record.completion or {}).get("status") == "success" and len(samples) == 1
            out[f"c{i}-{j}"] = {"status": "success" if ok else "failure",
                                "reward": samples[0].get("reward") if ok else None,
                                "answer": last_assistant_text(samples[0].get("messages")) if ok else ""}

        gate = asyncio.Semaphore(8)

        async def bounded(*args) -> None:
            async with gate:
                await one(*args)

        await asyncio.gather(*(bounded(i, j, prompt, truth) for i in mounted for j, (prompt, truth) in enumerate(CASES)))
    return out


def _outcomes(seen: dict[str, dict], i: int) -> list[Outcome]:
    runs = [seen[f"c{i}-{j}"] for j in range(len(CASES))]
    return [Outcome(r["status"] != "success", r["reward"], r["answer"] or "") for r in runs]


@pytest.mark.parametrize("target", ["0.3", "0.2"])
async def test_rewritten_loops_earn_the_originals_rewards_on_the_real_osmosis_ai(target, tmp_path):
    require_upstream(RELEASE[target])
    originals = await _originals(tmp_path)
    entry, todos = _tree(target, tmp_path / "migrated")
    mounted = [i for i, loop in enumerate(LOOPS) if loop.id in todos]
    assert [loop.id for loop in LOOPS if loop.id not in todos] == [
        f"corpus/osmsdk__tests___helpers__mock_agents:{name}" for name in ("SimpleAgentLoop", "FailingAgentLoop",
                                                                           "SlowAgentLoop")]
    with UpstreamServer(entry, RELEASE[target]) as server:
        if target == "0.3":
            chat = FakePollingController(ScriptedPolicy(), check_keys=False)
            with chat.serve():
                seen = await asyncio.to_thread(_drive_03, server.url, chat.require_url(), mounted)
        else:
            seen = await _drive_02(server.url, mounted)
    differences = {}
    for i in mounted:
        loop = LOOPS[i]
        want = comparable(expected(originals[loop.id], todos[loop.id]))
        got = comparable(_outcomes(seen, i))
        if got != want:
            differences[loop.id] = {"original": want, "migrated": got,
                                    "errors": [seen[f"c{i}-{j}"].get("error") for j in range(len(CASES))]}
    assert not differences, json.dumps(differences, indent=1, default=str)
    assert sum(not o.failed for outcomes in originals.values() for o in outcomes) >= 0.8 * len(LOOPS) * len(CASES)



async def test_a_kept_create_app_api_key_guards_the_real_0_3_8_server(tmp_path):
    """``create_app(agent_loop, api_key=…)`` migrated for 0.3 keeps its key as ``create_rollout_server(api_key=…)``:
    the real osmosis-ai 0.3.8 then answers 401 to a caller without it and runs the rollout of a controller that
    presents it (``Authorization: Bearer <key>``)."""
    import httpx

    from codemods.driver import migrate_source
    from tests.codemods._fixtures import FIXTURES

    require_upstream(RELEASE["0.3"])
    source = (FIXTURES / "legacy_loop" / "create_app_api_key.py").read_text()
    path = tmp_path / "served.py"
    path.write_text(migrate_source(source, target="0.3").new_text)
    with UpstreamServer(path, RELEASE["0.3"], env={"ROLLOUT_SERVER_API_KEY": "osm-test-key"}) as server:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.url}/health")).status_code == 401
            assert (await client.post(f"{server.url}/rollout", json={})).status_code == 401
            good = await client.get(f"{server.url}/health", headers={"Authorization": "Bearer osm-test-key"})
            assert good.status_code == 200
        controller = FakePollingController(ScriptedPolicy(), server_api_key="osm-test-key")
        with controller.serve():
            record = await controller.run_rollout(server.url, rollout_id="keyed", label="4",
                                                  initial_messages=[{"role": "user", "content": "What is 2 + 2?"}])
        await controller.aclose()
    assert record.status == "success" and record.reward == 1.0, record


async def test_exits_without_a_reward_beside_different_rewards_are_graded_on_the_real_0_3_8(tmp_path):
    """``mixed_rewards.py``: one exit of run() passes no reward (the legacy platform scored it), the others pass
    different rewards, which run() hands over in the sample's metrics. The generated grader must not
    ``set_reward(None)`` for the exit without one (the real 0.3.8 then fails grading): it gives that sample the
    starting rule, and OM393 names the exit. Served by the real 0.3.8, every rollout succeeds, with the original's
    reward where it passed one and the starting rule's where it passed none."""
    from tests.codemods.test_legacy_loop_behaviour import polling_outcomes

    require_upstream(RELEASE["0.3"])
    loop = next(x for x in LOOPS if x.path.name == "mixed_rewards.py")
    original = await original_outcomes(loop, tmp_path / "original")
    assert [o.reward for o in original] == [1.0, None, None, None]  # the tool-use exit, then three without one
    path, todos = write_tree(loop, tmp_path / "migrated", "0.3")
    [todo] = todos
    assert todo.code == "OM393" and "run()'s exit 1 of 3 (`return ctx.complete(messages)` under `if tool_calls == 0`)" \
        in todo.reason and "starting rule" in todo.reason
    with UpstreamServer(path, RELEASE["0.3"]) as server:
        got = await polling_outcomes(server.url)
    assert comparable(got) == comparable(expected(original, todos)), (original, got)
    assert [o.reward for o in got] == [1.0, 1.0, 0.0, 1.0]  # 1.0 handed over; the starting rule ("41" is wrong)
