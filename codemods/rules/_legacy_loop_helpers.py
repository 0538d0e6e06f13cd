"""Code the ``legacy-loop`` rule writes *into* a migrated file, so that it needs osmosis-ai only (never
osmosis-compat, never a legacy SDK module that 0.2.18+ deleted):

* the **legacy SDK helpers** the file still calls (``get_tool_call_info``, ``create_tool_result``,
  ``execute_tool_calls``, the tool errors, the message utilities, the ``Osmosis*Error`` classes …), spec-exact
  (spec/legacy-protocol.md §2.9–2.11), written in only when used (:func:`inline_legacy_helpers`; the imports rule's
  OM403 calls it too, for a tool module beside a rewritten loop);
* the legacy **schema classes** (``OpenAIFunctionToolSchema(...)`` …) as the dict displays they serialised to
  (§2.8: defaults, ``strict``, ``type: "object"``), and ``dict`` in annotations (:func:`schemas_to_dicts`);
* the **loop helpers** a translated ``run()`` calls (:data:`LOOP_HELPERS`): ``_chat`` (one streaming call to the
  rollout's chat endpoint, aggregated into a ``_ChatResult`` with the legacy ``CompletionsResult`` surface),
  ``_tool_dict``, ``_sample`` (the rollout's sample with the reward run() computed) and ``_last_assistant_text``.
"""

from __future__ import annotations

import functools
import re
from typing import Collection, Optional, Sequence

import libcst as cst

from codemods import codes

from codemods.base import ImportTable, RuleContext
from codemods.rules._legacy_loop_imports import edit_imports
from codemods.visit import Transformer

# ------------------------------------------------------------------------------------------- legacy SDK helpers

#: Modules of the legacy SDK (osmosis-ai <= 0.2.17) whose small helpers a migrated file may still call (the tool
#: executor it kept, the schema list it still builds); osmosis-ai 0.2.18+ has none of them, so the rewrite writes
#: their definition into the file instead of importing them.
LEGACY_HELPER_MODULES = (
    "osmosis_ai", "osmosis_ai.rollout", "osmosis_ai.rollout.tools", "osmosis_ai.rollout.core",
    "osmosis_ai.rollout.core.schemas", "osmosis_ai.rollout.core.exceptions", "osmosis_ai.rollout.utils",
)
_NOTE = "legacy SDK helper, written by osmosis-migrate: osmosis-ai 0.2.18+ has none"


def _error(name: str, base: str, doc: str, status: bool = False) -> tuple[str, tuple[str, ...]]:
    body = (
        "\n    def __init__(self, message, status_code):\n        super().__init__(message)\n"
        "        self.status_code = status_code\n" if status else ""
    )
    return f'class {name}({base}):\n    """{doc} ({_NOTE})."""\n{body}', (() if base == "Exception" else (base,))


def _role_test(name: str, role: str) -> tuple[str, tuple[str, ...]]:
    return (f'def {name}(message):\n    """Whether the message\'s role is {role!r} ({_NOTE})."""\n'
            f'    return get_message_role(message) == "{role}"\n', ("get_message_role",))


#: name → (definition, names it needs). Spec-exact: spec/legacy-protocol.md §2.9 (errors), §2.10 (tools), §2.11
#: (message utilities), §2.8 (the schema classes, as dict builders, for calls :func:`schemas_to_dicts` cannot turn
#: into a display: positional or ``**`` arguments).
_LEGACY_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "OsmosisRolloutError": _error("OsmosisRolloutError", "Exception", "Base class of the rollout SDK's errors"),
    "OsmosisTransportError": _error("OsmosisTransportError", "OsmosisRolloutError", "The controller was unreachable"),
    "OsmosisServerError": _error("OsmosisServerError", "OsmosisRolloutError", "The controller answered 5xx", True),
    "OsmosisValidationError": _error("OsmosisValidationError", "OsmosisRolloutError",
                                     "The controller rejected the request", True),
    "OsmosisTimeoutError": _error("OsmosisTimeoutError", "OsmosisRolloutError", "A call to the controller timed out"),
    "ToolExecutionError": (f'''\
class ToolExecutionError(OsmosisRolloutError):
    """A tool failed ({_NOTE})."""

    def __init__(self, message, tool_call_id="", tool_name=""):
        super().__init__(message)
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
''', ("OsmosisRolloutError",)),
    "ToolArgumentError": (f'''\
class ToolArgumentError(ToolExecutionError):
    """A tool call's arguments are not a JSON object ({_NOTE})."""
''', ("ToolExecutionError",)),
    "parse_tool_arguments": (f'''\
def parse_tool_arguments(arguments):
    """A tool call's arguments as a dict ({_NOTE})."""
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
    """(id, function name, arguments dict) of an OpenAI tool call ({_NOTE})."""
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
    """A tool message ({_NOTE})."""
    return {{"role": "tool", "content": content, "tool_call_id": tool_call_id}}
''', ()),
    "create_tool_error_result": (f'''\
def create_tool_error_result(tool_call_id, error_message):
    """A tool message reporting an error ({_NOTE})."""
    return create_tool_result(tool_call_id, "Error: " + error_message)
''', ("create_tool_result",)),
    "serialize_tool_result": (f'''\
def serialize_tool_result(result):
    """A tool's value as message text ({_NOTE})."""
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
    """Run ``executor`` on every tool call concurrently; the results in call order ({_NOTE})."""
    import asyncio

    if not tool_calls:
        return []
    return list(await asyncio.gather(*[executor(tool_call) for tool_call in tool_calls]))
''', ()),
    "parse_tool_calls": (f'''\
def parse_tool_calls(message):
    """The tool calls of an assistant message, [] when none ({_NOTE})."""
    tool_calls = message.get("tool_calls") or []
    return tool_calls if isinstance(tool_calls, list) else []
''', ()),
    "normalize_stop": (f'''\
def normalize_stop(stop):
    """Stop sequences as a list of strings, or None ({_NOTE})."""
    if stop is None:
        return None
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list):
        return [str(item) for item in stop]
    return None
''', ()),
    "get_message_content": (f'''\
def get_message_content(message):
    """A message's text content, "" when it has none ({_NOTE})."""
    content = message.get("content")
    return content if isinstance(content, str) else ""
''', ()),
    "get_message_role": (f'''\
def get_message_role(message):
    """A message's role, "unknown" when it has none ({_NOTE})."""
    role = message.get("role")
    return role if isinstance(role, str) else "unknown"
''', ()),
    "is_assistant_message": _role_test("is_assistant_message", "assistant"),
    "is_tool_message": _role_test("is_tool_message", "tool"),
    "is_user_message": _role_test("is_user_message", "user"),
    "count_messages_by_role": (f'''\
def count_messages_by_role(messages):
    """How many messages each role has, in first-seen order ({_NOTE})."""
    counts = {{}}
    for message in messages:
        role = get_message_role(message)
        counts[role] = counts.get(role, 0) + 1
    return counts
''', ("get_message_role",)),
    "OpenAIFunctionToolSchema": (f'''\
def OpenAIFunctionToolSchema(type="function", function=None):
    """A tool schema as the dict the legacy model dumped to ({_NOTE})."""
    return {{"type": type, "function": function}}
''', ()),
    "OpenAIFunctionSchema": (f'''\
def OpenAIFunctionSchema(name, description, parameters=None, strict=False):
    """A function schema as the dict the legacy model dumped to ({_NOTE})."""
    if parameters is None:
        parameters = {{"type": "object", "properties": {{}}, "required": []}}
    return {{"name": name, "description": description, "parameters": parameters, "strict": strict}}
''', ()),
    "OpenAIFunctionParametersSchema": (f'''\
def OpenAIFunctionParametersSchema(type="object", properties=None, required=None):
    """A parameters schema as the dict the legacy model dumped to ({_NOTE})."""
    return {{"type": type, "properties": properties or {{}}, "required": required or []}}
''', ()),
    "OpenAIFunctionPropertySchema": (f'''\
def OpenAIFunctionPropertySchema(type, description=None, enum=None):
    """A property schema as the dict the legacy model dumped to, None fields left out ({_NOTE})."""
    fields = {{"type": type, "description": description, "enum": enum}}
    return {{key: value for key, value in fields.items() if value is not None}}
''', ()),
}


#: (the note on a line of its own: one-line docstrings with it ran past 120 characters)
LEGACY_HELPERS = {name: (text.replace(f" ({_NOTE}).", f"\n    ({_NOTE}).", 1), deps)
                  for name, (text, deps) in _LEGACY_HELPERS.items()}


def _reindent(text: str, indent: str, nl: str) -> str:
    if indent != "    ":
        text = re.sub(r"^((?:    )+)", lambda m: indent * (len(m.group(1)) // 4), text, flags=re.M)
    return text.replace("\n", nl)


@functools.lru_cache(maxsize=128)
def parsed_statement(text: str, indent: str, newline: str) -> cst.BaseStatement:
    """A generated definition, parsed once per layout (libcst nodes are immutable, so sharing them is safe):
    parsing the same helper text in every migrated file would dominate a rewrite's cost."""
    return cst.parse_statement(_reindent(text, indent, newline))


def _add_helper(name: str, order: list[str]) -> None:
    """Append the legacy helper ``name`` to ``order`` after those it needs, each once."""
    if name in order:
        return
    for dep in LEGACY_HELPERS[name][1]:
        _add_helper(dep, order)
    order.append(name)


def legacy_helper_statements(names: Sequence[str], module: cst.Module) -> list[cst.BaseStatement]:
    """Definitions of the legacy helpers ``names`` and those they need, dependencies first."""
    order: list[str] = []
    for name in names:
        _add_helper(name, order)
    ind, nl = module.default_indent, module.default_newline
    return [parsed_statement(LEGACY_HELPERS[name][0], ind, nl).with_changes(
        leading_lines=[cst.EmptyLine(indent=False)] * 2) for name in order]


def inline_legacy_helpers(
    module: cst.Module, ctx: RuleContext, code: str = codes.LEGACY_IMPORTS.code, *, extra: Sequence[str] = (),
    skip: Collection[str] = (),
) -> cst.Module:
    """Legacy SDK helpers the file still calls (get_tool_call_info, create_tool_result, the tool errors, …) are
    written into it and their import dropped: osmosis-ai 0.2.18+ has none of them (spec/legacy-protocol.md
    §2.9–2.11). Schema class calls become dict displays first (:func:`schemas_to_dicts`; not in the top-level
    classes named in ``skip``: loops left as they were). ``extra``: helpers code the rule generated needs whether or
    not the file imported them. Records a ``code`` edit when it writes any."""
    module = schemas_to_dicts(module, ctx, skip)
    table = ImportTable.of(module)
    candidates = [local for local, q in table.names.items()
                  if local in LEGACY_HELPERS and q == f"{q.rpartition('.')[0]}.{local}"
                  and q.rpartition(".")[0] in LEGACY_HELPER_MODULES]
    used = ctx.used_names_among(module, candidates) if candidates else set()
    wanted = [name for name in candidates if name in used]
    # their definitions come in (and an unused one would fail on 0.3): every such import goes, try blocks included
    module, _ = edit_imports(module, set(candidates), set())
    defined = _top_level_defs(module)
    wanted += [name for name in extra if name not in wanted]
    wanted = [name for name in wanted if name not in defined]
    if not wanted:
        return module
    defs = [d for d in legacy_helper_statements(wanted, module) if _def_name(d) not in defined]
    body = list(module.body)
    at = _after_imports(body)
    if at < len(body):
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2 + [
            line for line in body[at].leading_lines if line.comment is not None])
    body[at:at] = defs
    ctx.edit(code, 0, "legacy SDK helpers written into the file (osmosis-ai 0.2.18+ has none): "
             + ", ".join(sorted(_def_name(d) for d in defs)))
    return module.with_changes(body=body)


def _def_name(stmt: cst.BaseStatement) -> str:
    return stmt.name.value if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else ""


def _top_level_defs(module: cst.Module) -> set[str]:
    return {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}


def _after_imports(body: Sequence[cst.BaseStatement]) -> int:
    """Where definitions written into a module go: after its last top-level import (a ``try``/``if`` block of
    imports included), or its docstring."""
    at = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body):
            at = i + 1
        elif isinstance(stmt, (cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body \
                and all(isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom))
                        for x in s.body) for s in stmt.body.body):
            at = i + 1
    if at == 0 and body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        at = 1
    return at


# --------------------------------------------------------------------------------------- schema classes → dicts

_SCHEMA_MODULES = ("osmosis_ai", "osmosis_ai.rollout", "osmosis_ai.rollout.core", "osmosis_ai.rollout.core.schemas")
#: class → its fields in model order, with the default written when the call leaves one out (None: no default,
#: the key is left out as ``model_dump(exclude_none=True)`` left it out) — spec/legacy-protocol.md §2.8
SCHEMA_FIELDS: dict[str, tuple[tuple[str, Optional[str]], ...]] = {
    "OpenAIFunctionToolSchema": (("type", '"function"'), ("function", None)),
    "OpenAIFunctionSchema": (("name", None), ("description", None),
                             ("parameters", '{"type": "object", "properties": {}, "required": []}'),
                             ("strict", "False")),
    "OpenAIFunctionParametersSchema": (("type", '"object"'), ("properties", "{}"), ("required", "[]")),
    "OpenAIFunctionPropertySchema": (("type", None), ("description", None), ("enum", None)),
}
SCHEMA_CLASSES = tuple(f"{m}.{c}" for m in _SCHEMA_MODULES for c in SCHEMA_FIELDS)


def schemas_to_dicts(module: cst.Module, ctx: RuleContext, skip: Collection[str] = ()) -> cst.Module:
    """Calls of the legacy schema classes with keyword arguments become the dict displays they serialised to
    (same layout: each argument becomes an entry with its own comma and whitespace; omitted defaults are added,
    literal ``None`` fields left out, other keywords kept as written), and the classes in annotations become
    ``dict`` (OM305). Other calls (positional or ``**`` arguments) are left for the inlined dict builders; the
    top-level classes named in ``skip`` are left as they are."""
    table = ImportTable.of(module)
    local = {name: q.rpartition(".")[2] for name, q in table.names.items() if q in SCHEMA_CLASSES}
    heads = {m for m, q in table.modules.items() if q.startswith("osmosis_ai")}  # `rollout.OpenAIFunctionSchema(…)`
    wanted = set(local) | heads
    if not ctx.used_names_among(module, wanted):
        return module
    swap = _SchemaDicts(table)
    # only the statements that name a schema class are transformed (a whole-module transform cost more than the rule)
    body = [s if isinstance(s, (cst.ClassDef, cst.FunctionDef)) and (s.name.value in skip or s.name.value in _GENERATED)
            or not ctx.statement_names(s) & wanted else s.visit(swap) for s in module.body]
    new = module.with_changes(body=body)
    if swap.calls or swap.annotations:
        msg = (f"legacy tool schema classes → the dicts they serialised to ({swap.calls} call(s), {swap.annotations} "
               "annotation(s) → dict)")
        ctx.edit(codes.LEGACY_TOOLS.code, 0, msg)
    return new


class AnnotationAware(Transformer):
    """A transformer that knows whether it is inside an annotation (``in_annotation``: the nesting depth)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_annotation = 0

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        self.in_annotation += 1
        return True

    def leave_Annotation(self, original: cst.Annotation, updated: cst.Annotation) -> cst.Annotation:
        self.in_annotation -= 1
        return updated


class _SchemaDicts(AnnotationAware):
    """Schema class calls → dict displays, schema classes in annotations → ``dict`` (for :func:`schemas_to_dicts`)."""

    def __init__(self, table: ImportTable) -> None:
        super().__init__()
        self.table = table
        self.calls = 0
        self.annotations = 0

    def schema(self, expr: cst.BaseExpression) -> Optional[str]:
        """The schema class ``expr`` names (``OpenAIFunctionSchema``, ``rollout.OpenAIFunctionSchema`` …), else None."""
        qualified = self.table.matches(expr, SCHEMA_CLASSES)
        return qualified.rpartition(".")[2] if qualified else None

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if self.in_annotation and self.schema(original):
            self.annotations += 1
            return updated.with_changes(value="dict")
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if self.in_annotation and self.schema(original):
            self.annotations += 1
            return cst.Name("dict")
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        schema = self.schema(original.func)
        if schema is None or any(a.keyword is None for a in updated.args):
            return updated  # not a schema class, or positional / ** arguments: the inlined builder takes the call
        self.calls += 1
        return schema_display(updated, SCHEMA_FIELDS[schema])


def schema_display(call: cst.Call, fields: Sequence[tuple[str, Optional[str]]]) -> cst.Dict:
    """The dict display for ``call`` (keyword arguments only): the model's fields in model order, defaults added
    with the separator the call used, ``None`` arguments left out; other keywords (``items``, ``additionalProperties``
    …) follow as written — osmosis-compat's legacy models keep such keys, and the migrated dict goes to the model."""
    given = {a.keyword.value: a for a in call.args if a.keyword is not None}
    commas = [a.comma for a in call.args if isinstance(a.comma, cst.Comma)]
    sep = commas[0] if commas and len(call.args) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    known = dict(fields)
    keys = [*known, *(k for k in given if k not in known)]
    entries: list[cst.DictElement] = []
    for key in keys:
        arg, default = given.get(key), known.get(key)
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "None":
            continue
        if arg is None and default is None:
            continue
        value = arg.value if arg is not None else cst.parse_expression(default)
        entries.append(cst.DictElement(
            key=cst.SimpleString(f'"{key}"'), value=value, comma=sep,
            whitespace_before_colon=cst.SimpleWhitespace(""), whitespace_after_colon=cst.SimpleWhitespace(" ")))
    last = call.args[-1] if call.args else None
    trailing = last.comma if last is not None else cst.MaybeSentinel.DEFAULT
    if entries:
        entries[-1] = entries[-1].with_changes(comma=trailing)
    return cst.Dict(
        elements=entries, lpar=call.lpar, rpar=call.rpar,
        lbrace=cst.LeftCurlyBrace(whitespace_after=call.whitespace_before_args),
        rbrace=cst.RightCurlyBrace(whitespace_before=last.whitespace_after_arg if last is not None else cst.SimpleWhitespace("")),
    )


# ----------------------------------------------------------------------------------------------- loop helpers

_BY = "Written by osmosis-migrate."

_CHAT_RESULT = f'''\
class _ChatResult:
    """One model reply, with the surface of the legacy ``CompletionsResult`` the loop reads (message, tool_calls,
    has_tool_calls, content, finish_reason, usage). {_BY}"""

    def __init__(self, message, usage, finish_reason):
        self.message = message
        self.usage = usage
        self.finish_reason = finish_reason
        self.token_ids = []
        self.logprobs = []

    @property
    def tool_calls(self):
        return self.message.get("tool_calls", [])

    @property
    def has_tool_calls(self):
        return bool(self.message.get("tool_calls"))

    @property
    def content(self):
        return self.message.get("content")
'''

_TOOL_DICT = f'''\
def _tool_dict(tool):
    """A tool schema as a chat completions body carries it: pydantic objects dumped and ``None`` fields left out, as
    the legacy SDK's ``model_dump(exclude_none=True)``. {_BY}"""
    if hasattr(tool, "model_dump"):
        tool = tool.model_dump(exclude_none=True)
    if isinstance(tool, dict):
        return {{key: _tool_dict(value) for key, value in tool.items() if value is not None}}
    if isinstance(tool, list):
        return [_tool_dict(value) for value in tool]
    return tool
'''

#: ``_chat``: the markers ``#<identity>`` (0.2 headers) and ``#<status>`` (the error raised on a non-200 answer)
#: are filled per target and per file (:func:`chat_helper_text`).
_CHAT = f'''\
async def _chat(messages, tools, /, **params):
    """One model call, as the legacy ``ctx.chat(messages, **params)`` made it, to this rollout's chat endpoint: a
    streaming call (the Osmosis completions server streams) whose chunks are aggregated into one reply. ``tools``:
    this rollout's tools, sent with every call (the legacy controller knew them from init). Of ``params`` the
    sampling settings the legacy client sent are kept (temperature, top_p, max_tokens, stop).
    {_BY}"""
    import json

    import httpx

    rollout = get_rollout_context()
    body = {{"model": "osmosis-rollout", "messages": messages, "stream": True, "stream_options": {{"include_usage": True}}}}
    body.update({{k: v for k, v in params.items() if k in ("temperature", "top_p", "max_tokens", "stop") and v is not None}})
    if isinstance(body.get("stop"), str):
        body["stop"] = [body["stop"]]
    if tools:
        body["tools"] = [_tool_dict(tool) for tool in tools]
    headers = {{"Authorization": f"Bearer {{rollout.api_key}}"}} if rollout.api_key else {{}}
    #<identity>
    url = rollout.chat_completions_url.rstrip("/") + "/chat/completions"
    text, calls, usage, finish_reason = [], {{}}, {{}}, "stop"
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0)) as client:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            #<status>
            if "text/event-stream" not in response.headers.get("content-type", ""):
                data = json.loads(await response.aread())
                choice = data["choices"][0]
                return _ChatResult(choice["message"], data.get("usage") or {{}}, choice.get("finish_reason") or "stop")
            async for line in response.aiter_lines():
                if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                    continue
                chunk = json.loads(line[5:])
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {{}}
                    text.append(delta.get("content") or "")
                    for part in delta.get("tool_calls") or []:
                        empty = {{"id": "", "type": "function", "function": {{"name": "", "arguments": ""}}}}
                        call = calls.setdefault(part.get("index", len(calls)), empty)
                        call["id"] = part.get("id") or call["id"]
                        function = part.get("function") or {{}}
                        call["function"]["name"] += function.get("name") or ""
                        call["function"]["arguments"] += function.get("arguments") or ""
                    finish_reason = choice.get("finish_reason") or finish_reason
    message = {{"role": "assistant", "content": "".join(text) or None}}
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return _ChatResult(message, usage, finish_reason)
'''
_IDENTITY_02 = '    headers["x-rollout-id"] = headers["x-sample-id"] = rollout.rollout_id  # osmosis-ai 0.2 routing\n'
_STATUS_PLAIN = (
    '            if response.status_code != 200:\n'
    '                await response.aread()\n'
    '                raise RuntimeError(f"chat completions call failed: HTTP {response.status_code}: {response.text}")\n'
)
#: with the legacy errors in the file (it catches them): the legacy client's classes for the same failures
_STATUS_LEGACY = (
    '            if response.status_code != 200:\n'
    '                await response.aread()\n'
    '                error = OsmosisServerError if response.status_code >= 500 else OsmosisValidationError\n'
    '                raise error(response.text, response.status_code)\n'
)
CHAT_LEGACY_ERRORS = ("OsmosisServerError", "OsmosisValidationError")


def chat_helper_text(target: str, legacy_errors: bool) -> str:
    """The ``_chat`` helper for ``target`` ("0.2": with the ``x-rollout-id``/``x-sample-id`` headers 0.2 routes by);
    ``legacy_errors``: a non-200 answer raises the legacy client's ``OsmosisServerError``/``OsmosisValidationError``
    (the file catches them) instead of ``RuntimeError``."""
    text = _CHAT.replace("    #<identity>\n", _IDENTITY_02 if target == "0.2" else "")
    return text.replace("            #<status>\n", _STATUS_LEGACY if legacy_errors else _STATUS_PLAIN)


_SAMPLE_03 = f'''\
def _sample(messages, reward=None):
    """The rollout's sample: the messages run() ends with, and the reward it computed from state only run() has
    (in the sample's metrics, where the grader reads it). {_BY}"""
    return AgentWorkflowOutput(messages=list(messages), metrics={{}} if reward is None else {{"reward": float(reward)}})
'''
_SAMPLE_02 = f'''\
class _Sample:
    """The sample source of one rollout: the messages run() ended with (osmosis-ai 0.2 collects samples from the
    sources registered on the rollout context). {_BY}"""

    def __init__(self, messages, metrics):
        self.messages = messages
        self.metrics = metrics

    async def get_sample(self, name):
        return RolloutSample(id=name, messages=self.messages, metrics=self.metrics)


def _sample(messages, reward=None):
    """Registers ``messages`` as this rollout's sample (with the reward run() computed, if any, in its metrics,
    where the grader reads it) and returns them. {_BY}"""
    rollout = get_rollout_context()
    metrics = {{}} if reward is None else {{"reward": float(reward)}}
    rollout.register_sample_source(rollout.rollout_id, _Sample(list(messages), metrics))
    return messages
'''

_LAST_ASSISTANT_TEXT = f'''\
def _last_assistant_text(messages):
    """The text of the last assistant message that has text, "" if none. {_BY}"""
    for message in reversed(list(messages or [])):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, str):
            content = "".join(part.get("text") or "" for part in content or [] if isinstance(part, dict))
        if content:
            return content
    return ""
'''

_BOUND_WORKFLOW = f'''\
def _bound_workflow(cls, *args, **kwargs):
    """The workflow ``cls`` as LocalBackend builds it per rollout, ``cls(config)``, with the arguments its
    ``__init__`` takes (the legacy loop was built once with them). {_BY}"""

    class Bound(cls):
        def __init__(self, config=None):
            super().__init__(*args, **kwargs, config=config)

    Bound.__name__ = Bound.__qualname__ = cls.__name__
    return Bound
'''

#: generated helper → the names it defines (a rewrite refuses when one of them is taken by the user's code)
LOOP_HELPERS: dict[str, tuple[str, ...]] = {
    "_chat": ("_chat", "_ChatResult", "_tool_dict"),
    "_sample": ("_sample", "_Sample"),
    "_last_assistant_text": ("_last_assistant_text",),
    "_bound_workflow": ("_bound_workflow",),
}


#: names of the definitions this module writes into files (they never name a schema class: not looked into)
_GENERATED = frozenset({*LEGACY_HELPERS, *(n for names in LOOP_HELPERS.values() for n in names)})


def loop_helper_statements(
    wanted: Sequence[str], module: cst.Module, target: str, legacy_errors: bool
) -> list[cst.BaseStatement]:
    """The definitions of the loop helpers ``wanted`` (keys of :data:`LOOP_HELPERS`) for ``target``, in a fixed
    order, two blank lines before each."""
    texts: list[str] = []
    if "_chat" in wanted:
        texts += [chat_helper_text(target, legacy_errors), _CHAT_RESULT, _TOOL_DICT]
    if "_sample" in wanted:
        texts.append(_SAMPLE_02 if target == "0.2" else _SAMPLE_03)
    if "_last_assistant_text" in wanted:
        texts.append(_LAST_ASSISTANT_TEXT)
    if "_bound_workflow" in wanted:
        texts.append(_BOUND_WORKFLOW)
    ind, nl = module.default_indent, module.default_newline
    return [stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
            for text in texts for stmt in parsed_statements(text, ind, nl)]


@functools.lru_cache(maxsize=64)
def parsed_statements(text: str, indent: str, newline: str) -> tuple[cst.BaseStatement, ...]:
    """The top-level statements of a generated text, parsed once per layout (see :func:`parsed_statement`)."""
    return tuple(cst.parse_module(_reindent(text, indent, newline)).body)
