"""``osmosis_ai.rollout.mcp``: a FastMCP server directory as a legacy agent loop (spec §2.20, osmosis-ai 0.2.15+).

``load_mcp_server(DIR)`` imports ``DIR/main.py`` and returns its ``FastMCP`` instance; ``MCPAgentLoop(server)``
offers the server's tools to the model as OpenAI tools and calls them in process, turn after turn, until the model
answers without tool calls or ``max_turns`` runs out. This is what ``--mcp DIR`` runs in ``osmosis test``,
``osmosis eval``, ``osmosis-compat eval`` and ``osmosis-compat serve``.

Needs the optional ``fastmcp`` package (``pip install 'osmosis-compat[mcp]'``); it is imported only by
:func:`load_mcp_server` and when a loop is built. Upstream (0.2.17) read FastMCP 2's private
``_tool_manager``; FastMCP 2 needs ``mcp < 2``, which the LiteLLM the frameworks pin cannot run tool calls beside
(spec/frameworks.md appendix), so osmosis-compat's extra installs FastMCP 4 and this module uses FastMCP's public
``list_tools()`` / ``call_tool()`` (and the 2.x tool manager when that is what it is given).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

from .base import RolloutAgentLoop, RolloutContext, RolloutResult
from .exceptions import MCPLoadError
from .schemas import (
    OpenAIFunctionParametersSchema,
    OpenAIFunctionPropertySchema,
    OpenAIFunctionSchema,
    OpenAIFunctionToolSchema,
    RolloutRequest,
)
from .tools import create_tool_error_result, create_tool_result, get_tool_call_info, serialize_tool_result

__all__ = ["MCPAgentLoop", "MCPLoadError", "load_mcp_server"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = "MCP agent loops need fastmcp: pip install 'osmosis-compat[mcp]'"


# -- loading a server directory ----------------------------------------------------------------------------------


def _fastmcp_class() -> type:
    try:
        from fastmcp import FastMCP
    except ImportError as exc:
        raise MCPLoadError(f"{_INSTALL_HINT} ({exc})") from exc
    return FastMCP


def load_mcp_server(path: str | Path) -> Any:
    """Import ``path/main.py`` and return the first ``FastMCP`` instance it defines (in ``dir()`` order).

    ``main.py`` is imported as ``_osmosis_mcp_<hash>.main`` inside a synthetic package, so its relative imports
    (``from .tools import x``) work; ``path`` is first on ``sys.path`` while it is imported, so absolute sibling
    imports (``import tools``) work too, and the sibling modules it added are taken out of ``sys.modules``
    afterwards (another directory's ``tools`` must not be mistaken for this one's). Raises
    :class:`MCPLoadError` for a missing directory or ``main.py``, a missing fastmcp, an import error (with its
    cause), or a module without a ``FastMCP`` instance.
    """
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise MCPLoadError(f"MCP directory not found: {path}")
    main_file = directory / "main.py"
    if not main_file.is_file():
        raise MCPLoadError(f"No main.py found in MCP directory: {directory} (the FastMCP server must be in main.py)")
    fastmcp_class = _fastmcp_class()
    package_name = f"_osmosis_mcp_{hashlib.sha256(str(directory).encode()).hexdigest()[:8]}"
    package = types.ModuleType(package_name)
    package.__path__ = [str(directory)]  # type: ignore[attr-defined]
    package.__package__ = package_name
    sys.modules[package_name] = package
    module_name = f"{package_name}.main"
    before = set(sys.modules)
    sys.path.insert(0, str(directory))
    try:
        spec = importlib.util.spec_from_file_location(module_name, main_file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise MCPLoadError(f"Error importing {main_file}: {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(str(directory))
        except ValueError:
            pass
        for name in set(sys.modules) - before:
            module_file = getattr(sys.modules.get(name), "__file__", None) or ""
            # Absolute sibling imports (``import tools``) leave top-level names that belong to this directory.
            if not name.startswith(package_name) and module_file.startswith(str(directory) + "/"):
                del sys.modules[name]
    for attribute in dir(module):
        value = getattr(module, attribute)
        if isinstance(value, fastmcp_class):
            return value
    raise MCPLoadError(f"No FastMCP instance found in {main_file}: define e.g. `mcp = FastMCP(\"name\")`")


# -- MCP tool → OpenAI tool --------------------------------------------------------------------------------------


def _resolve_ref(ref: str, defs: dict[str, Any]) -> dict[str, Any]:
    node: Any = {"$defs": defs}
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def _json_schema_to_property(schema: dict[str, Any], defs: dict[str, Any]) -> OpenAIFunctionPropertySchema:
    """One JSON-schema property as upstream converts it: ``$ref`` resolved, ``anyOf`` → its first non-null
    branch, a type list → its first non-null type, ``integer`` → ``number``, anything nested → its top-level type;
    ``description`` and ``enum`` kept."""
    if "$ref" in schema:
        schema = _resolve_ref(schema["$ref"], defs)
    if "anyOf" in schema:
        non_null = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if non_null:
            return _json_schema_to_property(non_null[0], defs)
        return OpenAIFunctionPropertySchema(type="string")
    raw_type = schema.get("type", "string")
    if isinstance(raw_type, list):
        non_null_types = [t for t in raw_type if isinstance(t, str) and t != "null"]
        prop_type = non_null_types[0] if non_null_types else "string"
    elif isinstance(raw_type, str):
        prop_type = raw_type
    else:
        prop_type = "string"
    if prop_type == "integer":
        prop_type = "number"
    return OpenAIFunctionPropertySchema(type=prop_type, description=schema.get("description"),
                                        enum=schema.get("enum"))


def mcp_tool_to_openai(name: str, description: str, parameters: dict[str, Any]) -> OpenAIFunctionToolSchema:
    """An MCP tool's name, description and input schema as an OpenAI function tool (an empty description becomes
    ``"Tool: <name>"``)."""
    defs = parameters.get("$defs", {})
    properties = {prop: _json_schema_to_property(schema, defs)
                  for prop, schema in (parameters.get("properties") or {}).items()}
    return OpenAIFunctionToolSchema(
        type="function",
        function=OpenAIFunctionSchema(
            name=name,
            description=description or f"Tool: {name}",
            parameters=OpenAIFunctionParametersSchema(type="object", properties=properties,
                                                      required=list(parameters.get("required") or [])),
        ),
    )


_mcp_tool_to_openai = mcp_tool_to_openai  # upstream's name (exported by its module)


def _run_sync(coroutine: Any) -> Any:
    """Run ``coroutine`` to completion from sync code, also when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(("ok", asyncio.run(coroutine)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.append(("error", exc))

    thread = threading.Thread(target=target, name="mcp-list-tools")
    thread.start()
    thread.join()
    kind, value = box[0]
    if kind == "error":
        raise value
    return value


class _Tools:
    """The server's tools through whichever API this FastMCP has: 2.x's tool manager, or the public methods."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.manager = getattr(server, "_tool_manager", None)

    def listed(self) -> list[Any]:
        if self.manager is not None and hasattr(self.manager, "_tools"):
            return list(self.manager._tools.values())
        if hasattr(self.server, "list_tools"):
            return list(_run_sync(self.server.list_tools()))
        tools = _run_sync(self.server.get_tools())
        return list(tools.values()) if isinstance(tools, dict) else list(tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.manager is not None and hasattr(self.manager, "call_tool"):
            return await self.manager.call_tool(name, arguments)
        return await self.server.call_tool(name, arguments)


def _extract_tool_value(tool_result: Any) -> Any:
    """A tool result's value: ``structured_content`` (``{"result": x}`` unwrapped to ``x``), else its texts."""
    structured = getattr(tool_result, "structured_content", None)
    if structured is not None:
        if isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    content = getattr(tool_result, "content", None)
    if content:
        texts = [item.text for item in content if getattr(item, "text", None)]
        return "\n".join(texts) if texts else ""
    return ""


class MCPAgentLoop(RolloutAgentLoop):
    """A legacy agent loop over a FastMCP server's tools (upstream's built-in ``mcp_agent``).

    ``run``: up to ``max_turns`` model calls (``ctx.chat`` with the request's ``completion_params``); the tool
    calls of each answer run one after another in process; a tool that raises becomes a tool error message (the
    model sees it and goes on); each call is recorded with its latency. Ends with ``ctx.complete(messages)``, or
    ``finish_reason="max_turns"`` when the model still wanted tools after the last turn. No reward.
    """

    name = "mcp_agent"

    def __init__(self, mcp_server: Any, agent_name: str = "mcp_agent") -> None:
        self.name = agent_name  # type: ignore[misc]
        self._tools = _Tools(mcp_server)
        self._openai_schemas: list[OpenAIFunctionToolSchema] = [
            mcp_tool_to_openai(tool.name, tool.description or "", dict(tool.parameters or {}))
            for tool in self._tools.listed()
        ]

    def get_tools(self, request: RolloutRequest) -> list[OpenAIFunctionToolSchema]:
        return list(self._openai_schemas)

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        messages = list(ctx.request.messages)
        for _turn in range(ctx.request.max_turns):
            result = await ctx.chat(messages, **ctx.request.completion_params)
            messages.append(result.message)
            if not result.has_tool_calls:
                break
            for tool_call in result.tool_calls or []:
                start = time.monotonic()
                try:
                    call_id, name, arguments = get_tool_call_info(tool_call)
                    value = _extract_tool_value(await self._tools.call(name, arguments))
                    messages.append(create_tool_result(call_id, serialize_tool_result(value)))
                except Exception as exc:  # the model sees the failure and may recover, as upstream
                    call_id = tool_call.get("id", "unknown") if isinstance(tool_call, dict) else "unknown"
                    logger.warning("Tool call %s failed: %s", call_id, exc)
                    messages.append(create_tool_error_result(call_id, str(exc)))
                finally:
                    ctx.record_tool_call(latency_ms=(time.monotonic() - start) * 1000)
        else:
            return ctx.complete(messages, finish_reason="max_turns")
        return ctx.complete(messages)


def load_mcp_agent_loop(path: str | Path) -> MCPAgentLoop:
    """``MCPAgentLoop(load_mcp_server(path))``: what ``--mcp DIR`` runs."""
    return MCPAgentLoop(load_mcp_server(path))
