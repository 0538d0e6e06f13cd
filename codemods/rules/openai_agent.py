"""``openai-agent`` (OM200): plain OpenAI Agents SDK code → ``OsmosisAgent`` + ``OsmosisMemorySession`` in an
``AgentWorkflow``.

The four steps of seeds/openai-agents-integration.md ("Migrating from OpenAI Agents SDK"), made safe by the
engine (:mod:`codemods.plain`: analysis → plan → emit):

1. ``Agent(…)`` / ``Agent[Ctx](…)`` → ``OsmosisAgent(…)`` (OM202), imports updated (OM204);
2. whatever the model was — a string, a variable or module-level name holding one, a ``LitellmModel(...)`` /
   ``OpenAIChatCompletionsModel(...)`` object, or none (the SDK default is a fixed model too) — it becomes
   ``OsmosisRolloutModel()``; sampling settings stay in ``ModelSettings`` (OM202; a module-level model variable
   only migrated agents use becomes the placeholder where it is, OM201); a ``RunConfig(model=…)`` that would
   override it loses that argument;
3. sessions (OM206). Target 0.3 (one sample per rollout, unnamed sessions): one ``OsmosisMemorySession()`` created
   at the top of ``run()`` and handed to the sample run only — the driver's last run that runs once per rollout;
   the other runs keep their inputs and run without a session (their agents are ``OsmosisAgent`` too, on the
   placeholder: not part of the sample); a session object of the program (``SQLiteSession(...)``) becomes that
   session. Not migrated (OM290): every run repeats, the runs all happen inside another function or class, the
   session is built again on every loop pass, or more than one session is needed. Target 0.2, every session a
   sample: each run gets ``OsmosisMemorySession(name="<agent>")`` created once before it (names distinct:
   ``agent``, ``agent_2``…); a run in a loop or a nested function a fresh unnamed one per pass; a resumed
   ``RunState`` keeps the session of the run it continues;
4. the runner is wrapped in ``AgentWorkflow.run()`` (OM203); only the program's input becomes ``ctx.prompt`` (OM205:
   ``run_sync`` → awaited ``run``; ``run_streamed`` keeps its stream, consumed inside ``run()``; ``asyncio.gather``
   keeps its awaitables).

TODOs: OM290 driver not migrated (the reason named), OM291 plain agent left (why), OM294 several workflows in one
module, OM295 no grader, OM296 module-level state the workflow's tools change (shared by every
rollout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods import codes
from codemods.analysis.body import RunShape, RunSite, code
from codemods.analysis.repo import Verdict
from codemods.base import ImportTable, Rule, RuleContext
from codemods.emit.body import RUN_CONFIG_MODEL
from codemods.framework import Framework
from codemods.osmosis_api import CTX_PROMPT
from codemods.plain import migrate_plain
from codemods.plan.model import CtorPlan, RunPlan, SessionPlan
from codemods.plan.offers import offers_of
from codemods.syntax import is_docstring, kwarg, with_kwarg, without_kwarg
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.plan.planner import DriverPlanner

OAI_MOD = "osmosis_ai.rollout.integrations.agents.openai_agents"
AGENT_CTORS = ("agents.Agent", "agents.agent.Agent")
RUNNER_RUN = ("agents.Runner.run", "agents.run.Runner.run")
RUNNER_SYNC = ("agents.Runner.run_sync", "agents.run.Runner.run_sync")
RUNNER_STREAMED = ("agents.Runner.run_streamed", "agents.run.Runner.run_streamed")
PLACEHOLDER = (f"{OAI_MOD}.OsmosisRolloutModel",)
KNOWN_MODELS = {"LitellmModel", "OpenAIChatCompletionsModel", "OpenAIResponsesModel", "AnyLLMModel",
                "OpenAIResponsesWSModel"}
MODEL_ADDRESS = {"model", "openai_client", "base_url", "api_key", "api_base", "client"}  # what only addresses a provider
TOOL_DECORATORS = (
    "agents.function_tool", "agents.tool.function_tool", "agents.decorators.tool", "agents.tool",
    "agents.input_guardrail", "agents.output_guardrail", "agents.guardrail.input_guardrail",
    "agents.guardrail.output_guardrail", "agents.decorators.input_guardrail", "agents.decorators.output_guardrail",
    "agents.tool_input_guardrail", "agents.tool_output_guardrail",
)


class OpenAIFramework(Framework):
    code = codes.OPENAI.base.code
    codes = codes.OPENAI
    agent_ctors = AGENT_CTORS
    osmosis_agent = (OAI_MOD, "OsmosisAgent")
    label = "OpenAI Agents"
    tool_decorators = TOOL_DECORATORS
    direct_run = "await Runner.run({agent}, {input})"
    direct_run_import = ("agents", "Runner")

    def run_heads(self) -> set[str]:
        heads = set(self.table.local_names_for("agents.Runner")) | set(self.table.local_names_for("agents.run.Runner"))
        heads |= {local for local, mod in self.table.modules.items() if mod in ("agents", "agents.run")}
        if "agents" in self.table.stars:
            heads.add("Runner")
        return heads

    # -- recognisers
    def run_shape(self, call: cst.Call, agents: set[str]) -> Optional[RunShape]:
        matched = self.table.matches(call.func, (*RUNNER_RUN, *RUNNER_SYNC, *RUNNER_STREAMED))
        if matched is None:
            return None
        method = matched.rsplit(".", 1)[-1]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        agent_arg = positional[0] if positional else kwarg(call, "starting_agent")
        input_arg = positional[1] if len(positional) > 1 else kwarg(call, "input")
        if agent_arg is None:
            return None
        session = kwarg(call, "session")
        run_config = kwarg(call, "run_config")
        return RunShape(
            agent=agent_arg.value, method=method, input_arg=input_arg,
            session=session.value if session is not None else None,
            run_config=run_config.value if run_config is not None else None,
            is_async_call=method == "run", is_stream=method == "run_streamed",
        )

    def takes_prompt_already(self, run: RunSite) -> bool:
        return run.shape.input_arg is not None and code(run.shape.input_arg.value) == "ctx.prompt"

    def is_session_ctor(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value.startswith("from_"):  # RedisSession.from_url(...)
            func = func.value
        resolved = self.table.resolve(func) or ""
        return (resolved.startswith("agents.") and resolved.endswith("Session")) and "Osmosis" not in resolved

    def model_kind(self, call: cst.Call) -> Optional[str]:
        resolved = self.table.resolve(call.func) or ""
        if resolved in PLACEHOLDER or (isinstance(call.func, cst.Name) and call.func.value == "OsmosisRolloutModel"):
            return "placeholder"
        last = resolved.rsplit(".", 1)[-1]
        if resolved.startswith("agents.") and last.endswith("Model") and last not in ("Model",):
            return "model"
        return None

    # -- planning
    def plan_model(self, ctor: cst.Call, planner: "DriverPlanner", nested: Optional[str]):
        hosted = self._hosted_tools(ctor)
        if hosted:
            return CtorPlan(), (
                f"its agent uses {', '.join(f'`{h}`' for h in hosted)}, a tool the OpenAI platform runs itself "
                "(Responses API): the rollout model speaks chat completions and cannot call it"
            ), []
        stored = kwarg(ctor, "prompt")
        if stored is not None:
            return CtorPlan(), (
                f"its agent uses a stored prompt (`prompt={code(stored.value, 40)}`), which OpenAI's servers apply "
                "(Responses API): the rollout model (chat completions) would run without it — put its text in "
                "`instructions` by hand"
            ), []
        settings = kwarg(ctor, "model_settings")
        if self.target == "0.2" and settings is not None and isinstance(settings.value, cst.Call) \
                and kwarg(settings.value, "reasoning") is not None:
            # 0.2.31's rollout model goes through LiteLLM, which refuses `reasoning_effort` for the rollout's model
            # on every call (checked on the real 0.2.31); 0.3.8 passes it on
            return CtorPlan(), (
                f"its model settings set `reasoning=` (`{code(settings.value, 50)}`), which osmosis-ai 0.2's "
                "rollout model (LiteLLM) refuses on every call - drop it for 0.2, or target 0.3 (`--target 0.3`)"
            ), []
        arg = kwarg(ctor, "model")
        if arg is None:
            return CtorPlan(model=self._placeholder(), model_note="none (the SDK default)"), "", []
        value = arg.value
        if isinstance(value, cst.Call) and self.model_kind(value) == "placeholder":
            return CtorPlan(), "", []
        if isinstance(value, cst.Name):
            resolved = planner.resolve_local(value.value)
            if resolved is not None and resolved[0] == "module" and isinstance(resolved[1], cst.Call) \
                    and self.model_kind(resolved[1]) == "placeholder":
                return CtorPlan(), "", []
            if resolved is not None and resolved[0] == "module" and isinstance(resolved[1], cst.Call) \
                    and value.value in planner.m.models:
                fallback, problem, gone = self.module_model_value(resolved[1])
                return CtorPlan(model=fallback, module_var=value.value, fallback=fallback,
                                model_note=f"`{value.value}`"), problem, gone
        if isinstance(value, cst.Call):
            problem = self._model_problem(value)
            if problem:
                return CtorPlan(), problem, []
            self.note_replaced(value.func)
        return CtorPlan(model=self._placeholder(), model_note=f"`{code(value, 40)}`"), "", [value]

    def _hosted_tools(self, ctor: cst.Call) -> list[str]:
        """Tools in ``tools=[...]`` that OpenAI's servers run (WebSearchTool(), HostedMCPTool(...)…)."""
        arg = kwarg(ctor, "tools")
        if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
            return []
        out = []
        for el in arg.value.elements:
            value = el.value
            if isinstance(value, cst.Call):
                resolved = self.table.resolve(value.func) or ""
                last = resolved.rsplit(".", 1)[-1]
                if resolved.startswith("agents.") and last.endswith("Tool") and last != "FunctionTool":
                    out.append(f"{last}()")
        return out

    def _model_problem(self, call: cst.Call) -> str:
        """Only models that just address a provider may become the placeholder (sampling lives in ModelSettings);
        one that carries behaviour of its own (a hosted multi-agent model, a custom class) may not."""
        resolved = self.table.resolve(call.func) or code(call.func)
        last = resolved.rsplit(".", 1)[-1]
        if last not in KNOWN_MODELS:
            return (f"its model `{code(call, 50)}` is a `{last}`, which the rollout placeholder cannot stand for "
                    "(only LitellmModel / OpenAIChatCompletionsModel / OpenAIResponsesModel and model names)")
        extra = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in MODEL_ADDRESS]
        if extra or any(a.star for a in call.args):
            return (f"its model `{last}(...)` sets {', '.join(f'`{e}`' for e in extra) or '`**kwargs`'}, which the "
                    "rollout placeholder cannot carry")
        return ""

    def module_model_value(self, call: cst.Call) -> tuple[Optional[cst.BaseExpression], str, list]:
        """A module-level model object → the placeholder (OpenAI Agents models carry no sampling settings)."""
        problem = self._model_problem(call)
        if problem:
            return None, problem, []
        self.note_replaced(call.func)
        return self._placeholder(), "", [call]

    def _placeholder(self) -> cst.Call:
        self.need(OAI_MOD, "OsmosisRolloutModel")
        return cst.Call(func=cst.Name("OsmosisRolloutModel"))

    def plan_run(self, run: RunSite, rp: RunPlan, planner: "DriverPlanner") -> Optional[str]:
        shape = run.shape
        who = run.agent or code(shape.agent)
        if shape.method == "run_sync":
            if (run.nested and not run.nested_async) or _sync_helper(planner):
                return f"it runs `{who}` with Runner.run_sync inside the nested function `{run.nested}`"
            rp.method = "run"
            rp.await_it = True
        elif shape.method == "run" and run.in_asyncio_run and (not run.nested or run.nested_async):
            rp.await_it = True  # asyncio.run(Runner.run(...)) inside run(): awaited
        # a RunConfig that sets the model would override the rollout placeholder
        if shape.run_config is not None:
            cfg = shape.run_config
            resolved = planner.resolve_local(cfg.value) if isinstance(cfg, cst.Name) else None
            if isinstance(cfg, cst.Name):
                cfg = resolved[1] if resolved is not None else None
            if not isinstance(cfg, cst.Call):
                return f"it runs `{who}` with `run_config={code(shape.run_config)}`, which the migration cannot read"
            if kwarg(cfg, "model") is not None:
                if cfg is shape.run_config:
                    rp.drop_run_config_model = True
                else:
                    problem = self._named_run_config(shape.run_config, cfg, resolved, planner)
                    if problem:
                        return problem
        server_state = [k for k in ("previous_response_id", "conversation_id", "auto_previous_response_id")
                        if kwarg(run.call, k) is not None]
        if server_state:
            return (f"it runs `{who}` with `{server_state[0]}=`: the conversation lives on OpenAI's servers "
                    "(Responses API), which the rollout model (chat completions) does not have — keep the history "
                    "in a session or the input by hand")
        p = planner.p
        if shape.session is not None:
            return self._user_session(run, rp, planner)
        resumed = self._resumed_from(run, planner)
        if resumed == "":
            return (f"it resumes `{who}` from `{code(run.shape.input_arg.value)}`, a RunState that may come from "
                    "runs with different sessions: resume it in the session of the run it continues by hand")
        if resumed is not None:
            rp.session = resumed
            return None
        if self.target.startswith("0.3"):
            return self._rollout_session(run, rp, planner)
        base = (run.agent or "agent").rsplit(".", 1)[-1]  # `self.agent` → `agent_session`: a variable name
        taken = {sp.var for sp in p.sessions} | set(planner.p.facts.stores) | set(planner.p.facts.loads)
        var = f"{base}_session"
        n = 2
        while var in taken:
            var = f"{base}_{n}_session"
            n += 1
        if run.in_loop or run.nested or planner.d.kind == "helper":
            name = None  # a fresh session each pass / call: each is its own sample, never the same name twice
        else:
            names = {sp.name for sp in p.sessions}
            name = base
            n = 2
            while name in names:
                name = f"{base}_{n}"
                n += 1
        p.sessions.append(SessionPlan(var=var, name=name, before=run.stmt))
        rp.session = var
        return None

    def _named_run_config(self, name: cst.BaseExpression, cfg: cst.Call, resolved, planner: "DriverPlanner",
                          ) -> Optional[str]:
        """``run_config=config`` where ``config = RunConfig(model=…, model_provider=…)``: its ``model=`` (and the
        provider that only served it) go where it is built — in the driver, or at module level when only this
        driver uses it (a Gemini/LiteLLM client wired in through the config is the common case); else the reason."""
        gone = [a.value for a in cfg.args if a.keyword is not None and a.keyword.value in RUN_CONFIG_MODEL]
        if resolved is not None and resolved[0] == "local":
            planner.p.local_configs.add(id(cfg))
        elif resolved is not None and resolved[0] == "module" and isinstance(name, cst.Name):
            m = planner.m
            j = m.definition(name.value)
            if j is None or not set(m.users(name.value, skip=[j])) <= set(planner.d.indices) \
                    or m.external.get(name.value):
                return (f"its run config `{name.value}` sets `model=`, which would replace the rollout placeholder "
                        "model, and other code uses it too: remove `model=` by hand")
            planner.p.module_configs[name.value] = cfg
        else:
            return (f"its run config `{code(name)}` sets `model=`, which would replace the rollout placeholder "
                    "model: remove it")
        planner.p.replaced.extend(gone)
        return None

    def _rollout_session(self, run: RunSite, rp: RunPlan, planner: "DriverPlanner") -> Optional[str]:
        """osmosis-ai 0.3: one OsmosisMemorySession per rollout, the sample. It is created at the top of ``run()``
        (every OsmosisAgent call needs the rollout's sample source registered first) and passed to the sample run
        only — the run the workflow ends with (:meth:`DriverPlanner.choose_sample`); the other runs keep their own
        inputs and no session, as the program ran them (sharing one session would replay a conversation their input
        already carries). Helpers and tools an agent calls run inside that rollout, without a session — but for the
        helper that runs the driver's agents for it once per rollout (``sample_helper``): its sample run takes the
        session, created at the top of the helper."""
        if (planner.d.kind == "helper" and not planner.sample_helper) or run is not planner.sample:
            return None
        p = planner.p
        existing = next((sp for sp in p.sessions if sp.replaces is None), None)
        if existing is not None:
            rp.session = existing.var
            return None
        taken = set(p.facts.stores) | set(p.facts.loads) | {sp.var for sp in p.sessions}
        var = "session"
        n = 2
        while var in taken:
            var = f"session_{n}"
            n += 1
        first = next((s for s in planner.d.stmts if not is_docstring(s)), run.top)
        p.sessions.append(SessionPlan(var=var, name=None, before=first))
        rp.session = var
        return None

    def _user_session(self, run: RunSite, rp: RunPlan, planner: "DriverPlanner") -> Optional[str]:
        """The program passes its own session: the object becomes an OsmosisMemorySession where it is built."""
        p = planner.p
        sess = run.shape.session
        assert sess is not None
        if isinstance(sess, cst.Call) and self.is_session_ctor(sess):
            if any(sp.replaces is sess for sp in p.sessions):
                return None
            name = None if (run.in_loop or run.nested) else (run.agent or "session")
            p.sessions.append(SessionPlan(var="", name=name, before=None, replaces=sess))
            return None
        if not isinstance(sess, cst.Name):
            return f"it passes `session={code(sess)}`, which the migration cannot trace"
        if any(sp.var == sess.value for sp in p.sessions):
            return None
        stores = p.facts.stores.get(sess.value, [])
        if len(stores) == 1 and stores[0].simple and isinstance(stores[0].value, cst.Call) \
                and self.is_session_ctor(stores[0].value):
            for arg in stores[0].value.args:
                inner = arg.value
                if isinstance(inner, cst.Name) and any(
                    isinstance(a.value, cst.Call) and self.is_session_ctor(a.value) for a in p.facts.stores.get(inner.value, ())
                ):
                    return (f"its session `{sess.value}` wraps the session `{inner.value}`, which the program "
                            "also uses: one rollout session (OsmosisMemorySession) cannot stand for both")
            other = _session_uses_beyond_abc(planner, sess.value)
            if other:
                return (f"it calls `{sess.value}.{other}()`, which the rollout's OsmosisMemorySession does not have "
                        f"(only the Session methods get_items/add_items/pop_item/clear_session)")
            name = None if stores[0].in_loop or stores[0].nested else sess.value
            p.sessions.append(SessionPlan(var=sess.value, name=name, before=None, replaces=stores[0].value))
            return None
        if not stores and sess.value in planner.m.sessions:
            return (f"it passes the module-level session `{sess.value}`: a rollout's session must be built inside "
                    "run() — build an OsmosisMemorySession there by hand")
        return f"it passes `session={sess.value}`, which is not a session object built here"

    def _resumed_from(self, run: RunSite, planner: "DriverPlanner") -> Optional[str]:
        """The session of the run a ``RunState`` input continues (``state = result.to_state()``); "" when the state
        may come from runs with different sessions (the caller refuses)."""
        inp = run.shape.input_arg.value if run.shape.input_arg is not None else None
        if not isinstance(inp, cst.Name):
            return None
        found: set[str] = set()
        resumed = False
        for a in planner.p.facts.stores.get(inp.value, ()):
            v = a.value
            if isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "to_state" \
                    and isinstance(v.func.value, cst.Name):
                resumed = True
                result_var = v.func.value.value
                for other in planner.p.facts.runs:
                    if other is run or not _assigns(other.stmt, result_var):
                        continue
                    rp = planner.p.runs.get(id(other.call))
                    if rp is not None and rp.session:
                        found.add(rp.session)
            elif isinstance(v, cst.Call) or isinstance(v, cst.Await):
                text = code(v, 200)
                if "RunState" in text:
                    resumed = True
        if not resumed:
            return None
        return found.pop() if len(found) == 1 else ""

    def plan_samples(self, planner: "DriverPlanner") -> Optional[str]:
        p = planner.p
        if not self.target.startswith("0.3") or planner.d.kind == "helper":
            return None
        if len(p.sessions) > 1:
            vars_ = ", ".join(f"`{sp.var or 'session'}`" for sp in p.sessions)
            return (f"osmosis-ai 0.3 keeps one sample per rollout, and this workflow needs {len(p.sessions)} sessions "
                    f"({vars_}): choose the run whose conversation is the sample, give only it an "
                    "OsmosisMemorySession()")
        if any(sp.replaces is not None and sp.name is None for sp in p.sessions):
            return ("osmosis-ai 0.3 keeps one sample per rollout, and this workflow builds its session again on every "
                    "pass of a loop: build it once per run()")
        if planner.sample is not None and planner.already_migrated(planner.sample):
            return None  # its session was written by a previous migration (or by hand)
        if p.sessions or any(hp.sessions for hp in p.helper_plans.values()) \
                or any(mp.sessions for plans in p.class_plans.values() for mp in plans):
            return None
        elsewhere = sorted({*p.helper_plans, *p.class_plans, *(n for n in p.renames
                                                               if n in planner.m.imported_classes
                                                               or n in planner.m.imported_helpers)})
        if not p.facts.runs and elsewhere:
            return (f"its runs happen inside `{elsewhere[0]}`: osmosis-ai 0.3 records one conversation per rollout, "
                    "the session of the run whose conversation is the sample, and the migration cannot hand a session "
                    "of run() to a run in another function - pass `session=OsmosisMemorySession()` (created once in "
                    "run()) to that run by hand")
        if p.facts.runs:
            return ("osmosis-ai 0.3 keeps one sample per rollout, and every run of this workflow repeats (in a loop, "
                    "a nested function or a gather): none is the one conversation to train — make the run whose "
                    "conversation is the sample run once per run()")
        return None

    # -- writing
    def write_run(self, call: cst.Call, run: RunSite, rp: RunPlan, text: Optional[str]) -> cst.BaseExpression:
        original = run.call
        new = call
        if rp.method is not None and isinstance(new.func, cst.Attribute):
            new = new.with_changes(func=new.func.with_changes(attr=cst.Name(rp.method)))
        if rp.input == "prompt" and run.shape.input_arg is not None:
            idx = list(original.args).index(run.shape.input_arg)
            args = list(new.args)
            args[idx] = args[idx].with_changes(value=CTX_PROMPT)
            new = new.with_changes(args=args)
        if rp.drop_run_config_model:
            cfg_arg = kwarg(new, "run_config")
            if cfg_arg is not None and isinstance(cfg_arg.value, cst.Call):
                cfg = cfg_arg.value
                for key in RUN_CONFIG_MODEL:
                    cfg = without_kwarg(cfg, key)
                new = with_kwarg(new, "run_config", cfg)
        if rp.session and kwarg(new, "session") is None:
            new = with_kwarg(new, "session", cst.Name(rp.session))
        what = "run" + (" (Runner.run_sync → awaited Runner.run)" if rp.method == "run" else "")
        detail = {"prompt": "with the rollout prompt", "sub": "with the prompt's text in its template",
                  "keep": "input kept"}.get(rp.input, "")
        self.ctx.edit(codes.OPENAI.run.code, self.where, f"{what} of `{run.agent or code(run.shape.agent)}` {detail}"
                      + (f", session `{rp.session}`" if rp.session else ""))
        return cst.Await(expression=new) if rp.await_it else new

    def write_ctor(self, call: cst.Call, plan: CtorPlan) -> cst.Call:
        new = super().write_ctor(call, plan)
        note = f" (model: {plan.model_note} → OsmosisRolloutModel())" if plan.model is not None and plan.model_note else ""
        self.ctx.edit(codes.OPENAI.agent.code, self.where, f"OpenAI Agents Agent → OsmosisAgent{note}")
        return new

    def session_ctor(self, sp: SessionPlan) -> cst.Call:
        self.need(OAI_MOD, "OsmosisMemorySession")
        if sp.name is None or self.target.startswith("0.3"):
            return cst.Call(func=cst.Name("OsmosisMemorySession"))
        return cst.Call(func=cst.Name("OsmosisMemorySession"), args=[cst.Arg(
            keyword=cst.Name("name"), value=cst.SimpleString(f'"{sp.name}"'),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        )])

    def session_stmt(self, sp: SessionPlan) -> cst.SimpleStatementLine:
        what = f'named "{sp.name}"' if sp.name and not self.target.startswith("0.3") else "a fresh one each pass" if sp.name is None else "one per rollout"
        self.ctx.edit(codes.OPENAI.session.code, self.where, f"session `{sp.var}` for the rollout sample ({what})")
        return cst.SimpleStatementLine(body=[cst.Assign(
            targets=[cst.AssignTarget(cst.Name(sp.var))], value=self.session_ctor(sp))])


def _sync_helper(planner: "DriverPlanner") -> bool:
    func = planner.d.func
    return planner.d.kind == "helper" and func is not None and func.asynchronous is None


SESSION_METHODS = {"get_items", "add_items", "pop_item", "clear_session", "session_id", "session_settings"}


def _session_uses_beyond_abc(planner: "DriverPlanner", var: str) -> Optional[str]:
    """The first attribute of session ``var`` the code uses that is not part of the Session protocol."""
    found: list[str] = []
    for stmt in planner.d.stmts:
        fast_visit(stmt, _NonSessionAttributes(var, found))
    return found[0] if found else None


class _NonSessionAttributes(cst.CSTVisitor):
    """Appends to ``found`` the attributes of session ``var`` that are not Session protocol methods."""

    def __init__(self, var: str, found: list[str]) -> None:
        super().__init__()
        self.var = var
        self.found = found

    def visit_Attribute(self, n: cst.Attribute) -> None:
        if isinstance(n.value, cst.Name) and n.value.value == self.var and n.attr.value not in SESSION_METHODS:
            self.found.append(n.attr.value)


def _assigns(stmt: cst.CSTNode, var: str) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    if isinstance(t.target, cst.Name) and t.target.value == var:
                        return True
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == var:
                return True
    return False


class OpenAIAgentRule(Rule):
    """Plain OpenAI Agents SDK agents → OsmosisAgent + OsmosisMemorySession in an AgentWorkflow."""

    code = codes.OPENAI.base.code
    name = "openai-agent"
    summary = "agents.Agent + Runner.run → OsmosisAgent(model=OsmosisRolloutModel()) + OsmosisMemorySession in AgentWorkflow.run()"
    trigger_words = ("from agents", "import agents")

    uses_repo = True  # cross-file facts (codemods.analysis.repo): the driver builds them for a run over a tree

    @classmethod
    def offers(cls, tree: cst.Module, table: ImportTable, ctx: RuleContext, module: str,
               names: Sequence[str]) -> dict[str, Verdict]:
        """What ``tree`` offers other files of the run (:func:`codemods.plan.offers.offers_of`)."""
        fw = cls.framework(table, ctx)
        return {} if fw is None else offers_of(tree, fw, module, names)

    @classmethod
    def framework(cls, table: ImportTable, ctx: RuleContext) -> Optional[OpenAIFramework]:
        """The framework for a module that imports the OpenAI Agents SDK, else None."""
        if not any(
            q == "agents" or q.startswith("agents.")
            for q in [*table.names.values(), *table.modules.values(), *table.stars]
        ):
            return None
        return OpenAIFramework(table, ctx)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        return migrate_plain(module, ctx, self.code, self.framework, OpenAIFramework)
