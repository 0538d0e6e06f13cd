"""A deterministic, stateless stand-in for the model: it solves arithmetic with the offered tools.

Both fake controllers and the local eval runner answer chat requests with :class:`ScriptedPolicy`.
It keeps no state between calls: everything it does is derived from the request (messages + tools),
so a client's silent retry gets the same answer again (spec/frameworks.md P8).

The rules, in order:

1. ``override(messages, tools)`` (optional) may return a reply; ``None`` falls through.
2. The last user message's arithmetic ("What is 12 + 30?", "Compute (2 + 3) * 4") is read as a chain
   of binary operations (:func:`~osmosis_compat.testing.arithmetic.find_chain`).
3. If every operation has a matching offered tool, each turn performs the next operation not yet done
   as one tool call; the number of tool results after that user message says how far the chain got,
   and intermediate values are read from those tool results.
4. When all operations are done: ``"The answer is <last tool result>."``.
5. Otherwise (no tools, no matching tool, no arithmetic): ``"The answer is <value>."`` when the policy
   can compute it itself, else ``"OK."``.
6. Structured output (``structured_output=True``, the default): when the request dictates the answer's shape — a
   ``response_format`` JSON schema, a ``tool_choice`` naming a function or ``"required"``, Strands'
   ``StructuredOutputTool`` among the tools — and rules 2–5 call no tool, the reply complies with a value derived
   from the schema (:mod:`osmosis_compat.testing.structured`), as a real model would. The fake controllers hand
   the request's parameters over because the policy sets ``accepts_request_params``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional, Protocol, runtime_checkable

from osmosis_compat.testing.arithmetic import Op, Ref, apply_op, find_chain, format_number, render_operand
from osmosis_compat.testing.structured import (
    StructuredRequest,
    is_structured_output_tool,
    offered_tools,
    structured_message,
    tool_name,
    tool_parameters,
)

__all__ = ["ChatPolicy", "ScriptedPolicy", "Override", "ToolBinding"]

#: ``override(messages, tools)`` → a full chat.completion dict, an assistant message dict, or ``None``.
Override = Callable[[list[dict[str, Any]], Optional[list[dict[str, Any]]]], Optional[dict[str, Any]]]

#: Fixed ``created`` timestamp so replies are byte-for-byte reproducible (snapshot-friendly).
SCRIPTED_CREATED = 1_700_000_000

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_NAME_TOKENS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@runtime_checkable
class ChatPolicy(Protocol):
    """What the fake controllers need from a model: answer a chat request with a ``chat.completion`` dict.

    :class:`ScriptedPolicy` is the built-in one; anything with this method works (e.g. a policy that
    forwards to a real endpoint). An exception becomes a 500 answer to the agent's model call. A policy whose
    ``accepts_request_params`` attribute is true is also called with ``params=``: the request's sampling and
    output parameters (``temperature``, ``tool_choice``, ``response_format`` …, those the agent sent), from every
    fake controller alike.
    """

    async def areply(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str = ...
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ToolBinding:
    """How an operation is sent to a tool: two numeric parameters, or one expression string."""

    name: str
    params: tuple[str, ...]

    @property
    def takes_expression(self) -> bool:
        return len(self.params) == 1

    def arguments(self, op: Op, results: list[float | int]) -> dict[str, Any]:
        """The JSON arguments for ``op``, with earlier results substituted for references."""
        left = render_operand(op.left, results)
        right = render_operand(op.right, results)
        if self.takes_expression:
            return {self.params[0]: f"{left} {op.operator} {right}"}
        return {self.params[0]: _as_number(left), self.params[1]: _as_number(right)}


class ScriptedPolicy:
    """Deterministic chat-completions policy (see the module docstring for the rules).

    ``latency_s`` is a simulated model latency applied by :meth:`areply` (never by :meth:`reply`, which
    stays synchronous and instant). ``override`` lets a test dictate specific replies. ``structured_output=False``
    turns rule 6 off: every reply is then text or an arithmetic tool call, whatever the request asks for.
    """

    #: The fake controllers pass the request's parameters (``params=``): rule 6 reads its output parameters.
    accepts_request_params = True

    #: Tool-name words that mean each operator (matched against the name's words, e.g. ``add_numbers``).
    OPERATOR_WORDS: dict[str, frozenset[str]] = {
        "+": frozenset({"add", "addition", "sum", "plus"}),
        "-": frozenset({"subtract", "subtraction", "sub", "minus", "difference"}),
        "*": frozenset({"multiply", "multiplication", "mul", "times", "product"}),
        "/": frozenset({"divide", "division", "div", "quotient"}),
    }
    #: Words that mark a generic tool taking one expression string (in its name or its parameter's).
    EXPRESSION_WORDS: frozenset[str] = frozenset(
        {"calculator", "calculate", "calc", "evaluate", "eval", "compute", "math", "expression", "expr", "formula"}
    )

    def __init__(
        self, latency_s: float = 0.0, *, override: Override | None = None, structured_output: bool = True
    ) -> None:
        if latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        self.latency_s = latency_s
        self.override = override
        self.structured_output = structured_output

    # -- public API -------------------------------------------------------------------------------

    def reply(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        model: str = "scripted",
        params: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Return a full ``chat.completion`` dict answering ``messages`` with the offered ``tools``.

        ``messages`` are chat-completions messages; content may be a string, ``None`` or a list of parts
        (``{"type": "text", "text": …}`` or Strands-style ``{"text": …}``). ``tools`` are OpenAI tool
        definitions (``{"type": "function", "function": {name, parameters}}``), plain or strict. ``params`` are
        the request's other fields; ``tool_choice`` and ``response_format`` are read (rule 6).
        Raises ``TypeError`` when ``messages`` is not a list of dicts.
        """
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise TypeError("messages must be a list of message dicts")
        tools = tools or []
        if self.override is not None:
            dictated = self.override(messages, tools)
            if dictated is not None:
                if "choices" in dictated:
                    return dictated
                return self._completion(messages, dict(dictated), model)
        return self._completion(messages, self.decide(messages, tools, params=params), model)

    async def areply(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        model: str = "scripted",
        params: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """:meth:`reply` after sleeping ``latency_s`` (for servers and benchmarks)."""
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self.reply(messages, tools, model=model, params=params)

    def decide(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The assistant message for this turn (rules 2–6 of the module docstring)."""
        if not self.structured_output:
            return self.solve(messages, tools)
        request = StructuredRequest.read(params)
        offered = offered_tools(tools, (params or {}).get("tool_choice")) or []
        # Strands' structured-output tool ends the run: never one of the arithmetic's tools.
        decided = self.solve(messages, [t for t in offered if not is_structured_output_tool(t)])
        structured = structured_message(request, messages, offered, decided, since=_last_question_index(messages))
        return decided if structured is None else structured

    def solve(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The arithmetic answer for this turn: a tool call or a text (rules 2–5 of the module docstring)."""
        question_at = _last_question_index(messages)
        question = _text(messages[question_at].get("content")) if question_at is not None else ""
        chain = find_chain(question)
        if not chain:
            return _text_message("OK.")
        computed = _evaluate(chain)
        bindings = [self.bind(op.operator, tools) for op in chain]
        if not tools or any(b is None for b in bindings):
            return _text_message("OK." if computed is None else f"The answer is {format_number(computed[-1])}.")

        tool_results = _tool_results_after(messages, question_at)
        results: list[float | int] = []
        for i, text in enumerate(tool_results[: len(chain)]):
            value = _last_number(text)
            if value is None:
                if computed is None:
                    return _text_message("OK.")  # e.g. the tool reported a division by zero
                # A tool that answers in words: carry on with the true value rather than derail the chain.
                value = computed[i]
            results.append(value)
        step = len(tool_results)
        if step >= len(chain):
            final = results[-1] if results else (computed[-1] if computed else None)
            return _text_message("OK." if final is None else f"The answer is {format_number(final)}.")

        binding = bindings[step]
        assert binding is not None
        call_id = f"call_{_short_hash(_first_user_text(messages))}_{_count_tool_calls(messages) + 1}"
        arguments = binding.arguments(chain[step], results)
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": binding.name, "arguments": json.dumps(arguments)},
                }
            ],
        }

    def bind(self, operator: str, tools: list[dict[str, Any]]) -> ToolBinding | None:
        """The offered tool that performs ``operator``: a named operator tool first, else a generic one."""
        generic: ToolBinding | None = None
        for tool in tools:
            name, schema = tool_name(tool), dict(tool_parameters(tool))
            if not name:
                continue
            words = _name_words(name)
            numeric, strings, properties = _classify_params(schema)
            if words & self.OPERATOR_WORDS.get(operator, frozenset()):
                if len(numeric) >= 2:
                    return ToolBinding(name, (numeric[0], numeric[1]))
                if len(properties) == 2 and not strings:
                    return ToolBinding(name, (properties[0], properties[1]))
            if generic is None and len(properties) == 1 and strings == properties:
                if words & self.EXPRESSION_WORDS or _name_words(strings[0]) & self.EXPRESSION_WORDS:
                    generic = ToolBinding(name, (strings[0],))
        return generic

    # -- envelope ---------------------------------------------------------------------------------

    def _completion(self, messages: list[dict[str, Any]], message: dict[str, Any], model: str) -> dict[str, Any]:
        message.setdefault("role", "assistant")
        message.setdefault("content", None)
        tool_calls = message.get("tool_calls") or []
        output = (message.get("content") or "") + "".join(
            (c.get("function") or {}).get("name", "") + (c.get("function") or {}).get("arguments", "")
            for c in tool_calls
        )
        prompt_tokens = _approx_tokens(sum(len(_text(m.get("content"))) for m in messages))
        completion_tokens = _approx_tokens(len(output))
        digest = hashlib.sha256(json.dumps([messages, message], sort_keys=True, default=str).encode()).hexdigest()
        return {
            "id": f"chatcmpl-{digest[:24]}",
            "object": "chat.completion",
            "created": SCRIPTED_CREATED,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


# -- reading a conversation -----------------------------------------------------------------------


def _text(content: Any) -> str:
    """Text of a message content: a string, ``None``, or a list of text parts / Strands blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces: list[str] = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    pieces.append(part["text"])
                elif isinstance(part.get("toolResult"), dict):
                    pieces.append(_text(part["toolResult"].get("content")))
                elif "json" in part:
                    pieces.append(json.dumps(part["json"]))
        return "".join(pieces)
    return str(content)


def _is_tool_result_only(message: dict[str, Any]) -> bool:
    """A Strands-native user message that only carries tool results (not a question)."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, dict) and "toolResult" in p for p in content)
    )


def _last_question_index(messages: list[dict[str, Any]]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and not _is_tool_result_only(message):
            return index
    return None


def _tool_results_after(messages: list[dict[str, Any]], start: int | None) -> list[str]:
    results: list[str] = []
    for message in messages[(start + 1) if start is not None else 0 :]:
        if message.get("role") == "tool":
            results.append(_text(message.get("content")))
        elif message.get("role") == "user" and _is_tool_result_only(message):
            results.extend(_text(p["toolResult"].get("content")) for p in message["content"])
    return results


def _count_tool_calls(messages: list[dict[str, Any]]) -> int:
    count = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        count += len(message.get("tool_calls") or [])
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for p in content if isinstance(p, dict) and "toolUse" in p)
    return count


def _first_user_text(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


# -- tools ----------------------------------------------------------------------------------------


def _schema_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    types = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            types |= _schema_types(option)
    return types


def _classify_params(schema: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(numeric params, string params, all params), each in schema order."""
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        return [], [], []
    numeric = [n for n, s in properties.items() if _schema_types(s) & {"number", "integer"}]
    strings = [n for n, s in properties.items() if "string" in _schema_types(s)]
    return numeric, strings, list(properties)


def _name_words(name: str) -> set[str]:
    return {w.lower() for w in _NAME_TOKENS.findall(name)}


# -- small helpers --------------------------------------------------------------------------------


def _evaluate(chain: list[Op]) -> list[float | int] | None:
    values: list[float | int] = []
    try:
        for op in chain:
            left = values[op.left.index] if isinstance(op.left, Ref) else op.left
            right = values[op.right.index] if isinstance(op.right, Ref) else op.right
            values.append(apply_op(op.operator, left, right))
    except (ZeroDivisionError, OverflowError):
        return None
    return values


def _last_number(text: str) -> float | int | None:
    found = _NUMBER.findall(text)
    if not found:
        return None
    value = _as_number(found[-1])
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _as_number(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() and "e" not in text.lower() else value


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _approx_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def _text_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}
