"""``strands-agent`` (OM100): plain ``strands.Agent`` code → ``OsmosisStrandsAgent`` in an ``AgentWorkflow``.

The four steps of the Strands migration guide (seeds/strands-integration.md, "Migrating from StrandsAgent"):

1. imports: ``from strands import Agent`` / ``LiteLLMModel`` go when unused; the Osmosis names are added once;
2. ``LiteLLMModel(model_id=…, params={…}, temperature=…)`` → ``OsmosisRolloutModel(params={…})``: the model id
   (and ``client_args``: the cluster owns the endpoint) dropped, sampling kwargs merged into ``params`` (OM101);
3. ``Agent(…)`` → ``OsmosisStrandsAgent(…)``, other arguments untouched; a missing or fixed (string) model becomes
   ``OsmosisRolloutModel()`` because only the placeholder registers the agent's sample (OM102);
4. the agent is built per rollout inside ``AgentWorkflow.run()`` with ``messages=ctx.prompt``, and run with
   ``await agent.invoke_async()`` — sync ``agent(...)`` calls become awaited ``invoke_async()`` (OM103/OM105).

Codes: OM101 model, OM102 agent class, OM103 wrapping, OM104 imports, OM105 run sites;
TODOs: OM190 driver not wrappable, OM191 plain agent left, OM192 argument to check, OM193 model left.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from codemods.base import ImportTable, Rule, RuleContext, has_skip_marker, with_todo_comment
from codemods.wrap import CTX_PROMPT, Framework, _is_workflow_class, kwarg, migrate_module, with_kwarg

STRANDS_MOD = "osmosis_ai.rollout.integrations.agents.strands"
AGENT_CTORS = ("strands.Agent", "strands.agent.Agent", "strands.agent.agent.Agent")
LITELLM = ("strands.models.litellm.LiteLLMModel", "strands.models.LiteLLMModel")
PLACEHOLDERS = (
    f"{STRANDS_MOD}.OsmosisRolloutModel",
    "osmosis_ai.rollout.OsmosisRolloutModel",
    "osmosis_ai.rollout.integrations.OsmosisRolloutModel",
    "osmosis_ai.rollout.integrations.agents.OsmosisRolloutModel",
)
# LiteLLMModel keyword arguments that are not sampling parameters
NOT_PARAMS = {"model_id", "client_args", "params"}


def placeholder_call(params: Optional[cst.BaseExpression] = None) -> cst.Call:
    args = [] if params is None else [cst.Arg(keyword=cst.Name("params"), value=params, equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))]
    return cst.Call(func=cst.Name("OsmosisRolloutModel"), args=args)


class StrandsFramework(Framework):
    code = "OM100"
    agent_ctors = AGENT_CTORS
    osmosis_agent = (STRANDS_MOD, "OsmosisStrandsAgent")
    label = "Strands"

    def is_litellm(self, call: cst.Call) -> bool:
        return self.table.matches(call.func, LITELLM) is not None

    def is_placeholder(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and (
            self.table.matches(expr.func, PLACEHOLDERS) is not None
            or (isinstance(expr.func, cst.Name) and expr.func.value == "OsmosisRolloutModel")
        )

    def convert_litellm(self, call: cst.Call) -> cst.Call | None:
        """``LiteLLMModel(...)`` → ``OsmosisRolloutModel(params={...})``; None when it cannot be done safely."""
        params_arg = kwarg(call, "params")
        extra: list[cst.Arg] = []
        for arg in call.args:
            if arg.star or arg.keyword is None:
                return None  # positional client_args or **splat: cannot tell what is inside
            if arg.keyword.value not in NOT_PARAMS:
                extra.append(arg)
        elements: list[cst.BaseDictElement] = []
        params: Optional[cst.BaseExpression] = None
        if params_arg is not None:
            if isinstance(params_arg.value, cst.Dict):
                elements = list(params_arg.value.elements)
            else:
                elements = [cst.StarredDictElement(value=params_arg.value)]
        for arg in extra:
            elements.append(cst.DictElement(key=cst.SimpleString(f'"{arg.keyword.value}"'), value=arg.value))
        if elements:
            if params_arg is not None and isinstance(params_arg.value, cst.Dict) and not extra:
                params = params_arg.value  # keep the user's dict (layout, comments) as it was
            elif params_arg is not None and not isinstance(params_arg.value, cst.Dict) and not extra:
                params = params_arg.value
            else:
                fixed = []
                for j, el in enumerate(elements):
                    last = j == len(elements) - 1
                    fixed.append(el.with_changes(
                        comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    ))
                params = cst.Dict(elements=fixed)
        self.note_replaced(call.func)
        self.needed.append((STRANDS_MOD, "OsmosisRolloutModel"))
        dropped = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value in ("model_id", "client_args")]
        msg = "LiteLLMModel → OsmosisRolloutModel"
        if dropped:
            msg += f" ({', '.join(dropped)} dropped: the training cluster serves the policy)"
        if extra:
            msg += f"; {', '.join(a.keyword.value for a in extra)} moved into params"
        self.ctx.edit("OM101", self.where or call, msg)
        return placeholder_call(params)

    def convert_call(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        if self.is_litellm(call):
            new = self.convert_litellm(call)
            if new is None:
                self.stmt_todos.append(
                    "replace this LiteLLMModel with OsmosisRolloutModel(params={...sampling kwargs...}) by hand "
                    "(positional or ** arguments)"
                )
            return new
        return None

    def fix_model(self, call: cst.Call) -> cst.Call:
        arg = kwarg(call, "model")
        value = arg.value if arg is not None else None
        if value is None or isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            # no model (Strands' default: Bedrock) or a fixed model id: the rollout placeholder instead
            self.needed.append((STRANDS_MOD, "OsmosisRolloutModel"))
            return with_kwarg(call, "model", placeholder_call())
        if isinstance(value, cst.Call):
            if self.is_placeholder(value) or self.is_litellm(value):
                return call  # LiteLLMModel(...) is converted on its own (convert_call)
            self.stmt_todos.append(
                f"`{cst.Module([]).code_for_node(value.func)}` is not the rollout placeholder: use "
                "model=OsmosisRolloutModel(params={...}) so the agent's sample is collected"
            )
            return call
        # a variable: fine when it holds a LiteLLMModel/OsmosisRolloutModel (converted where it is assigned)
        return call

    def add_prompt(self, call: cst.Call) -> cst.Call:
        arg = kwarg(call, "messages")
        if arg is None:
            return with_kwarg(call, "messages", CTX_PROMPT)
        if not (isinstance(arg.value, cst.Attribute) and cst.Module([]).code_for_node(arg.value) == "ctx.prompt"):
            self.stmt_todos.append(
                "this agent starts from its own `messages`; the rollout's prompt is ctx.prompt — merge them by hand"
            )
        return call

    def run_site_agent(self, call: cst.Call, agents: set[str]) -> Optional[cst.BaseExpression]:
        func = call.func
        if isinstance(func, cst.Name) and func.value in agents:
            return func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in agents
            and func.attr.value in ("invoke_async", "stream_async", "structured_output", "structured_output_async")
        ):
            return func.value
        return None

    def rewrite_run_site(self, call: cst.Call, agent_var: str):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value != "invoke_async":
            return call, [], f"uses `{agent_var}.{func.attr.value}(...)` (only calls and invoke_async are migrated)"
        kept = [a for a in call.args if a.keyword is not None or a.star == "**"]
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_call = cst.Call(
            func=cst.Attribute(value=cst.Name(agent_var), attr=cst.Name("invoke_async")),
            args=kept,
        )
        return cst.Await(expression=new_call), [], None


class StrandsAgentRule(Rule):
    """Plain Strands agents → OsmosisStrandsAgent built per rollout in an AgentWorkflow."""

    code = "OM100"
    name = "strands-agent"
    summary = "strands.Agent + LiteLLMModel → OsmosisStrandsAgent + OsmosisRolloutModel in AgentWorkflow.run()"
    trigger_words = ("from strands", "import strands")

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        table = ImportTable.of(module)
        if not any(q.startswith("strands") for q in [*table.names.values(), *table.modules.values(), *table.stars]):
            return module
        fw = StrandsFramework(table, ctx)
        fw.finish = lambda m: _convert_module_models(m, fw)
        return migrate_module(module, fw)


def _convert_module_models(module: cst.Module, fw: StrandsFramework) -> cst.Module:
    """Module-level ``M = LiteLLMModel(...)`` used only by workflows → placeholder; otherwise a TODO if it feeds
    an agent that was migrated (the placeholder must not reach plain agents: it cannot be called directly)."""
    body = list(module.body)
    changed = False
    table = fw.table
    counts = fw.body_counts
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            continue
        small = stmt.body[0]
        if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call) or not fw.is_litellm(small.value):
            continue
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name) or has_skip_marker(stmt):
            continue
        var = small.targets[0].target.value
        users = [j for j, c in enumerate(counts) if j != i and var in c]
        if not users:
            continue
        def is_workflow(node: cst.CSTNode) -> bool:
            return isinstance(node, cst.ClassDef) and (
                node.name.value in fw.created_workflows or _is_workflow_class(node, table)
            )

        in_workflows = all(is_workflow(body[j]) for j in users)
        if in_workflows:
            fw.stmt_todos = []
            fw.where = stmt
            new = fw.convert_litellm(small.value)
            fw.where = None
            if new is not None:
                body[i] = stmt.with_changes(body=[small.with_changes(value=new)])
                changed = True
                continue
        if not any(is_workflow(body[j]) for j in users):
            continue  # nothing migrated uses it: the plain agents using it carry their own TODOs
        reason = (
            f"`{var}` is shared by migrated workflows and plain Strands code; give the workflows "
            "OsmosisRolloutModel(params={...}) (no model_id, sampling kwargs in params) and keep this for the rest"
            if not in_workflows
            else "replace this LiteLLMModel with OsmosisRolloutModel(params={...}) by hand (positional or ** arguments)"
        )
        fw.ctx.todo("OM193", stmt, reason)
        new_stmt = with_todo_comment(stmt, "OM193", reason)
        if new_stmt is not stmt:
            body[i] = new_stmt
            changed = True
    if not changed:
        return module
    return module.with_changes(body=body)
