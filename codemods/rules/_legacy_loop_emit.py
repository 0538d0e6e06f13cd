"""Code the ``legacy-loop`` rule writes: Strands tool decorators, the config/workflow/grader of a rewrite, the
``loop_as_workflow`` line of a wrap, and the serving lines. Text is rendered in the module's own indent and newline
and parsed with libcst; moved user code (reward expression, helper methods) is inserted as the original nodes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

import libcst as cst

from codemods.rules._legacy_loop_analysis import LoopPlan, ToolPlan

STRANDS_MOD = "osmosis_ai.rollout.integrations.agents.strands"
MESSAGES_HELPER = ("osmosis_compat.workflow.messages", "last_assistant_text")
LEGACY_MAX_CONCURRENT = 100  # legacy create_app default (settings.server.max_concurrent_rollouts)
_REWARD_PLACEHOLDER = "__osmosis_migrate_reward__"


def py_literal(value: Any, indent: str, level: int = 0, width: int = 88) -> str:
    """A Python literal for a JSON-like value: on one line when it fits, else one item per line (black style)."""
    flat = _flat(value)
    if len(flat) + len(indent) * level <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent * (level + 1)
    if isinstance(value, dict):
        items = [f"{inner}{_flat(k)}: {py_literal(v, indent, level + 1, width)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + indent * level + "}"
    items = [f"{inner}{py_literal(v, indent, level + 1, width)}," for v in value]
    return "[\n" + "\n".join(items) + "\n" + indent * level + "]"


def _flat(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    raise TypeError(f"not a JSON-like literal: {value!r}")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def stem(class_name: str) -> str:
    """``CalculatorAgentLoop`` → ``CalculatorAgent``: the prefix of the names the rule adds."""
    for suffix in ("Loop",):
        if class_name.endswith(suffix) and len(class_name) > len(suffix):
            return class_name[: -len(suffix)]
    return class_name


def tool_decorator(tool: ToolPlan, module: cst.Module) -> cst.Decorator:
    ind, nl = module.default_indent, module.default_newline
    schema = py_literal({"json": tool.parameters}, ind, 1)
    text = (
        f"@tool({nl}{ind}name={_flat(tool.name)},{nl}{ind}description={_flat(tool.description)},{nl}"
        f"{ind}inputSchema={schema.replace(chr(10), nl)},{nl})"
    )
    stmt = cst.parse_statement(f"{text}{nl}def _(): pass{nl}", config=module.config_for_parsing)
    assert isinstance(stmt, cst.FunctionDef)
    return stmt.decorators[0]


def rewrite_statements(
    plan: LoopPlan, module: cst.Module, max_concurrent: Optional[str]
) -> list[cst.BaseStatement]:
    """Config class + instance, workflow, grader for a recognised loop (``max_concurrent``: source text or None)."""
    ind, nl = module.default_indent, module.default_newline
    base = stem(plan.class_name)
    config_cls, config_var = f"{base}Config", f"{snake(base)}_config"
    tools = ", ".join(t.function for t in plan.tools)
    params = ""
    if plan.params:
        params = "params=" + _flat(dict(plan.params))
    turn_note = (
        "the turn limit of the legacy request (RolloutRequest.max_turns default)"
        if plan.max_turns_from_request else "the loop's turn limit"
    )
    lines = [
        f"class {config_cls}(AgentWorkflowConfig):",
        f'{ind}"""Settings of the {plan.loop_name!r} workflow (migrated from the legacy loop {plan.class_name})."""',
        "",
        f"{ind}name: str = {_flat(plan.loop_name)}",
        f"{ind}max_turns: int = {plan.max_turns}  # {turn_note}",
    ]
    if max_concurrent is not None:
        lines.append(f"{ind}concurrency: ConcurrencyConfig = ConcurrencyConfig(max_concurrent={max_concurrent})")
    lines += [
        "",
        "",
        f"{config_var} = {config_cls}()",
        "",
        "",
        f"class {base}Workflow(AgentWorkflow[{config_cls}]):",
        f'{ind}"""The tool loop of {plan.class_name} as a Strands agent: the same tools, at most max_turns model calls."""',
        "",
        f"{ind}async def run(self, ctx: AgentWorkflowContext[{config_cls}]) -> None:",
        f"{ind * 2}config = ctx.config or {config_var}",
        f"{ind * 2}agent = OsmosisStrandsAgent(",
        f"{ind * 3}name=config.name,",
        f"{ind * 3}model=OsmosisRolloutModel({params}),",
        f"{ind * 3}tools=[{tools}],",
        f"{ind * 3}messages=ctx.prompt,",
        f"{ind * 3}callback_handler=None,",
        f"{ind * 2})",
        f"{ind * 2}model_calls = 0",
        "",
        f"{ind * 2}def stop_after_max_turns(event: AfterToolsEvent) -> None:",
        f"{ind * 3}# the legacy loop made at most max_turns model calls: stop after the tools of the last one",
        f"{ind * 3}nonlocal model_calls",
        f"{ind * 3}model_calls += 1",
        f"{ind * 3}if model_calls >= config.max_turns:",
        f"{ind * 4}agent.cancel(after_current_tools=True)",
        "",
        f"{ind * 2}agent.add_hook(stop_after_max_turns, AfterToolsEvent)",
        f"{ind * 2}await agent.invoke_async()",
        "",
        "",
        f"class {base}Grader(Grader):",
        f'{ind}"""The reward {plan.class_name} passed to ctx.complete(), computed from the sample\'s final answer.',
        "",
        f"{ind}The legacy code sees the last assistant text as a one-message chat list, and the dataset label as",
        f'{ind}metadata["ground_truth"] (unless the metadata has that key), as the legacy controller sent it.',
        f'{ind}"""',
        "",
        f"{ind}async def grade(self, ctx: GraderContext) -> None:",
        f"{ind * 2}metadata = dict(ctx.metadata or {{}})",
        f"{ind * 2}if ctx.label is not None:",
        f'{ind * 3}metadata.setdefault("ground_truth", ctx.label)',
        f"{ind * 2}for sample_id, sample in ctx.samples.items():",
        f'{ind * 3}{plan.messages_var} = [{{"role": "assistant", "content": last_assistant_text(sample.messages)}}]',
        f"{ind * 3}reward = {_REWARD_PLACEHOLDER}",
        f"{ind * 3}ctx.set_sample_reward(sample_id, reward)",
    ]
    text = nl.join(lines) + nl
    stmts = list(cst.parse_module(text, config=module.config_for_parsing).body)
    to_local = _MetadataToLocal(plan.metadata_expr_nodes)
    reward = plan.reward.visit(to_local)
    grader = stmts[-1]
    assert isinstance(grader, cst.ClassDef)
    grader = grader.visit(_Replace(_REWARD_PLACEHOLDER, reward))
    if plan.reward_statements:
        moved = [s.visit(to_local).with_changes(leading_lines=[l for l in s.leading_lines if l.comment is not None])
                 for s in plan.reward_statements]
        grader = grader.visit(_InsertBefore("reward", moved))
    if plan.grader_members:
        # each moved member keeps its comments, after one blank line
        members = [m.with_changes(leading_lines=[cst.EmptyLine(indent=False), *(
            l for l in m.leading_lines if l.comment is not None)]) for m in plan.grader_members]
        grader = grader.with_changes(body=grader.body.with_changes(body=[*grader.body.body, *members]))
    stmts[-1] = grader
    return stmts


class _MetadataToLocal(cst.CSTTransformer):
    def __init__(self, nodes: Sequence[cst.Attribute]) -> None:
        self.ids = {id(n) for n in nodes}

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        if id(original) in self.ids:
            return cst.Name("metadata")
        return updated


class _InsertBefore(cst.CSTTransformer):
    """Insert statements before the ``<name> = …`` statement of the grader's sample loop."""

    def __init__(self, name: str, stmts: Sequence[cst.BaseStatement]) -> None:
        self.name, self.stmts = name, stmts

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):  # type: ignore[override]
        body = list(updated.body)
        for i, s in enumerate(body):
            if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign) and isinstance(
                s.body[0].targets[0].target, cst.Name
            ) and s.body[0].targets[0].target.value == self.name:
                return updated.with_changes(body=[*body[:i], *self.stmts, *body[i:]])
        return updated


class _Replace(cst.CSTTransformer):
    def __init__(self, name: str, expr: cst.BaseExpression) -> None:
        self.name, self.expr = name, expr

    def leave_Name(self, original: cst.Name, updated: cst.Name):  # type: ignore[override]
        return self.expr if original.value == self.name else updated


def wrap_statement(class_name: str, loop_expr: str, module: cst.Module) -> cst.SimpleStatementLine:
    base = stem(class_name)
    stmt = cst.parse_statement(
        f"{base}Workflow, {base}Grader = loop_as_workflow({loop_expr}){module.default_newline}",
        config=module.config_for_parsing,
    )
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def backend_statement(
    backend_var: str, class_name: str, config_expr: str, module: cst.Module
) -> cst.SimpleStatementLine:
    base = stem(class_name)
    ind, nl = module.default_indent, module.default_newline
    text = (
        f"{backend_var} = LocalBackend({nl}{ind}workflow={base}Workflow,{nl}{ind}workflow_config={config_expr},{nl}"
        f"{ind}grader={base}Grader,{nl}){nl}"
    )
    stmt = cst.parse_statement(text, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def server_call(backend_var: str) -> cst.Call:
    expr = cst.parse_expression(f"create_rollout_server(backend={backend_var})")
    assert isinstance(expr, cst.Call)
    return expr
