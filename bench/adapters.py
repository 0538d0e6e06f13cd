"""Adapter overhead: each agent run natively on its own protocol vs through the adapter on the other protocol.

Same ScriptedPolicy (zero latency), same prompt ("What is 12 + 30?": 2 model calls, 1 tool call), the rollout
server in a child process (its CPU time is its own), the fake controller and the driver here, in one event loop.

- loop-port: the calculator loop through ``loop_as_workflow`` vs the same logic written natively as a workflow
             (runtime policy client, same tools) — both on ``create_rollout_server`` + FakeWorkflowController:
             the adapter's own overhead, same fake, same protocol, same conversation;
- loop:      examples/legacy/calculator_agent.py — native: ``create_app`` + FakeTrainGate;
             adapted: ``loop_as_workflow`` → ``LocalBackend`` + ``create_rollout_server`` + FakeWorkflowController
             (the workflow protocol also posts a grader callback: that is part of what is measured);
- workflow:  the Osmosis integrations' examples (examples/modern: ``strands`` = OsmosisStrandsAgent, ``agents`` =
             OsmosisAgent + OsmosisMemorySession), a plain Strands ``LiteLLMModel`` workflow pointed at the rollout
             URL (``strands-plain``, tests/adapters/framework_workflows.py) and a framework-free workflow on its own
             ``openai`` client (``openai-client``, tests/adapters/workflows.py, streaming) — native:
             ``create_rollout_server`` + FakeWorkflowController; adapted: ``workflow_as_loop`` → ``create_app`` +
             FakeTrainGate, every model call crossing the runtime's streaming bridge (in process for the
             integrations, which use the runtime's HTTP pool; over loopback TCP for the other two, which bring
             their own HTTP clients).

Target (issue 4, item 7): adapted ≥ 90 % of native rollouts/s. Run: ``python bench/adapters.py [--rollouts N]``
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import cpu_seconds, free_port, start_server, stop

PRELUDE = """
import logging, sys, uvicorn
sys.path.insert(0, "examples/legacy")
sys.path.insert(0, ".")
logging.disable(logging.CRITICAL)
"""

SERVERS = {
    ("loop", "native"): """
from calculator_agent import agent_loop
from osmosis_compat.server.legacy_app import create_app
app = create_app(agent_loop)
""",
    ("loop", "adapted"): """
from calculator_agent import agent_loop
from osmosis_compat.adapters import loop_as_workflow
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.workflow import AgentWorkflowConfig, LocalBackend
workflow, grader = loop_as_workflow(agent_loop)
backend = LocalBackend(workflow=workflow, grader=grader, workflow_config=AgentWorkflowConfig(name="calculator"))
app = create_rollout_server(backend=backend, configure_logging=False)
""",
    ("loop-port", "native"): """
import asyncio
from calculator_agent import TOOLS, execute_tool
from osmosis_compat.runtime.delivery import DeliveryPolicy
from osmosis_compat.runtime.policy import PolicyClient, WorkflowDialect
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.workflow import (AgentWorkflow, AgentWorkflowConfig, Grader, LocalBackend, RolloutSample,
                                     SampleSource, get_rollout_context)
CLIENT = PolicyClient(DeliveryPolicy(attempts=4))

class Messages(SampleSource):
    def __init__(self, messages):
        self.messages = messages
    async def get_sample(self, name=None):
        return RolloutSample(id=name, messages=self.messages)

class NativeCalculator(AgentWorkflow):
    # the calculator loop's logic written natively against the workflow API and the runtime policy client
    async def run(self, ctx):
        rollout = get_rollout_context()
        messages = list(ctx.prompt)
        rollout.register_sample_source("calculator", Messages(messages))
        dialect = WorkflowDialect(rollout.chat_completions_url, rollout.api_key, rollout.rollout_id, "calculator")
        for _ in range(10):
            body = {"model": "default", "messages": messages, "temperature": 1.0, "top_p": 1.0, "max_tokens": 512,
                    "logprobs": True, "tools": TOOLS}
            message = (await CLIENT.chat(dialect, body)).reply.message
            messages.append(message)
            if not message.get("tool_calls"):
                break
            messages.extend(await asyncio.gather(*(execute_tool(c) for c in message["tool_calls"])))

class NativeGrader(Grader):
    async def grade(self, ctx):
        for sample_id, sample in ctx.samples.items():
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label in (sample.messages[-1].get("content") or "") else 0.0)

backend = LocalBackend(workflow=NativeCalculator, grader=NativeGrader,
                       workflow_config=AgentWorkflowConfig(name="calculator"))
app = create_rollout_server(backend=backend, configure_logging=False)
""",
    ("openai-client", "native"): """
from tests.adapters.workflows import ClientConfig, LabelInAnswerGrader, OpenAIClientWorkflow
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.workflow import LocalBackend
backend = LocalBackend(workflow=OpenAIClientWorkflow, grader=LabelInAnswerGrader,
                       workflow_config=ClientConfig(name="adder"))
app = create_rollout_server(backend=backend, configure_logging=False)
""",
    ("openai-client", "adapted"): """
from tests.adapters.workflows import ADD_TOOL, ClientConfig, LabelInAnswerGrader, OpenAIClientWorkflow
from osmosis_compat.adapters import workflow_as_loop
from osmosis_compat.server.legacy_app import create_app
app = create_app(workflow_as_loop(OpenAIClientWorkflow, grader=LabelInAnswerGrader,
                                  workflow_config=ClientConfig(name="adder"), tools=[ADD_TOOL]))
""",
    ("strands-plain", "native"): """
from tests.adapters.framework_workflows import StrandsCalcWorkflow, strands_add
from tests.adapters.workflows import LabelInAnswerGrader
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.workflow import AgentWorkflowConfig, LocalBackend
backend = LocalBackend(workflow=StrandsCalcWorkflow, grader=LabelInAnswerGrader,
                       workflow_config=AgentWorkflowConfig(name="strands", tools=[strands_add()]))
app = create_rollout_server(backend=backend, configure_logging=False)
""",
    ("strands-plain", "adapted"): """
from tests.adapters.framework_workflows import StrandsCalcWorkflow, strands_add
from tests.adapters.workflows import LabelInAnswerGrader
from osmosis_compat.adapters import workflow_as_loop
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.workflow import AgentWorkflowConfig
app = create_app(workflow_as_loop(StrandsCalcWorkflow, grader=LabelInAnswerGrader,
                                  workflow_config=AgentWorkflowConfig(name="strands", tools=[strands_add()])))
""",
}

SERVERS[("loop-port", "adapted")] = SERVERS[("loop", "adapted")]

#: The integration examples of examples/modern, served natively and through ``workflow_as_loop``.
EXAMPLE_IMPORT = """
sys.path.insert(0, "examples/modern")
from {module} import {workflow} as Workflow, {grader} as Grader
"""
EXAMPLE_SERVE = {
    "native": """
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.workflow import LocalBackend
app = create_rollout_server(backend=LocalBackend(workflow=Workflow, grader=Grader), configure_logging=False)
""",
    "adapted": """
from osmosis_compat.adapters import workflow_as_loop
from osmosis_compat.server.legacy_app import create_app
app = create_app(workflow_as_loop(Workflow, grader=Grader))
""",
}
for _agent, _names in {
    "strands": ("strands_calculator", "StrandsCalculatorWorkflow", "StrandsCalculatorGrader"),
    "agents": ("openai_agents_calculator", "OpenAIAgentsCalculatorWorkflow", "OpenAIAgentsCalculatorGrader"),
}.items():
    for _mode, _serve in EXAMPLE_SERVE.items():
        _module, _workflow, _grader = _names
        SERVERS[(_agent, _mode)] = EXAMPLE_IMPORT.format(module=_module, workflow=_workflow, grader=_grader) + _serve

SERVE = """
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""

PROMPT = [{"role": "user", "content": "What is 12 + 30?"}]

#: Which protocol each (agent, mode) is served on.
PROTOCOL = {
    ("loop", "native"): "legacy",
    ("loop", "adapted"): "workflow",
    ("loop-port", "native"): "workflow",
    ("loop-port", "adapted"): "workflow",
    ("openai-client", "native"): "workflow",
    ("openai-client", "adapted"): "legacy",
    ("strands", "native"): "workflow",
    ("strands", "adapted"): "legacy",
    ("agents", "native"): "workflow",
    ("agents", "adapted"): "legacy",
    ("strands-plain", "native"): "workflow",
    ("strands-plain", "adapted"): "legacy",
}


async def drive(controller, protocol: str, url: str, n: int, concurrency: int, tag: str) -> float:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            if protocol == "legacy":
                record = await controller.run_rollout(url, rollout_id=f"{tag}-{i}", messages=PROMPT, timeout=60,
                                                      metadata={"ground_truth": "42"})
                assert record.status == "COMPLETED" and record.reward in (1.0, None), record.callback
            else:
                record = await controller.run_rollout(url, rollout_id=f"{tag}-{i}", initial_messages=PROMPT,
                                                      label="42", timeout=60)
                assert record.grader["status"] == "success", record.grader
                assert set(record.rewards.values()) == {1.0}, record.grader

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started


async def compare(agent: str, n: int, concurrency: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Serve the agent natively and adapted at the same time; alternate batches so load drift on a shared
    machine hits both alike. Returns ``{mode: (rollouts/s, server CPU ms per rollout)}``."""
    from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, ScriptedPolicy

    modes = ("native", "adapted")
    procs, controllers, urls = {}, {}, {}
    try:
        for mode in modes:
            port = free_port()
            procs[mode] = start_server(PRELUDE + SERVERS[(agent, mode)] + SERVE.format(port=port), port)
            urls[mode] = f"http://127.0.0.1:{port}"
            legacy = PROTOCOL[(agent, mode)] == "legacy"
            controllers[mode] = FakeTrainGate(ScriptedPolicy()) if legacy else FakeWorkflowController(ScriptedPolicy())
        async with controllers["native"].serve_async(), controllers["adapted"].serve_async():
            for mode in modes:  # warm-up: imports, pools, the bridge
                await drive(controllers[mode], PROTOCOL[(agent, mode)], urls[mode], 8, 4, f"warm-{agent}-{mode}")
            wall = dict.fromkeys(modes, 0.0)
            cpu_before = {mode: cpu_seconds(procs[mode].pid) for mode in modes}
            batch = max(1, n // rounds)
            for round_index in range(rounds):
                order = modes if round_index % 2 == 0 else modes[::-1]
                for mode in order:
                    tag = f"{agent}-{mode}-c{concurrency}-r{round_index}"
                    wall[mode] += await drive(controllers[mode], PROTOCOL[(agent, mode)], urls[mode], batch,
                                              concurrency, tag)
            total = batch * rounds
            return {
                mode: (total / wall[mode], (cpu_seconds(procs[mode].pid) - cpu_before[mode]) * 1000 / total)
                for mode in modes
            }
    finally:
        for proc in procs.values():
            stop(proc)


async def main_async(n: int, agents: list[str], concurrencies: tuple[int, ...], rounds: int) -> None:
    rows = []
    for agent in agents:
        count = n if agent in ("loop", "loop-port") else max(rounds, n // 3)
        for concurrency in concurrencies:
            result = await compare(agent, count, concurrency, rounds)
            rows.append((agent, concurrency, result["native"], result["adapted"]))
    print(f"{'agent':14} {'conc':>4} {'native r/s':>11} {'adapted r/s':>12} {'ratio':>6} "
          f"{'native CPU ms':>14} {'adapted CPU ms':>15}")
    for agent, concurrency, (n_rate, n_cpu), (a_rate, a_cpu) in rows:
        print(f"{agent:14} {concurrency:4d} {n_rate:11.1f} {a_rate:12.1f} {a_rate / n_rate:6.2f} "
              f"{n_cpu:14.2f} {a_cpu:15.2f}")
    print("ratio = adapted / native rollouts/s (target >= 0.90); CPU = rollout-server CPU per rollout")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", type=int, default=150)
    parser.add_argument("--agents", default="loop-port,loop,strands,agents,strands-plain,openai-client")
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--rounds", type=int, default=6, help="alternating native/adapted batches")
    args = parser.parse_args()
    concurrencies = tuple(int(c) for c in args.concurrency.split(","))
    asyncio.run(main_async(args.rollouts, args.agents.split(","), concurrencies, args.rounds))


if __name__ == "__main__":
    main()
