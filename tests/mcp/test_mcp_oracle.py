"""osmosis-ai 0.2.17's own ``MCPAgentLoop`` (its source, ``upstream_0_2_17/agent_loop.py``, run on osmosis-compat
through the ``osmosis_ai`` shim) and ours over the same FastMCP server directories: same tools offered, same
transcripts, same metrics. 0.2.17's loop reads FastMCP 2's private tool manager; it is handed one built from the
server's public API (FastMCP 4 has none)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("fastmcp")

from osmosis_compat.legacy.base import RolloutContext  # noqa: E402
from osmosis_compat.legacy.completions import CompletionsResult  # noqa: E402
from osmosis_compat.legacy.mcp import MCPAgentLoop, load_mcp_server  # noqa: E402
from osmosis_compat.legacy.schemas import RolloutMetrics, RolloutRequest  # noqa: E402

from .test_mcp_loop import write_server  # noqa: E402

UPSTREAM = Path(__file__).parent / "upstream_0_2_17" / "agent_loop.py"
SHA256 = "e33eb06239dce5e6a9d854f0029811508294c646490b1883962138e18730da42"


def _upstream_module():
    assert hashlib.sha256(UPSTREAM.read_bytes()).hexdigest() == SHA256  # byte for byte 0.2.17's file
    spec = importlib.util.spec_from_file_location("upstream_mcp_agent_loop_0_2_17", UPSTREAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _ToolManager:
    """FastMCP 2's ``_tool_manager`` surface that 0.2.17 reads, over FastMCP 4's public API."""

    def __init__(self, server):
        self.server = server
        self._tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}

    async def call_tool(self, name, arguments):
        return await self.server.call_tool(name, arguments)


class _FastMCP2:
    def __init__(self, server):
        self._tool_manager = _ToolManager(server)


def _call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


SCRIPT = [
    [_call("c1", "add", {"a": 2, "b": 3}), _call("c2", "explode", {"reason": "r"})],
    [_call("c3", "paint", {"color": "red", "where": {"x": 1, "y": 2}, "tags": ["a"]})],
    [_call("c4", "multiply", {"a": 2.5, "b": 4}), _call("c5", "no_such_tool", {}), {"id": "c6", "function": {}}],
    [],
]


class _ScriptedClient:
    def __init__(self, script):
        self.script, self.seen = list(script), []

    def get_metrics(self):
        return RolloutMetrics()

    async def chat_completions(self, messages, **kwargs):
        self.seen.append({"n": len(messages), "kwargs": kwargs})
        calls = self.script.pop(0) if self.script else []
        message = {"role": "assistant", "content": "" if calls else "done"}
        if calls:
            message["tool_calls"] = calls
        return CompletionsResult(message=message, token_ids=[], logprobs=[], usage={},
                                 finish_reason="tool_calls" if calls else "stop")


def _run(loop, max_turns):
    request = RolloutRequest(rollout_id="r", server_url="http://x", messages=[{"role": "user", "content": "go"}],
                             completion_params={"temperature": 0.5}, max_turns=max_turns)
    client = _ScriptedClient(SCRIPT)
    ctx = RolloutContext(request=request, tools=loop.get_tools(request), llm=client)
    result = asyncio.run(loop.run(ctx))
    return {"status": result.status, "finish_reason": result.finish_reason, "messages": result.final_messages,
            "tool_calls": result.metrics.num_tool_calls, "llm": client.seen}


@pytest.mark.parametrize("max_turns", [10, 2])
def test_same_tools_and_transcripts_as_0_2_17(tmp_path, max_turns):
    upstream = _upstream_module()
    server = load_mcp_server(write_server(tmp_path / "srv"))
    theirs_loop = upstream.MCPAgentLoop(_FastMCP2(server))
    ours_loop = MCPAgentLoop(server)
    assert theirs_loop.name == ours_loop.name == "mcp_agent"
    dump = lambda loop: [t.model_dump(exclude_none=True) for t in loop.get_tools(None)]  # noqa: E731
    assert dump(ours_loop) == dump(theirs_loop)
    ours, theirs = _run(ours_loop, max_turns), _run(theirs_loop, max_turns)
    assert ours == theirs
    if max_turns == 10:
        tool_texts = [m["content"] for m in ours["messages"] if m["role"] == "tool"]
        assert tool_texts[0] == "5" and "exploded: r" in tool_texts[1] and "cm" in tool_texts[2]
        assert ours["finish_reason"] == "stop" and ours["tool_calls"] == 6
    else:
        assert ours["finish_reason"] == "max_turns"
