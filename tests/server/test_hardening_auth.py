"""Issue 12 item 3: auth that means what it says, and controller-supplied URLs limited to the hosts a team allows.

- with an API key, no route that starts a rollout is reachable without it (single-agent and mixed servers, every
  exposure, root and /agents/<name> paths; also the polling result and cancel routes);
- a 0.2.31 callback controller sends no key: start-up says which routes it cannot use and how to open them;
  ``keyless_callbacks`` / ``serve --keyless-callbacks`` opens exactly those bodies and nothing else;
- serving on a non-loopback interface without a key prints a warning;
- ``controller_hosts`` / ``--controller-hosts`` / ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS`` refuse (422) URLs naming
  other hosts: legacy ``server_url``, ``chat_completions_url``, completion and grader callbacks.

Real uvicorn servers on 127.0.0.1 and real httpx; the CLI's own functions build the served apps.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_compat.cli import serve
from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY, set_workflow_callback_policy
from osmosis_compat.runtime.retry import Backoff
from osmosis_compat.runtime.wirecheck import CONTROLLER_HOSTS_ENV
from osmosis_compat.server.agents import AgentSpec
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.server.mixed_app import create_mixed_app
from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, ScriptedPolicy, serve_app
from osmosis_compat.workflow import LocalBackend
from tests.legacy.wire.conftest import fast_settings, prompt
from tests.legacy.wire.loops import ToolLoop
from tests.server.polling_agents import SteeredGrader, SteeredWorkflow, steered_app

KEY = "the-server-key"
DEAD_URL = "http://127.0.0.1:9"
CALC_WORKFLOW = str(Path(__file__).with_name("calc_workflow.py"))
LOOP_TARGET = "tests.legacy.wire.loops:ToolLoop"

_ids = itertools.count()


@pytest.fixture(autouse=True, scope="module")
def fast_callbacks() -> Iterator[None]:
    # Admitted rollouts report to DEAD_URL: their callback retries should end in milliseconds, not 7.5 s.
    set_workflow_callback_policy(dataclasses.replace(WORKFLOW_CALLBACK_POLICY, backoff=Backoff(0.001, 0.004)))
    yield
    set_workflow_callback_policy(None)


def fresh(prefix: str = "auth") -> str:
    return f"{prefix}-{next(_ids)}"


def backend() -> LocalBackend:
    return LocalBackend(workflow=SteeredWorkflow, grader=SteeredGrader)


def legacy_body() -> dict[str, Any]:
    return {"rollout_id": fresh(), "server_url": DEAD_URL, "messages": prompt(), "completion_params": {}}


def callback_body(base: str = DEAD_URL) -> dict[str, Any]:
    rollout_id = fresh()
    return {
        "rollout_id": rollout_id,
        "initial_messages": prompt(),
        "chat_completions_url": base + "/v1",
        "completion_callback_url": f"{base}/callback/completion/{rollout_id}",
        "grader_callback_url": f"{base}/callback/grader/{rollout_id}",
    }


def polling_body(base: str = DEAD_URL) -> dict[str, Any]:
    return {"rollout_id": fresh(), "initial_messages": prompt(), "chat_completions_url": base + "/v1"}


BODY = {"legacy": legacy_body, "callback": callback_body, "polling": polling_body}
ACCEPTED = {"legacy": 202, "callback": 200, "polling": 202}

# Which (path, body kind) pairs start a rollout on each served shape. A loop exposed on both protocols takes
# callback bodies at /rollout through its adapted workflow app; a loop served natively answers them 422 (with the key).
SHAPES: dict[str, list[tuple[str, str]]] = {
    "legacy-app": [("/v1/rollout/init", "legacy"), ("/rollout", "polling")],
    "workflow-app": [("/rollout", "callback"), ("/rollout", "polling")],
    "mixed": [
        ("/v1/rollout/init", "legacy"), ("/rollout", "polling"),
        ("/agents/loop/v1/rollout/init", "legacy"), ("/agents/loop/rollout", "polling"),
        ("/agents/both/v1/rollout/init", "legacy"), ("/agents/both/rollout", "callback"),
        ("/agents/both/rollout", "polling"),
        ("/agents/wf/rollout", "callback"), ("/agents/wf/rollout", "polling"),
        ("/agents/wfboth/v1/rollout/init", "legacy"), ("/agents/wfboth/rollout", "callback"),
        ("/agents/wfboth/rollout", "polling"),
    ],
}


def build(shape: str, **options: Any) -> Any:
    if shape == "legacy-app":
        return create_app(ToolLoop(), settings=fast_settings(), drain_timeout_seconds=0.1, **options)
    if shape == "workflow-app":
        return steered_app(drain_timeout_seconds=0.1, **options)
    agents = [
        AgentSpec(name="loop", loop=ToolLoop()),
        AgentSpec(name="both", loop=ToolLoop(), expose="both"),
        AgentSpec(name="wf", backend=backend()),
        AgentSpec(name="wfboth", backend=backend(), expose="both"),
    ]
    return create_mixed_app(agents, default="loop", drain_timeout_seconds=0.1, **options)


@pytest.fixture(scope="module")
def keyed() -> Iterator[dict[str, str]]:
    with serve_app(build("legacy-app", api_key=KEY)) as legacy, serve_app(build("workflow-app", api_key=KEY)) as wf, \
            serve_app(build("mixed", api_key=KEY)) as mixed:
        yield {"legacy-app": legacy.url, "workflow-app": wf.url, "mixed": mixed.url}


def post(url: str, body: dict[str, Any], key: str | None = None) -> httpx.Response:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.post(url, json=body, headers=headers, timeout=10)


CASES = [pytest.param(shape, path, kind, id=f"{shape}:{path}:{kind}") for shape, pairs in SHAPES.items()
         for path, kind in pairs]


@pytest.mark.parametrize(("shape", "path", "kind"), CASES)
def test_no_route_that_starts_a_rollout_runs_without_the_key(keyed, shape, path, kind):
    url = keyed[shape] + path
    for key in (None, "wrong-key", KEY[:-1], f"{KEY}x"):
        assert post(url, BODY[kind](), key).status_code == 401, (key, url)
    # The same route with the key admits (so the 401s above were about the key, not a missing route).
    assert post(url, BODY[kind](), KEY).status_code == ACCEPTED[kind]


@pytest.mark.parametrize("shape,prefix", [("legacy-app", ""), ("workflow-app", ""), ("mixed", "/agents/wf"),
                                          ("mixed", "/agents/both"), ("mixed", "")])
def test_result_and_cancel_routes_need_the_key_too(keyed, shape, prefix):
    base = keyed[shape] + prefix
    assert httpx.post(base + "/rollout/cancel", json={"all": True}, timeout=10).status_code == 401
    assert httpx.get(base + "/rollout/x/result", headers={"X-Osmosis-Rollout-Lease": "t"}, timeout=10).status_code == 401


# -- 0.2.31 callback controllers: said at start-up, opened only deliberately --------------------------------------


def test_a_keyed_workflow_server_says_which_routes_a_callback_controller_cannot_use(caplog):
    caplog.set_level(logging.WARNING)
    build("workflow-app", api_key=KEY)
    notices = [r.getMessage() for r in caplog.records if "0.2.31 callback controller" in r.getMessage()]
    assert len(notices) == 1
    assert "401 on POST /rollout" in notices[0] and "--keyless-callbacks" in notices[0]
    caplog.clear()
    build("workflow-app")  # no key: nothing to say
    assert not [r for r in caplog.records if "callback controller" in r.getMessage()]


def test_a_keyed_mixed_server_names_every_callback_route_once(caplog):
    caplog.set_level(logging.WARNING)
    app = build("mixed", api_key=KEY)
    notices = [r.getMessage() for r in caplog.records if "0.2.31 callback controller" in r.getMessage()]
    assert len(notices) == 1  # one for the server, not one per agent
    assert app.callback_routes() == ["/agents/both/rollout", "/agents/wf/rollout", "/agents/wfboth/rollout"]
    assert "POST /agents/both/rollout, /agents/wf/rollout, /agents/wfboth/rollout" in notices[0]


def test_keyless_callbacks_opens_callback_bodies_and_nothing_else(caplog):
    caplog.set_level(logging.WARNING)
    with serve_app(build("mixed", api_key=KEY, keyless_callbacks=True)) as mixed, \
            serve_app(build("workflow-app", api_key=KEY, keyless_callbacks=True)) as wf:
        for base in (wf.url, mixed.url + "/agents/wf", mixed.url + "/agents/both", mixed.url + "/agents/wfboth"):
            assert post(base + "/rollout", callback_body()).status_code == 200, base
            assert post(base + "/rollout", polling_body()).status_code == 401, base
            assert post(base + "/rollout", polling_body(), KEY).status_code == 202, base
            assert httpx.post(base + "/rollout/cancel", json={"all": True}, timeout=10).status_code == 401
        for path in ("/v1/rollout/init", "/agents/loop/v1/rollout/init", "/agents/both/v1/rollout/init"):
            assert post(mixed.url + path, legacy_body()).status_code == 401, path
        # A natively served loop has no callback protocol: still closed, as every legacy route.
        assert post(mixed.url + "/agents/loop/rollout", callback_body()).status_code == 401
        assert post(mixed.url + "/rollout", callback_body()).status_code == 401  # the default agent is that loop
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "WITHOUT the API key" in said and "--controller-hosts" in said


async def test_keyless_callbacks_still_completes_a_real_callback_rollout():
    controller = FakeWorkflowController(ScriptedPolicy())
    with controller.serve(), serve_app(build("workflow-app", api_key=KEY, keyless_callbacks=True)) as server:
        record = await controller.run_rollout(server.url, rollout_id=fresh("keyless"), initial_messages=prompt(),
                                              metadata={"reward": 1.0})
    assert record.completion["status"] == "success" and record.grader["status"] == "success"
    assert len(record.completions) == 1 and len(record.graders) == 1


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_serve_banner_names_the_closed_routes_and_the_switch():
    lone = serve.plan_server(parse("-m", CALC_WORKFLOW, "--no-validate", "--api-key", KEY))
    assert "401 on POST /rollout" in lone.banner and "--keyless-callbacks" in lone.banner
    opened = serve.plan_server(parse("-m", CALC_WORKFLOW, "--no-validate", "--api-key", KEY, "--keyless-callbacks"))
    assert "WITHOUT the API key" in opened.banner
    mixed = serve.plan_server(parse("-m", f"calc={CALC_WORKFLOW}", "-m", f"loop={LOOP_TARGET}", "--no-validate",
                                    "--default", "calc"))
    assert "401 on POST /rollout, /agents/calc/rollout" in mixed.banner  # a key is generated: it says so too
    local = serve.plan_server(parse("-m", f"calc={CALC_WORKFLOW}", "-m", f"loop={LOOP_TARGET}", "--no-validate",
                                    "--local"))
    assert "callback controller" not in local.banner  # no key: nothing is closed


# -- no key on a non-loopback interface ----------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "warned"), [
    (["-m", CALC_WORKFLOW, "-H", "0.0.0.0"], True),  # a lone workflow has no key unless --api-key
    (["-m", CALC_WORKFLOW, "-H", "::"], True),
    (["-m", CALC_WORKFLOW, "-H", "10.1.2.3"], True),
    (["-m", CALC_WORKFLOW, "-H", "my-host.internal"], True),
    (["-m", CALC_WORKFLOW, "-H", "127.0.0.1"], False),
    (["-m", CALC_WORKFLOW, "-H", "localhost"], False),
    (["-m", CALC_WORKFLOW, "-H", "::1"], False),
    (["-m", CALC_WORKFLOW, "-H", "0.0.0.0", "--api-key", KEY], False),
    (["-m", f"a={CALC_WORKFLOW}", "-m", f"b={LOOP_TARGET}", "-H", "0.0.0.0", "--local"], True),
    (["-m", f"a={CALC_WORKFLOW}", "-m", f"b={LOOP_TARGET}", "-H", "0.0.0.0"], False),  # key generated
    (["-m", LOOP_TARGET, "-H", "0.0.0.0", "--local", "--workers", "2"], True),
    (["-m", LOOP_TARGET, "-H", "0.0.0.0", "--workers", "2"], False),
])
def test_serve_warns_when_no_key_guards_a_non_loopback_interface(argv, warned, capsys):
    args = parse(*argv, "--no-validate")
    serve._warn_if_exposed(args, serve.plan_server(args))
    err = capsys.readouterr().err
    assert ("without an API key" in err) is warned, err


def test_the_legacy_serve_warns_when_local_debug_listens_on_every_interface(monkeypatch, capsys):
    # uvicorn is not started: the test never binds a non-loopback interface.
    import uvicorn

    from osmosis_compat.legacy.serve import serve_agent_loop

    served: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(options))
    serve_agent_loop(ToolLoop(), host="0.0.0.0", local_debug=True, validate=False)
    assert "Warning: serving on every interface (0.0.0.0) without an API key" in capsys.readouterr().err
    serve_agent_loop(ToolLoop(), host="0.0.0.0", validate=False)  # a generated key
    serve_agent_loop(ToolLoop(), host="127.0.0.1", local_debug=True, validate=False)
    assert "without an API key" not in capsys.readouterr().err
    assert [options["host"] for options in served] == ["0.0.0.0", "0.0.0.0", "127.0.0.1"]


# -- the controller-host allow-list --------------------------------------------------------------------------------


def assert_host_refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert [entry["loc"] for entry in detail] == [["body", field]]
    assert "not an allowed controller host" in detail[0]["msg"] and CONTROLLER_HOSTS_ENV in detail[0]["msg"]


@pytest.fixture(scope="module")
def restricted() -> Iterator[dict[str, str]]:
    hosts = "127.0.0.1,*.trusted.example,10.0.0.0/8"
    with serve_app(build("legacy-app", controller_hosts=hosts)) as legacy, \
            serve_app(build("workflow-app", controller_hosts=hosts)) as wf, \
            serve_app(build("mixed", controller_hosts=hosts)) as mixed:
        yield {"legacy-app": legacy.url, "workflow-app": wf.url, "mixed": mixed.url}


ELSEWHERE = ["http://localhost:9", "http://169.254.169.254/latest", "https://api.openai.com", "http://trusted.example",
             "http://evil.example/x.trusted.example", "http://11.0.0.1:8000", "http://[::1]:9"]


@pytest.mark.parametrize("url", ELSEWHERE)
def test_a_server_url_on_another_host_is_refused(restricted, url):
    for path in ("/v1/rollout/init", "/agents/loop/v1/rollout/init", "/agents/wfboth/v1/rollout/init"):
        base = restricted["mixed"] if path.startswith("/agents") else restricted["legacy-app"]
        assert_host_refused(post(base + path, dict(legacy_body(), server_url=url)), "server_url")


@pytest.mark.parametrize("field", ["chat_completions_url", "completion_callback_url", "grader_callback_url"])
@pytest.mark.parametrize("url", ELSEWHERE)
def test_workflow_urls_on_another_host_are_refused(restricted, field, url):
    for base in (restricted["workflow-app"], restricted["mixed"] + "/agents/wf", restricted["mixed"] + "/agents/both"):
        assert_host_refused(post(base + "/rollout", dict(callback_body(), **{field: url})), field)
        if field == "chat_completions_url":
            assert_host_refused(post(base + "/rollout", dict(polling_body(), **{field: url})), field)
    # the legacy app's own polling route too
    if field == "chat_completions_url":
        assert_host_refused(post(restricted["legacy-app"] + "/rollout", dict(polling_body(), **{field: url})), field)


@pytest.mark.parametrize("base", ["http://127.0.0.1:9", "http://a.trusted.example:8080", "http://10.20.30.40"])
def test_urls_on_allowed_hosts_are_admitted(restricted, base):
    assert post(restricted["legacy-app"] + "/v1/rollout/init", dict(legacy_body(), server_url=base)).status_code == 202
    assert post(restricted["workflow-app"] + "/rollout", callback_body(base)).status_code == 200
    assert post(restricted["mixed"] + "/agents/wf/rollout", polling_body(base)).status_code == 202


async def test_the_environment_variable_applies_and_real_rollouts_still_complete(monkeypatch):
    monkeypatch.setenv(CONTROLLER_HOSTS_ENV, "127.0.0.1")
    with FakeTrainGate(ScriptedPolicy()).serve() as gate, serve_app(build("legacy-app")) as server:
        record = await gate.run_rollout(server.url, rollout_id=fresh("env"), messages=prompt("What is 2 + 3?"))
        refused = post(server.url + "/v1/rollout/init", dict(legacy_body(), server_url="http://localhost:9"))
    assert record.callback["status"] == "COMPLETED"
    assert_host_refused(refused, "server_url")
    monkeypatch.setenv(CONTROLLER_HOSTS_ENV, "127.0.0.1:1")
    with serve_app(build("workflow-app")) as server:  # a port-specific entry: other ports are other controllers
        assert_host_refused(post(server.url + "/rollout", polling_body("http://127.0.0.1:9")), "chat_completions_url")


def test_an_explicit_empty_list_lifts_the_environment_restriction(monkeypatch):
    monkeypatch.setenv(CONTROLLER_HOSTS_ENV, "127.0.0.1")
    with serve_app(build("legacy-app", controller_hosts="")) as server:
        assert post(server.url + "/v1/rollout/init", dict(legacy_body(), server_url="http://localhost:9")).status_code == 202


def test_serve_passes_controller_hosts_to_every_agent_and_refuses_bad_entries(monkeypatch, capsys):
    args = parse("-m", f"calc={CALC_WORKFLOW}", "-m", f"loop={LOOP_TARGET}", "--no-validate", "--local",
                 "--controller-hosts", "127.0.0.1")
    plan = serve.plan_server(args)
    assert "Controller hosts: 127.0.0.1" in plan.banner
    with serve_app(plan.app) as server:
        assert_host_refused(post(server.url + "/agents/calc/rollout", polling_body("http://localhost:9")),
                            "chat_completions_url")
        assert_host_refused(post(server.url + "/agents/loop/v1/rollout/init",
                                 dict(legacy_body(), server_url="http://localhost:9")), "server_url")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    code = serve.run(parse("-m", CALC_WORKFLOW, "--no-validate", "-H", "127.0.0.1", "-p", port,
                           "--controller-hosts", "10.0.0.0/33"))
    assert code == 1 and "Error: controller host '10.0.0.0/33'" in capsys.readouterr().err
    monkeypatch.setenv(CONTROLLER_HOSTS_ENV, "a b")
    with pytest.raises(ValueError, match="controller host 'a b'"):
        build("workflow-app")


def test_the_legacy_serve_shows_and_applies_controller_hosts(monkeypatch, capsys):
    # uvicorn.run is replaced by a recorder; the recorded app is then served on 127.0.0.1 for real.
    import uvicorn

    from osmosis_compat.legacy.serve import serve_agent_loop

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: apps.append(app))
    serve_agent_loop(ToolLoop(), host="127.0.0.1", validate=False, local_debug=True, controller_hosts="127.0.0.1")
    assert "Controller hosts: 127.0.0.1" in capsys.readouterr().out
    with serve_app(apps[0]) as server:
        assert_host_refused(post(server.url + "/v1/rollout/init", dict(legacy_body(), server_url="http://localhost:9")),
                            "server_url")
        assert post(server.url + "/v1/rollout/init", legacy_body()).status_code == 202
