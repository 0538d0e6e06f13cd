"""Code the ``legacy-loop`` rule writes: Strands tool decorators, the config/workflow/grader of a rewrite, the
``loop_as_workflow`` line of a wrap, and the serving lines. Text is rendered in the module's own indent and newline
and parsed with libcst; moved user code (reward expression, helper methods) is inserted as the original nodes.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Optional, Sequence

import libcst as cst

from codemods.base import ImportTable, RuleContext, remove_unused_imports
from codemods.rules._legacy_loop_analysis import LoopPlan, ToolPlan, _walk
from codemods.visit import parents, replace_node

STRANDS_MOD = "osmosis_ai.rollout.integrations.agents.strands"
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


#: generated into a rewritten file (so that it needs osmosis-ai only): the text of the last assistant message,
#: for the three message shapes a sample can hold (chat dicts, Strands messages, OpenAI Agents items)
LAST_ASSISTANT_TEXT = '''\
def last_assistant_text(messages) -> str:
    """The text of the last assistant message that has text (chat dicts, Strands messages or OpenAI Agents
    Responses items); "" if none. Written by osmosis-migrate, so this file needs osmosis-ai only."""
    for message in reversed(list(messages or [])):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("type") not in (None, "message"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = "".join(
                part if isinstance(part, str) else part["text"]
                for part in content or []
                if isinstance(part, str) or (
                    isinstance(part, dict) and isinstance(part.get("text"), str)
                    and part.get("type") in (None, "text", "output_text", "input_text")
                )
            )
        if text:
            return text
    return ""
'''

#: generated into a file whose loop ran its tools through its own executor: Strands tools that call it
LEGACY_STRANDS_TOOLS = '''\
def legacy_strands_tools(schemas, execute) -> list:
    """Strands tools with the names, descriptions and parameter schemas of the legacy tool list ``schemas``; each
    hands its call to the legacy executor ``execute`` (an OpenAI tool call in, a tool message out) and gives the
    model that message's content, as the legacy loop did. Written by osmosis-migrate."""
    import inspect
    import json

    from strands.tools.tools import PythonAgentTool

    tools = []
    for schema in schemas or []:
        if not isinstance(schema, dict):
            schema = schema.model_dump(exclude_none=True)
        function = schema["function"]

        async def run_tool(tool_use, _name=function["name"], **_):
            message = execute({
                "id": tool_use["toolUseId"],
                "type": "function",
                "function": {"name": _name, "arguments": json.dumps(tool_use["input"])},
            })
            if inspect.isawaitable(message):
                message = await message
            text = message.get("content") if isinstance(message, dict) else message
            return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": str(text or "")}]}

        spec = {
            "name": function["name"],
            "description": function.get("description") or "",
            "inputSchema": {"json": function.get("parameters") or {"type": "object", "properties": {}}},
        }
        tools.append(PythonAgentTool(function["name"], spec, run_tool))
    return tools
'''


def _reindent(text: str, indent: str, nl: str) -> str:
    if indent != "    ":
        text = re.sub(r"^((?:    )+)", lambda m: indent * (len(m.group(1)) // 4), text, flags=re.M)
    return text.replace("\n", nl)


@functools.lru_cache(maxsize=64)
def _parsed(text: str, indent: str, newline: str) -> cst.BaseStatement:
    """A generated helper, parsed once per layout (libcst nodes are immutable, so sharing them is safe): parsing
    the same helper text in every rewritten file dominated a rewrite's cost."""
    return cst.parse_statement(_reindent(text, indent, newline))


def helper_statements(names: Sequence[str], module: cst.Module) -> list[cst.BaseStatement]:
    """The generated helper functions ``names`` (LAST_ASSISTANT_TEXT / LEGACY_STRANDS_TOOLS), two blank lines apart."""
    texts = {"last_assistant_text": LAST_ASSISTANT_TEXT, "legacy_strands_tools": LEGACY_STRANDS_TOOLS}
    ind, nl = module.default_indent, module.default_newline
    out: list[cst.BaseStatement] = []
    for name in names:
        stmt = _parsed(texts[name], ind, nl)
        out.append(stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2))
    return out


def rewrite_statements(
    plan: LoopPlan, module: cst.Module, max_concurrent: Optional[str], target: str = "0.2"
) -> list[cst.BaseStatement]:
    """Config class + instance, workflow, grader for a recognised loop (``max_concurrent``: source text or None;
    ``target``: the osmosis-ai API, "0.2" or "0.3")."""
    ind, nl = module.default_indent, module.default_newline
    base = stem(plan.class_name)
    config_cls, config_var = f"{base}Config", f"{snake(base)}_config"
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
    if plan.tool_mode == "decorate":
        tools_line = f"{ind * 3}tools=[{', '.join(t.function for t in plan.tools)}],"
        doc = f"The tool loop of {plan.class_name} as a Strands agent: the same tools, at most max_turns model calls."
    elif plan.tool_mode == "adapter":
        tools_line = f"{ind * 3}tools=legacy_strands_tools({plan.schemas_expr}, {plan.executor}),"
        doc = (f"The tool loop of {plan.class_name} as a Strands agent: its tools run through the loop's own "
               "executor, at most max_turns model calls.")
    else:
        tools_line = None
        doc = f"The model call of {plan.class_name} as a Strands agent (no tools)."
    lines += [
        "",
        "",
        f"{config_var} = {config_cls}()",
        "",
        "",
        f"class {base}Workflow(AgentWorkflow[{config_cls}]):",
        f'{ind}"""{doc}"""',
        "",
        f"{ind}async def run(self, ctx: AgentWorkflowContext[{config_cls}]) -> None:",
        f"{ind * 2}config = ctx.config or {config_var}",
        f"{ind * 2}agent = OsmosisStrandsAgent(",
        f"{ind * 3}name=config.name,",
        f"{ind * 3}model=OsmosisRolloutModel({params}),",
        *([tools_line] if tools_line else []),
        *([f"{ind * 3}tool_executor=SequentialToolExecutor(),  # the loop ran its tool calls one at a time"]
          if plan.sequential and tools_line else []),
        f"{ind * 3}messages=ctx.prompt,",
        f"{ind * 3}callback_handler=None,",
        f"{ind * 2})",
    ]
    if tools_line:
        lines += [
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
        ]
    lines.append(f"{ind * 2}await agent.invoke_async()")
    if plan.reward is not None:
        lines += [
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
        ]
        answer = f'{plan.messages_var} = [{{"role": "assistant", "content": last_assistant_text(sample.messages)}}]'
        if target == "0.3":
            lines += [
                f"{ind * 2}sample = ctx.sample",
                f"{ind * 2}{answer}",
                f"{ind * 2}reward = {_REWARD_PLACEHOLDER}",
                f"{ind * 2}ctx.set_reward(reward)",
            ]
        else:
            lines += [
                f"{ind * 2}for sample_id, sample in ctx.samples.items():",
                f"{ind * 3}{answer}",
                f"{ind * 3}reward = {_REWARD_PLACEHOLDER}",
                f"{ind * 3}ctx.set_sample_reward(sample_id, reward)",
            ]
    text = nl.join(lines) + nl
    stmts = list(cst.parse_module(text, config=module.config_for_parsing).body)
    if plan.workflow_members:
        wf = next(s for s in stmts if isinstance(s, cst.ClassDef) and s.name.value == f"{base}Workflow")
        members = [_strip_annotations(m).with_changes(leading_lines=[cst.EmptyLine(indent=False), *(
            l for l in m.leading_lines if l.comment is not None)]) for m in plan.workflow_members]
        i = stmts.index(wf)
        stmts[i] = wf.with_changes(body=wf.body.with_changes(body=[*wf.body.body, *members]))
    if plan.reward is None:
        return stmts
    to_local = _MetadataToLocal(plan.metadata_expr_nodes)
    reward = plan.reward.visit(to_local)
    grader = stmts[-1]
    assert isinstance(grader, cst.ClassDef)
    # `reward = <placeholder>` takes the reward expression, and the statements computing its locals go before it;
    # only the path to that statement is rebuilt (transforming the whole class cost more than writing it)
    parent_of = parents(grader, whitespace=False)  # the parents of a statement's block are wanted
    line = next(n for n in _walk(grader) if isinstance(n, cst.SimpleStatementLine) and _assigns_placeholder(n))
    block = parent_of[id(line)]
    assert isinstance(block, cst.IndentedBlock)
    new_line = line.with_changes(body=[line.body[0].with_changes(value=reward)])
    moved: list[cst.BaseStatement] = []
    if plan.reward_statements:
        moved = [s.visit(to_local).with_changes(leading_lines=[l for l in s.leading_lines if l.comment is not None])
                 for s in plan.reward_statements]
    at = list(block.body).index(line)
    new_block = block.with_changes(body=[*block.body[:at], *moved, new_line, *block.body[at + 1:]])
    grader = replace_node(grader, block, new_block, parent_of)
    if plan.grader_members:
        # each moved member keeps its comments, after one blank line
        members = [m.with_changes(leading_lines=[cst.EmptyLine(indent=False), *(
            l for l in m.leading_lines if l.comment is not None)]) for m in plan.grader_members]
        grader = grader.with_changes(body=grader.body.with_changes(body=[*grader.body.body, *members]))
    stmts[-1] = grader
    return stmts


def _strip_annotations(member: cst.BaseStatement) -> cst.BaseStatement:
    """A moved method without parameter/return annotations: they name legacy types (RolloutRequest, …) that
    osmosis-ai no longer has."""
    if not isinstance(member, cst.FunctionDef):
        return member
    p = member.params

    def bare(params):
        return [x.with_changes(annotation=None) for x in params]

    return member.with_changes(returns=None, params=p.with_changes(
        params=bare(p.params), posonly_params=bare(p.posonly_params), kwonly_params=bare(p.kwonly_params)))


class _MetadataToLocal(cst.CSTTransformer):
    def __init__(self, nodes: Sequence[cst.Attribute]) -> None:
        self.ids = {id(n) for n in nodes}

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        if id(original) in self.ids:
            return cst.Name("metadata")
        return updated


def _assigns_placeholder(line: cst.SimpleStatementLine) -> bool:
    """``reward = <placeholder>``: the line of the grader template that takes the reward expression."""
    small = line.body[0] if len(line.body) == 1 else None
    return (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == "reward" and isinstance(small.value, cst.Name)
            and small.value.value == _REWARD_PLACEHOLDER)


def wrap_statement(class_name: str, loop_expr: str, module: cst.Module) -> cst.SimpleStatementLine:
    base = stem(class_name)
    stmt = cst.parse_statement(
        f"{base}Workflow, {base}Grader = loop_as_workflow({loop_expr}){module.default_newline}",
        config=module.config_for_parsing,
    )
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def backend_statement(
    backend_var: str, class_name: str, config_expr: str, module: cst.Module, grader: bool = True
) -> cst.SimpleStatementLine:
    base = stem(class_name)
    ind, nl = module.default_indent, module.default_newline
    grader_line = f"{ind}grader={base}Grader,{nl}" if grader else ""
    text = (
        f"{backend_var} = LocalBackend({nl}{ind}workflow={base}Workflow,{nl}{ind}workflow_config={config_expr},{nl}"
        f"{grader_line}){nl}"
    )
    stmt = cst.parse_statement(text, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def server_call(backend_var: str) -> cst.Call:
    expr = cst.parse_expression(f"create_rollout_server(backend={backend_var})")
    assert isinstance(expr, cst.Call)
    return expr


# ------------------------------------------------------------------------------------------------ legacy helpers

#: Modules of the legacy SDK (osmosis-ai <= 0.2.17) whose small helpers a rewritten file may still call (the tool
#: executor it kept, the schema list it still builds); osmosis-ai 0.2.18+ has none of them, so the rewrite writes
#: their definition into the file (spec/legacy-protocol.md §2.10) instead of importing them.
LEGACY_HELPER_MODULES = (
    "osmosis_ai", "osmosis_ai.rollout", "osmosis_ai.rollout.tools", "osmosis_ai.rollout.core",
    "osmosis_ai.rollout.core.schemas", "osmosis_ai.rollout.core.exceptions", "osmosis_ai.rollout.utils",
)
_LEGACY_NOTE = "legacy SDK helper, written by osmosis-migrate: osmosis-ai 0.2.18+ has none"
LEGACY_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ToolExecutionError": (f'''\
class ToolExecutionError(Exception):
    """A tool failed ({_LEGACY_NOTE})."""

    def __init__(self, message, tool_call_id="", tool_name=""):
        super().__init__(message)
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
''', ()),
    "ToolArgumentError": (f'''\
class ToolArgumentError(ToolExecutionError):
    """A tool call's arguments are not a JSON object ({_LEGACY_NOTE})."""
''', ("ToolExecutionError",)),
    "parse_tool_arguments": (f'''\
def parse_tool_arguments(arguments):
    """A tool call's arguments as a dict ({_LEGACY_NOTE})."""
    import json

    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        raise ToolArgumentError(f"Expected str or dict arguments, got {{type(arguments).__name__}}")
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"Invalid JSON arguments: {{exc}}") from exc
    if not isinstance(value, dict):
        raise ToolArgumentError(f"Expected dict from JSON, got {{type(value).__name__}}")
    return value
''', ("ToolArgumentError",)),
    "get_tool_call_info": (f'''\
def get_tool_call_info(tool_call):
    """(id, function name, arguments dict) of an OpenAI tool call ({_LEGACY_NOTE})."""
    tool_call_id = tool_call.get("id", "unknown")
    function = tool_call.get("function", {{}})
    name = function.get("name", "")
    try:
        arguments = parse_tool_arguments(function.get("arguments", {{}}))
    except ToolArgumentError as exc:
        raise ToolArgumentError(str(exc), tool_call_id=tool_call_id, tool_name=name) from exc
    return tool_call_id, name, arguments
''', ("parse_tool_arguments", "ToolArgumentError")),
    "create_tool_result": (f'''\
def create_tool_result(tool_call_id, content):
    """A tool message ({_LEGACY_NOTE})."""
    return {{"role": "tool", "content": content, "tool_call_id": tool_call_id}}
''', ()),
    "create_tool_error_result": (f'''\
def create_tool_error_result(tool_call_id, error_message):
    """A tool message reporting an error ({_LEGACY_NOTE})."""
    return create_tool_result(tool_call_id, "Error: " + error_message)
''', ("create_tool_result",)),
    "serialize_tool_result": (f'''\
def serialize_tool_result(result):
    """A tool's value as message text ({_LEGACY_NOTE})."""
    import json

    if isinstance(result, bool):
        return json.dumps(result)
    if isinstance(result, (int, float)):
        return str(result)
    if isinstance(result, str):
        return result
    return json.dumps(result)
''', ()),
    "execute_tool_calls": (f'''\
async def execute_tool_calls(tool_calls, executor):
    """Run ``executor`` on every tool call concurrently; the results in call order ({_LEGACY_NOTE})."""
    import asyncio

    if not tool_calls:
        return []
    return list(await asyncio.gather(*[executor(tool_call) for tool_call in tool_calls]))
''', ()),
    "OpenAIFunctionToolSchema": (f'''\
def OpenAIFunctionToolSchema(type="function", function=None):
    """A tool schema as the dict the legacy model dumped to ({_LEGACY_NOTE})."""
    return {{"type": type, "function": function}}
''', ()),
    "OpenAIFunctionSchema": (f'''\
def OpenAIFunctionSchema(name, description, parameters=None, strict=False):
    """A function schema as the dict the legacy model dumped to ({_LEGACY_NOTE})."""
    if parameters is None:
        parameters = {{"type": "object", "properties": {{}}, "required": []}}
    return {{"name": name, "description": description, "parameters": parameters, "strict": strict}}
''', ()),
    "OpenAIFunctionParametersSchema": (f'''\
def OpenAIFunctionParametersSchema(type, properties, required, **extra):
    """A parameters schema as the dict the legacy model dumped to ({_LEGACY_NOTE})."""
    return {{"type": type, "properties": properties, "required": required, **extra}}
''', ()),
    "OpenAIFunctionPropertySchema": (f'''\
def OpenAIFunctionPropertySchema(type=None, description=None, enum=None, **extra):
    """A property schema as the dict the legacy model dumped to ({_LEGACY_NOTE})."""
    fields = {{"type": type, "description": description, "enum": enum}}
    return {{**{{k: v for k, v in fields.items() if v is not None}}, **extra}}
''', ()),
}


def legacy_helper_statements(names: Sequence[str], module: cst.Module) -> list[cst.BaseStatement]:
    """Definitions of the legacy helpers ``names`` and those they need, dependencies first."""
    order: list[str] = []
    for name in names:
        _add_helper(name, order)
    ind, nl = module.default_indent, module.default_newline
    out: list[cst.BaseStatement] = []
    for name in order:
        stmt = _parsed(LEGACY_HELPERS[name][0], ind, nl)
        out.append(stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2))
    return out


def _add_helper(name: str, order: list[str]) -> None:
    """Append the legacy helper ``name`` to ``order`` after those it needs, each once."""
    if name in order:
        return
    for dep in LEGACY_HELPERS[name][1]:
        _add_helper(dep, order)
    order.append(name)


def inline_legacy_helpers(module: cst.Module, ctx: RuleContext, code: str = "OM304") -> cst.Module:
    """Legacy SDK helpers the file still calls (get_tool_call_info, create_tool_result, the schema classes, …) are
    written into it and their import dropped: osmosis-ai 0.2.18+ has none of them (spec/legacy-protocol.md §2.10)."""
    table = ImportTable.of(module)
    candidates = [local for local, q in table.names.items()
                  if local in LEGACY_HELPERS and q == f"{q.rpartition('.')[0]}.{local}"
                  and q.rpartition(".")[0] in LEGACY_HELPER_MODULES]
    if not candidates:
        return module
    used = ctx.used_names_among(module, candidates)  # = used_names(module) & candidates, walking little
    wanted = [name for name in candidates if name in used]
    if not wanted:
        return module
    module, _ = remove_unused_imports(module, wanted, set())  # their definitions come in: every import goes
    defs = legacy_helper_statements(wanted, module)
    body = list(module.body)
    at = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body):
            at = i + 1
    if at == 0 and body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        at = 1  # after the module docstring
    if at < len(body):
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2 + [
            l for l in body[at].leading_lines if l.comment is not None])
    body[at:at] = defs
    ctx.edit(code, 0, "legacy SDK helpers written into the file (osmosis-ai 0.2.18+ has none): " + ", ".join(sorted(wanted)))
    return module.with_changes(body=body)
