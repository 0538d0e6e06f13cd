"""``strands-agent`` (OM100): plain ``strands.Agent`` code → ``OsmosisStrandsAgent`` in an ``AgentWorkflow``.

The four steps of the Strands migration guide (seeds/strands-integration.md, "Migrating from StrandsAgent"), made
safe by the engine (:mod:`codemods.plain`: analysis → plan → emit):

1. imports: ``from strands import Agent`` / the model classes go when unused; the Osmosis names are added once;
2. the model → ``OsmosisRolloutModel(params={…})`` (OM101): ``LiteLLMModel`` and the hosted model classes
   (``BedrockModel``, ``OpenAIModel``, ``AnthropicModel``, ``OllamaModel``, ``MistralModel``, ``WriterModel``,
   ``LlamaAPIModel``, ``GeminiModel``, ``LlamaCppModel``, ``SageMakerAIModel``, and any other ``…Model`` class)
   lose what only addressed their provider (model id, client arguments, region, host, streaming) and carry their
   sampling settings (``temperature``, ``max_tokens``, ``top_p``, ``stop_sequences`` → ``stop``, a ``params`` dict…)
   into ``params`` — also when the model comes through a local variable or a module-level name (a module-level
   model only migrated agents use becomes the placeholder where it is). A setting with no equivalent
   (``guardrail_id``, ``cache_prompt``, ``additional_request_fields``…) means the agent is not migrated (OM190
   names them). A missing or string model (Strands' default is Bedrock) becomes ``OsmosisRolloutModel()``;
3. ``Agent(…)`` → ``OsmosisStrandsAgent(…)`` (OM102), other arguments untouched;
4. the agent is built per rollout inside ``AgentWorkflow.run()`` (OM103): the run that takes the program's input
   starts from ``messages=ctx.prompt`` (or, when it is not the agent's first run, takes the prompt's text); every
   other input (a template around the input, a previous agent's output) is kept; sync calls become awaited
   ``invoke_async()``, ``structured_output`` → ``structured_output_async`` (OM105); ``stream_async`` keeps its
   stream.

Samples: each ``OsmosisStrandsAgent`` registers itself as a sample source. Target 0.3 (one sample per rollout): only
the agent of the sample run — the driver's last run that runs once per rollout — becomes ``OsmosisStrandsAgent``;
the driver's other agents stay ``strands.Agent``, on the rollout's model (``_rollout_model(...)``, written into the
file) or, when theirs cannot be carried over, their own, each with an OM191 TODO naming the sample; a ``@tool`` that
runs its own agent keeps it plain (OM191). A workflow that would build the trained agent more than once, or train
several agents with no single run ending it, is not migrated (OM190). Target 0.2: every agent becomes
``OsmosisStrandsAgent``, each a sample; one with a literal ``name=`` built in a loop or helper, or two with one name,
means no migration.

TODOs: OM190 driver not migrated (the reason named), OM191 plain agent left (why), OM194 several workflows in one
module, OM195 no grader, OM196 module-level state the workflow's tools change (shared by every
rollout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods import codes
from codemods.analysis.body import RunShape, RunSite, code, contains, is_string, names_in
from codemods.analysis.code_facts import call_sites, called_once
from codemods.analysis.module import assigned_value
from codemods.analysis.repo import Verdict
from codemods.base import ImportTable, Rule, RuleContext, literal_eval
from codemods.framework import Framework
from codemods.osmosis_api import ROLLOUT_MODEL, prompt_text_expr
from codemods.plain import migrate_plain
from codemods.plan.model import CtorPlan, RunPlan
from codemods.plan.offers import offers_of
from codemods.syntax import kwarg, without_kwarg

if TYPE_CHECKING:
    from codemods.plan.planner import DriverPlanner

STRANDS_MOD = "osmosis_ai.rollout.integrations.agents.strands"
AGENT_CTORS = ("strands.Agent", "strands.agent.Agent", "strands.agent.agent.Agent")
GROUP_CTORS = ("strands.multiagent.Swarm", "strands.multiagent.swarm.Swarm")
LITELLM = ("strands.models.litellm.LiteLLMModel", "strands.models.LiteLLMModel")
PLACEHOLDERS = (
    f"{STRANDS_MOD}.OsmosisRolloutModel",
    "osmosis_ai.rollout.OsmosisRolloutModel",
    "osmosis_ai.rollout.integrations.OsmosisRolloutModel",
    "osmosis_ai.rollout.integrations.agents.OsmosisRolloutModel",
)
TOOL_DECORATORS = ("strands.tool", "strands.tools.tool", "strands.tools.decorator.tool")
RUN_METHODS = ("invoke_async", "stream_async", "structured_output", "structured_output_async")

# What a model constructor's keyword arguments become in ``OsmosisRolloutModel(params={...})``:
CONNECTION = {  # address the provider: the training cluster serves the policy instead
    "model_id", "client_args", "region_name", "boto_session", "boto_client_config", "endpoint_url", "host",
    "base_url", "api_key", "api_base", "streaming", "stream", "keep_alive", "client", "timeout", "ollama_client_args",
    "endpoint_config", "stream_options", "use_native_token_count", "include_tool_result_status",
}
SAMPLING = {  # sampling settings LiteLLM takes under the same name
    "temperature", "max_tokens", "top_p", "top_k", "stop", "seed", "frequency_penalty", "presence_penalty",
    "max_completion_tokens", "n", "logit_bias", "response_format", "reasoning_effort",
}
RENAMED = {"stop_sequences": "stop", "max_output_tokens": "max_tokens", "maxTokens": "max_tokens"}
PARAM_DICTS = {"params", "payload_config"}  # dicts of request parameters (merged key by key when literal)


class StrandsFramework(Framework):
    code = codes.STRANDS.base.code
    codes = codes.STRANDS
    agent_ctors = AGENT_CTORS
    osmosis_agent = (STRANDS_MOD, "OsmosisStrandsAgent")
    label = "Strands"
    tool_decorators = TOOL_DECORATORS
    agent_is_sample_source = True
    state_kwargs = ("messages", "conversation_manager", "session_manager", "state", "hooks")
    direct_run = "{agent}({input})"

    # -- recognisers
    def is_group_ctor(self, call: cst.Call) -> bool:
        return self.table.matches(call.func, GROUP_CTORS) is not None

    def model_kind(self, call: cst.Call) -> Optional[str]:
        if self.table.matches(call.func, PLACEHOLDERS) is not None or (
            isinstance(call.func, cst.Name) and call.func.value == "OsmosisRolloutModel"
        ):
            return "placeholder"
        if self.table.matches(call.func, LITELLM) is not None:
            return "litellm"
        resolved = self.table.resolve(call.func) or ""
        last = resolved.rsplit(".", 1)[-1]
        if (resolved.startswith("strands.models") or resolved.startswith("strands_")) and last.endswith("Model") \
                and last != "Model":
            return "hosted"
        return None

    def run_heads(self) -> set[str]:
        return self.ctor_heads()

    def run_shape(self, call: cst.Call, agents: set[str]) -> Optional[RunShape]:
        func = call.func
        if (isinstance(func, cst.Name) and func.value in agents) or (
            isinstance(func, cst.Attribute) and _dotted(func) in agents  # self.agent(...)
        ):
            return RunShape(agent=func, method="call", input_arg=_prompt_arg(call, 0))
        if (
            isinstance(func, cst.Attribute)
            and (isinstance(func.value, cst.Name) or _dotted(func.value) in agents)
            and (_dotted(func.value) in agents)
            and func.attr.value in RUN_METHODS
        ):
            method = func.attr.value
            first = 1 if method.startswith("structured_output") else 0
            return RunShape(agent=func.value, method=method, input_arg=_prompt_arg(call, first),
                            is_async_call=method.endswith("_async") and method != "stream_async",
                            is_stream=method == "stream_async")
        return None

    # -- models
    def convert_model_call(self, call: cst.Call) -> tuple[Optional[cst.Call], str, list]:
        """``<Model>(...)`` → ``OsmosisRolloutModel(params={...})``: (new call, problem, argument values dropped)."""
        kind = self.model_kind(call)
        cls = code(call.func)
        if kind == "placeholder":
            return call, "", []
        if kind is None:
            return None, f"its model `{code(call, 50)}` is not a model class the migration knows", []
        elements: list[cst.BaseDictElement] = []
        params_expr: Optional[cst.BaseExpression] = None
        dropped: list[cst.CSTNode] = []
        refused: list[str] = []
        for arg in call.args:
            if arg.star:
                return None, f"its model `{cls}(...)` takes `**{code(arg.value)}`, whose settings cannot be read", []
            if arg.keyword is None:
                return None, f"its model `{cls}(...)` takes positional arguments, whose meaning cannot be read", []
            key = arg.keyword.value
            if key in CONNECTION or (kind == "litellm" and key in ("model_id", "client_args")):
                dropped.append(arg.value)
            elif key in PARAM_DICTS:
                if isinstance(arg.value, cst.Dict):
                    for el in arg.value.elements:
                        if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                            k = literal_eval(el.key.value)  # its evaluated_value (see base.literal_eval)
                            if isinstance(k, str) and k in RENAMED:
                                el = el.with_changes(key=cst.SimpleString(f'"{RENAMED[k]}"'))
                            elif kind != "litellm" and isinstance(k, str) and k not in SAMPLING and key == "payload_config":
                                if k in CONNECTION:
                                    continue
                                refused.append(f"{key}[{k!r}]")
                                continue
                        elements.append(el)
                    if not call.args or len([a for a in call.args if a.keyword and a.keyword.value not in CONNECTION]) == 1:
                        params_expr = arg.value if not refused else None
                else:
                    elements.append(cst.StarredDictElement(value=arg.value))
                    if len([a for a in call.args if a.keyword and a.keyword.value not in CONNECTION]) == 1:
                        params_expr = arg.value
            elif key in SAMPLING or key in RENAMED:
                elements.append(cst.DictElement(key=cst.SimpleString(f'"{RENAMED.get(key, key)}"'), value=arg.value))
            elif kind == "litellm":
                elements.append(cst.DictElement(key=cst.SimpleString(f'"{key}"'), value=arg.value))
            else:
                refused.append(key)
        if refused:
            return None, (
                f"its model `{cls}(...)` sets {', '.join(f'`{r}`' for r in refused)}, which the rollout model "
                "(OsmosisRolloutModel) cannot carry"
            ), []
        self.note_replaced(call.func)
        self.need(STRANDS_MOD, "OsmosisRolloutModel")
        if params_expr is None and elements:
            fixed = []
            for j, el in enumerate(elements):
                last = j == len(elements) - 1
                fixed.append(el.with_changes(
                    comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                ))
            params_expr = cst.Dict(elements=fixed)
        args = [] if params_expr is None else [cst.Arg(keyword=cst.Name("params"), value=params_expr, equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))]
        return cst.Call(func=cst.Name("OsmosisRolloutModel"), args=args), "", dropped

    def module_model_value(self, call: cst.Call) -> tuple[Optional[cst.BaseExpression], str, list]:
        return self.convert_model_call(call)

    def positional_model(self, call: cst.Call) -> Optional[int]:
        return 0 if call.args and call.args[0].keyword is None and not call.args[0].star else None

    def _model_arg(self, ctor: cst.Call) -> Optional[cst.Arg]:
        arg = kwarg(ctor, "model")
        if arg is None and ctor.args and ctor.args[0].keyword is None and not ctor.args[0].star:
            arg = ctor.args[0]
        return arg

    def plan_model(self, ctor: cst.Call, planner: "DriverPlanner", nested: Optional[str]):
        stored = kwarg(ctor, "session_manager")
        if stored is not None:
            # a session manager restores and saves the agent's conversation (a file, S3, a database): every rollout
            # would start from the stored one and extend it — not one conversation from ctx.prompt
            return CtorPlan(), (
                f"its agent keeps its conversation in `session_manager={code(stored.value, 50)}`, which every rollout "
                "would restore and extend: a rollout is one conversation from ctx.prompt - drop the session manager "
                "for training (or give each rollout a fresh session id) by hand"
            ), []
        arg = self._model_arg(ctor)
        value = arg.value if arg is not None else None
        if value is None or self._is_model_id(value):
            # no model (Strands' default: Bedrock) or a fixed model id: the rollout placeholder instead
            self.need(STRANDS_MOD, "OsmosisRolloutModel")
            note = "none (Strands' default, Bedrock)" if value is None else f"`{code(value, 40)}`"
            return CtorPlan(model=cst.Call(func=cst.Name("OsmosisRolloutModel")), model_note=note), "", [] if value is None else [value]
        if isinstance(value, cst.Call):
            new, problem, gone = self.convert_model_call(value)
            if problem:
                return CtorPlan(), problem, []
            if new is value:
                return CtorPlan(), "", []
            return CtorPlan(model=new, model_note=f"`{code(value.func)}(...)`"), "", gone
        if isinstance(value, cst.Name):
            resolved = planner.resolve_local(value.value)
            if resolved is None:
                return CtorPlan(), f"its model `{value.value}` cannot be traced to a model the migration knows", []
            where, held, extra = resolved
            if where == "param":
                return CtorPlan(), (f"its model comes from the parameter `{value.value}`: the rollout placeholder "
                                    "must be built inside run() — pass OsmosisRolloutModel(params={...}) by hand"), []
            if held is not None and self._is_model_id(held):
                self.need(STRANDS_MOD, "OsmosisRolloutModel")
                return CtorPlan(model=cst.Call(func=cst.Name("OsmosisRolloutModel")), model_note=f"`{value.value}`"), "", []
            if not isinstance(held, cst.Call):
                return CtorPlan(), f"its model `{value.value}` = `{code(held) if held is not None else '?'}` is not a model the migration knows", []
            new, problem, gone = self.convert_model_call(held)
            if problem:
                return CtorPlan(), problem.replace("its model", f"its model `{value.value}` =", 1), []
            if new is held:
                return CtorPlan(), "", []
            if where == "local":
                # `model = LiteLLMModel(...)` in the same body: converted where it is
                planner.p.model_assigns[id(held)] = new
                return CtorPlan(), "", gone
            return CtorPlan(model=new, module_var=value.value, fallback=new, model_note=f"`{value.value}`"), "", gone
        held = planner.resolve_attr(value)
        if isinstance(held, cst.Call):
            new, problem, gone = self.convert_model_call(held)
            if problem:
                return CtorPlan(), problem.replace("its model", f"its model `{code(value)}` =", 1), []
            if new is not held:
                planner.p.model_assigns[id(held)] = new  # `self.model = LiteLLMModel(...)`: converted where it is set
            return CtorPlan(), "", gone
        if held is not None and self._is_model_id(held):
            self.need(STRANDS_MOD, "OsmosisRolloutModel")
            return CtorPlan(model=cst.Call(func=cst.Name("OsmosisRolloutModel")), model_note=f"`{code(value)}`"), "", []
        return CtorPlan(), f"its model `{code(value, 40)}` cannot be traced to a model the migration knows", []

    def _is_model_id(self, value: cst.BaseExpression) -> bool:
        """A string for ``model=``: Strands reads it as a Bedrock model id — a literal, an f-string, or read from the
        environment (``os.environ["X"]``, ``os.environ.get("X", …)``, ``os.getenv("X")``)."""
        if is_string(value) or isinstance(value, cst.FormattedString):
            return True
        if isinstance(value, cst.Subscript):
            return self.table.resolve(value.value) == "os.environ"
        return isinstance(value, cst.Call) and self.table.resolve(value.func) in ("os.getenv", "os.environ.get")

    def plan_plain_model(self, ctor: cst.Call, planner: "DriverPlanner") -> Optional[CtorPlan]:
        """The rollout's model for an agent that is not the sample: ``_rollout_model(params={…})`` (generated into
        the file) with the sampling settings its model carried; None when its model cannot be read."""
        arg = self._model_arg(ctor)
        value = arg.value if arg is not None else None
        if isinstance(value, cst.Name):
            resolved = planner.resolve_local(value.value)
            value = resolved[1] if resolved is not None and resolved[0] != "param" else value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == ROLLOUT_MODEL:
            return CtorPlan(plain=True)  # on the rollout's model already (a previous migration)
        if value is None or self._is_model_id(value):
            args: Sequence[cst.Arg] = []
        elif isinstance(value, cst.Call):
            new, problem, _ = self.convert_model_call(value)
            if problem:
                return None
            args = new.args
        else:
            return None
        return CtorPlan(model=cst.Call(func=cst.Name(ROLLOUT_MODEL), args=args), plain=True,
                        model_note="the rollout's model (not the sample)")

    # -- runs and samples
    def plan_run(self, run: RunSite, rp: RunPlan, planner: "DriverPlanner") -> Optional[str]:
        p = planner.p
        method = run.shape.method
        can_await = (not run.nested or run.nested_async) and not (
            planner.d.kind == "helper" and planner.d.func is not None and planner.d.func.asynchronous is None
        )
        if method == "call":
            if can_await:
                rp.method, rp.await_it = "invoke_async", True
        elif method == "structured_output":
            if can_await:
                rp.method, rp.await_it = "structured_output_async", True
        elif run.in_asyncio_run and can_await:
            rp.await_it = True  # asyncio.run(agent.invoke_async(q)) inside run(): awaited
        if rp.input == "prompt":
            ctor = self._ctor_of(run.agent, planner)
            first = min((r.order for r in p.facts.runs if r.agent == run.agent), default=run.order)
            if ctor is not None and run.order == first and not run.in_loop and not run.nested \
                    and kwarg(ctor, "messages") is None and id(ctor) in p.ctors and not p.ctors[id(ctor)].plain \
                    and not _built_in_loop(ctor, p) and not _used_before(run, planner):
                p.ctors[id(ctor)].messages_prompt = True
                rp.input = "drop"
            else:
                rp.input = "text"
                p.prompt_text = True
        return None

    def _ctor_of(self, agent: Optional[str], planner: "DriverPlanner") -> Optional[cst.Call]:
        if agent is None:
            return None
        ctors = [c.call for c in planner.p.facts.ctors if c.var == agent]
        if agent in planner.p.deps and agent not in planner.m.groups:
            v = assigned_value(planner.m.body[planner.m.agents[agent]])
            if isinstance(v, cst.Call):
                ctors.append(v)
        return ctors[0] if len(ctors) == 1 else None

    def plan_samples(self, planner: "DriverPlanner") -> Optional[str]:
        if self.target.startswith("0.3"):
            return self._one_sample(planner)
        p = planner.p
        built: list[tuple[str, Optional[str], bool]] = []  # (what, literal name, repeated)
        helper = planner.d.kind == "helper"  # built each time the helper (a tool…) is called
        for c in p.facts.ctors:
            built.append((c.var or "an agent", _literal_name(c.call), c.in_loop or c.nested is not None or helper))
        for dep in p.deps:
            v = assigned_value(planner.m.body[planner.m.agents[dep]])
            if dep not in planner.m.groups:
                built.append((dep, _literal_name(v) if isinstance(v, cst.Call) else None, helper))
        for what, literal, repeated in built:
            if repeated and literal:
                return (f"it builds `{what}` named \"{literal}\" in a loop or nested function: each OsmosisStrandsAgent "
                        "registers a sample under its name, and the second would repeat it — drop the name or make it "
                        "unique per pass")
        names = [lit for _, lit, _ in built if lit]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            return f"it builds several agents named \"{sorted(dup)[0]}\": each registers a sample under its name"
        return None

    def _one_sample(self, planner: "DriverPlanner") -> Optional[str]:
        """osmosis-ai 0.3: exactly one OsmosisStrandsAgent per rollout (each registers itself as the rollout's sample
        source; a second raises). The agents converted — those the plan gives the placeholder — must be one, built
        once per rollout."""
        p = planner.p
        converted: list[tuple[str, bool]] = []  # (what, in words with its code quoted; built repeatedly)
        helper = planner.d.kind == "helper"  # how often a helper runs is its caller's to say (below)
        # a method other than __init__ that builds an agent builds one per call, however often its object is built
        per_call = helper and "." in planner.d.name and not planner.d.name.endswith(".__init__")
        def osmosis(call: cst.Call) -> bool:
            return id(call) in p.ctors and not p.ctors[id(call)].plain

        for c in p.facts.ctors:
            if osmosis(c.call):
                converted.append((f"`{c.var}`" if c.var else "an agent", c.in_loop or c.nested is not None or per_call))
        for dep in p.deps:
            v = assigned_value(planner.m.body[planner.m.agents[dep]])
            if dep not in planner.m.groups and isinstance(v, cst.Call) and osmosis(v):
                converted.append((f"`{dep}`", per_call))  # built in the helper per call, as its own agents are
        for name, hp in p.helper_plans.items():
            if any(not cp.plain for cp in hp.ctors.values()):
                # the helper builds its agent per call: once per rollout when run() calls it once
                converted.append((f"the agent `{name}()` builds", not called_once(planner.d.stmts, name)))
        for name, plans in p.class_plans.items():
            calls, repeated = call_sites(planner.d.stmts, name)
            if calls and any(not cp.plain for pl in plans for cp in pl.ctors.values()):
                # its __init__ builds the agent: once per rollout when run() builds the object once
                converted.append((f"the agent a `{name}` object builds", calls > 1 or repeated))
        for name, fp in p.factory_plans.items():
            # each call of the factory builds its agents (a graph's or a swarm's members: every one a sample source)
            once = called_once(planner.d.stmts, name)
            converted.extend((f"`{c.var}` (built by `{name}()`)" if c.var else f"an agent `{name}()` builds", not once)
                             for c in fp.facts.ctors if id(c.call) in fp.ctors and not fp.ctors[id(c.call)].plain)
        repeated = [w for w, r in converted if r]
        if repeated:
            return (f"osmosis-ai 0.3 keeps one sample per rollout, and {repeated[0]} is built again on every pass "
                    "or call (each OsmosisStrandsAgent registers itself as the sample): build the trained agent once "
                    "per run()")
        if len(converted) > 1:
            return (f"osmosis-ai 0.3 keeps one sample per rollout, and this workflow would train {len(converted)} "
                    f"agents ({', '.join(w for w, _ in converted)}) with no single run ending it: keep the "
                    "rollout model on the agent whose result is the workflow's answer")
        return None

    # -- writing
    def write_run(self, call: cst.Call, run: RunSite, rp: RunPlan, text: Optional[str]) -> cst.BaseExpression:
        original = run.call
        new = call
        if rp.method is not None:
            if isinstance(new.func, cst.Attribute) and run.shape.method != "call":  # `agent.method(…)`
                new = new.with_changes(func=new.func.with_changes(attr=cst.Name(rp.method)))
            else:
                new = new.with_changes(func=cst.Attribute(value=new.func, attr=cst.Name(rp.method)))
        arg = run.shape.input_arg
        if arg is not None and rp.input in ("drop", "text"):
            idx = list(original.args).index(arg)
            args = list(new.args)
            if rp.input == "text":
                args[idx] = args[idx].with_changes(value=prompt_text_expr())
            else:
                if arg.keyword is not None:
                    new = without_kwarg(new.with_changes(args=args), arg.keyword.value)
                    args = list(new.args)
                else:
                    removed = args.pop(idx)
                    if args and idx == len(args):
                        args[-1] = args[-1].with_changes(comma=removed.comma if idx > 0 else cst.MaybeSentinel.DEFAULT)
                    if not args:
                        new = new.with_changes(whitespace_before_args=cst.SimpleWhitespace(""))
            new = new.with_changes(args=args)
            if not args:
                new = new.with_changes(args=[])
        agent = run.agent or code(run.shape.agent)
        how = {"drop": "with the rollout prompt (messages=ctx.prompt)", "text": "with the prompt's text",
               "sub": "with the prompt's text in its template", "keep": "input kept"}[rp.input]
        verb = "awaited" if rp.await_it else "run"
        self.ctx.edit(codes.STRANDS.run.code, self.where, f"run of `{agent}` {verb} {how}")
        return cst.Await(expression=new) if rp.await_it else new

    def write_ctor(self, call: cst.Call, plan: CtorPlan) -> cst.Call:
        new = super().write_ctor(call, plan)
        if plan.plain:
            self.ctx.edit(codes.STRANDS.model.code, self.where, "a Strands Agent that is not the sample now runs on "
                          "the rollout's model (`_rollout_model`)")
            return new
        note = f" (model: {plan.model_note} → OsmosisRolloutModel)" if plan.model is not None and plan.model_note else ""
        self.ctx.edit(codes.STRANDS.agent.code, self.where, f"Strands Agent → OsmosisStrandsAgent{note}")
        return new


def _literal_name(call: cst.Call) -> Optional[str]:
    """The agent's ``name="..."`` when it is a string literal."""
    arg = kwarg(call, "name")
    value = literal_eval(arg.value.value) if arg is not None and isinstance(arg.value, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _dotted(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return f"{expr.value.value}.{expr.attr.value}"
    return None


def _prompt_arg(call: cst.Call, index: int) -> Optional[cst.Arg]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if len(positional) > index:
        return positional[index]
    return kwarg(call, "prompt")


def _built_in_loop(ctor: cst.Call, plan) -> bool:
    return any(c.call is ctor and (c.in_loop or c.nested) for c in plan.facts.ctors)


class StrandsAgentRule(Rule):
    """Plain Strands agents → OsmosisStrandsAgent built per rollout in an AgentWorkflow."""

    code = codes.STRANDS.base.code
    name = "strands-agent"
    summary = "strands.Agent + its model → OsmosisStrandsAgent + OsmosisRolloutModel in AgentWorkflow.run()"
    trigger_words = ("from strands", "import strands")

    uses_repo = True  # cross-file facts (codemods.analysis.repo): the driver builds them for a run over a tree

    @classmethod
    def offers(cls, tree: cst.Module, table: ImportTable, ctx: RuleContext, module: str,
               names: Sequence[str]) -> dict[str, Verdict]:
        """What ``tree`` offers other files of the run (:func:`codemods.plan.offers.offers_of`)."""
        fw = cls.framework(table, ctx)
        return {} if fw is None else offers_of(tree, fw, module, names)

    @classmethod
    def framework(cls, table: ImportTable, ctx: RuleContext) -> Optional[StrandsFramework]:
        """The framework for a module that imports Strands, else None."""
        if not any(q.startswith("strands") for q in [*table.names.values(), *table.modules.values(), *table.stars]):
            return None
        return StrandsFramework(table, ctx)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        return migrate_plain(module, ctx, self.code, self.framework, StrandsFramework)


def _used_before(run: RunSite, planner: "DriverPlanner") -> bool:
    """The run's agent is used (``agent.tool.x(...)``, its ``messages``…) by a statement before the run's: what that
    writes into its history comes before the prompt, so the prompt is the run's input, not the agent's first
    messages."""
    for stmt in planner.d.stmts:
        if contains(stmt, run.stmt):
            return False
        if any(n.value == run.agent for n in names_in(stmt)) and not any(
                contains(stmt, c.call) for c in planner.p.facts.ctors if c.var == run.agent):
            return True
    return False
