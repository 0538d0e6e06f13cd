"""``/docs`` and ``/openapi.json`` on the mixed server: every agent's routes in one document (issue 12)."""

from __future__ import annotations

from pathlib import Path

import httpx

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.targets import load_target
from osmosis_compat.server.agents import AgentSpec
from osmosis_compat.server.mixed_app import create_mixed_app
from osmosis_compat.testing import serve_app



def test_docs_cover_every_agent():
    loop = load_target(str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop")
    workflow = load_target(str(Path(__file__).with_name("calc_workflow.py")))
    app = create_mixed_app([AgentSpec.from_target(loop, name="calc"),
                            AgentSpec.from_target(workflow, name="wf", expose="both")])
    with serve_app(app) as server:
        docs = httpx.get(server.url + "/docs")
        schema = httpx.get(server.url + "/openapi.json").json()
    assert docs.status_code == 200 and "swagger-ui" in docs.text and "/openapi.json" in docs.text
    assert schema["info"]["title"] == "Osmosis RolloutServer (osmosis-compat, mixed)"
    assert {"/agents/calc/v1/rollout/init", "/agents/wf/rollout", "/agents/wf/v1/rollout/init", "/health"} \
        <= set(schema["paths"])
    init = schema["paths"]["/agents/calc/v1/rollout/init"]["post"]
    assert init["tags"] == ["calc"]
    ref = init["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.rsplit("/", 1)[-1] in schema["components"]["schemas"]
    operation_ids = [op["operationId"] for ops in schema["paths"].values() for op in ops.values()]
    assert len(operation_ids) == len(set(operation_ids))
