"""``openai-agent`` (OM200): plain OpenAI Agents SDK code → ``OsmosisAgent`` + ``OsmosisMemorySession`` in an
``AgentWorkflow``.

The four steps of seeds/openai-agents-integration.md ("Migrating from OpenAI Agents SDK"):

1. ``Agent(…)`` → ``OsmosisAgent(…)`` (OM202), imports updated (OM204);
2. a fixed model (a string, a variable holding one, a ``LitellmModel(...)``/``OpenAIChatCompletionsModel(...)``
   object, or no model — the SDK default is a fixed model too) → ``OsmosisRolloutModel()``; sampling settings stay
   in ``ModelSettings`` (OM202);
3. each ``Runner.run``/``Runner.run_sync`` gets its own ``OsmosisMemorySession(name=…)``, created just before the
   run (names distinct within a workflow: the agent variable, then ``_2``, ``_3``…) (OM205);
4. the runner is wrapped in ``AgentWorkflow.run()`` with ``ctx.prompt`` as its input (OM203).

TODOs: OM290 driver not wrappable, OM291 plain agent left, OM292 argument to check.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from codemods.base import ImportTable, Rule, RuleContext
from codemods.wrap import CTX_PROMPT, Framework, kwarg, migrate_module, with_kwarg

OAI_MOD = "osmosis_ai.rollout.integrations.agents.openai_agents"
AGENT_CTORS = ("agents.Agent", "agents.agent.Agent")
RUNNER_RUN = ("agents.Runner.run", "agents.run.Runner.run")
RUNNER_SYNC = ("agents.Runner.run_sync", "agents.run.Runner.run_sync")
RUNNER_STREAMED = ("agents.Runner.run_streamed", "agents.run.Runner.run_streamed")
PLACEHOLDER = (f"{OAI_MOD}.OsmosisRolloutModel",)


class OpenAIFramework(Framework):
    code = "OM200"
    agent_ctors = AGENT_CTORS
    osmosis_agent = (OAI_MOD, "OsmosisAgent")
    label = "OpenAI Agents"

    def begin_body(self) -> None:
        super().begin_body()
        self.session_vars: set[str] = set()
        self.session_names: set[str] = set()

    def _placeholder(self) -> cst.Call:
        self.needed.append((OAI_MOD, "OsmosisRolloutModel"))
        return cst.Call(func=cst.Name("OsmosisRolloutModel"))

    def fix_model(self, call: cst.Call) -> cst.Call:
        arg = kwarg(call, "model")
        if arg is None:
            return with_kwarg(call, "model", self._placeholder())
        value = arg.value
        if isinstance(value, cst.Call):
            if self.table.matches(value.func, PLACEHOLDER) or (
                isinstance(value.func, cst.Name) and value.func.value == "OsmosisRolloutModel"
            ):
                return call
            self.note_replaced(value.func)
        return with_kwarg(call, "model", self._placeholder())

    def run_site_agent(self, call: cst.Call, agents: set[str]) -> Optional[cst.BaseExpression]:
        if self.table.matches(call.func, (*RUNNER_RUN, *RUNNER_SYNC, *RUNNER_STREAMED)) is None:
            return None
        session = kwarg(call, "session")
        if session is not None and isinstance(session.value, cst.Name) and session.value.value in self.session_vars:
            return None
        if call.args and call.args[0].keyword is None:
            return call.args[0].value
        start = kwarg(call, "starting_agent")
        return start.value if start is not None else None

    def rewrite_run_site(self, call: cst.Call, agent_var: str):
        if self.table.matches(call.func, RUNNER_STREAMED):
            return call, [], "streams its run (Runner.run_streamed): wrap it by hand"
        session = kwarg(call, "session")
        if session is not None:
            return call, [], "passes its own session: replace it with an OsmosisMemorySession by hand"
        func = call.func
        if self.table.matches(func, RUNNER_SYNC) and isinstance(func, cst.Attribute):
            func = func.with_changes(attr=cst.Name("run"))
        name = agent_var
        n = 2
        while name in self.session_names:
            name = f"{agent_var}_{n}"
            n += 1
        self.session_names.add(name)
        var = f"{name}_session"
        self.session_vars.add(var)
        self.needed.append((OAI_MOD, "OsmosisMemorySession"))
        kept = [a for a in call.args[2:] if a.keyword is not None and a.keyword.value not in ("input", "starting_agent")]
        args = [
            cst.Arg(cst.Name(agent_var), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(CTX_PROMPT, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            *[a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in kept],
            cst.Arg(keyword=cst.Name("session"), value=cst.Name(var), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))),
        ]
        new_call = cst.Call(func=func, args=args)
        before = cst.SimpleStatementLine(body=[cst.Assign(
            targets=[cst.AssignTarget(cst.Name(var))],
            value=cst.Call(func=cst.Name("OsmosisMemorySession"), args=[cst.Arg(
                keyword=cst.Name("name"), value=cst.SimpleString(f'"{name}"'),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )]),
        )])
        return cst.Await(expression=new_call), [before], None


class OpenAIAgentRule(Rule):
    """Plain OpenAI Agents SDK agents → OsmosisAgent + OsmosisMemorySession in an AgentWorkflow."""

    code = "OM200"
    name = "openai-agent"
    summary = "agents.Agent + Runner.run → OsmosisAgent(model=OsmosisRolloutModel()) + OsmosisMemorySession in AgentWorkflow.run()"
    trigger_words = ("from agents", "import agents")

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        table = ImportTable.of(module)
        if not any(
            q == "agents" or q.startswith("agents.")
            for q in [*table.names.values(), *table.modules.values(), *table.stars]
        ):
            return module
        return migrate_module(module, OpenAIFramework(table, ctx))
