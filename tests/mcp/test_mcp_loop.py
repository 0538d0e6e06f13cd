"""MCP agent loops over real FastMCP server directories written to a temp dir (spec §2.20)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("fastmcp")

from osmosis_compat.legacy.exceptions import MCPLoadError  # noqa: E402
from osmosis_compat.legacy.mcp import MCPAgentLoop, load_mcp_server, mcp_tool_to_openai  # noqa: E402

MAIN = '''
import enum
from typing import Literal, Optional

from fastmcp import FastMCP
from pydantic import BaseModel

import helpers               # an absolute sibling import
from .units import UNIT      # a relative one

mcp = FastMCP("calc")


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return helpers.plus(a, b)


@mcp.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@mcp.tool
def paint(color: Color, where: Point, times: Optional[int] = None, tags: list[str] = [],
          mode: Literal["fast", "slow"] = "fast") -> dict:
    return {"color": color.value, "x": where.x, "unit": UNIT}


@mcp.tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError("exploded: " + reason)
'''


def write_server(root: Path, *, main: str = MAIN) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.py").write_text(textwrap.dedent(main))
    (root / "helpers.py").write_text("def plus(a, b):\n    return a + b\n")
    (root / "units.py").write_text("UNIT = 'cm'\n")
    return root


@pytest.fixture
def server_dir(tmp_path):
    return write_server(tmp_path / "calc_server")


def test_load_and_convert_tools(server_dir):
    server = load_mcp_server(server_dir)
    assert "helpers" not in sys.modules  # the sibling module was taken out again
    loop = MCPAgentLoop(server)
    assert loop.name == "mcp_agent" and MCPAgentLoop(server, agent_name="calc").name == "calc"
    tools = {t.function.name: t.model_dump(exclude_none=True) for t in loop.get_tools(None)}
    assert set(tools) == {"add", "multiply", "paint", "explode"}
    add = tools["add"]["function"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}  # integer → number
    assert add["parameters"]["required"] == ["a", "b"]
    paint = tools["paint"]["function"]
    assert paint["description"] == "Tool: paint"  # no docstring
    props = paint["parameters"]["properties"]
    assert props["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["where"] == {"type": "object"}  # nested structures flattened to their top-level type
    assert props["times"] == {"type": "number"}  # anyOf [integer, null] → its first non-null branch
    assert props["tags"] == {"type": "array"}
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}


def test_schema_conversion_rules_as_upstream():
    params = {
        "$defs": {"Color": {"enum": ["r", "g"], "type": "string", "description": "a colour"}},
        "properties": {
            "c": {"$ref": "#/$defs/Color"},
            "n": {"type": ["integer", "null"]},
            "u": {"anyOf": [{"type": "null"}]},
            "odd": {"type": 3},
        },
        "required": ["c"],
    }
    tool = mcp_tool_to_openai("t", "", params).model_dump(exclude_none=True)
    props = tool["function"]["parameters"]["properties"]
    assert props == {"c": {"type": "string", "description": "a colour", "enum": ["r", "g"]},
                     "n": {"type": "number"}, "u": {"type": "string"}, "odd": {"type": "string"}}


@pytest.mark.parametrize(("setup", "message"), [
    (lambda root: None, "MCP directory not found"),
    (lambda root: root.mkdir(), "No main.py found"),
    (lambda root: write_server(root, main="raise RuntimeError('bad server')\n"), "Error importing"),
    (lambda root: write_server(root, main="x = 1\n"), "No FastMCP instance found"),
])
def test_load_errors(tmp_path, setup, message):
    root = tmp_path / "srv"
    setup(root)
    with pytest.raises(MCPLoadError, match=message):
        load_mcp_server(root)


def _osmosis(*args, cwd):
    return subprocess.run([sys.executable, "-m", "osmosis_compat.cli.legacy_cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_osmosis_test_mcp_runs_rows_with_the_servers_tools(server_dir, tmp_path):
    data = tmp_path / "data.jsonl"
    rows = [{"system_prompt": "calc", "user_prompt": "What is 12 + 30?", "ground_truth": "42"},
            {"system_prompt": "calc", "user_prompt": "What is 2.5 * 4?", "ground_truth": "10"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.json"
    proc = _osmosis("test", "--mcp", str(server_dir), "-d", str(data), "--model", "builtin", "-o", str(out),
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["summary"]["passed"] == 2
    assert [r["finish_reason"] for r in report["results"]] == ["stop", "stop"]


def test_tool_errors_reach_the_model_and_max_turns(server_dir):
    """A tool that raises becomes a tool error message; a model that never stops asking ends at max_turns."""
    import asyncio

    from osmosis_compat.legacy.base import RolloutContext
    from osmosis_compat.legacy.completions import CompletionsResult
    from osmosis_compat.legacy.schemas import RolloutRequest

    loop = MCPAgentLoop(load_mcp_server(server_dir))
    calls = []

    class Client:
        def get_metrics(self):
            from osmosis_compat.legacy.schemas import RolloutMetrics

            return RolloutMetrics()

        async def chat_completions(self, messages, **kwargs):
            calls.append(list(messages))
            tool_call = {"id": f"c{len(calls)}", "type": "function",
                         "function": {"name": "explode", "arguments": json.dumps({"reason": "why"})}}
            return CompletionsResult(message={"role": "assistant", "content": "", "tool_calls": [tool_call]},
                                     token_ids=[], logprobs=[], usage={}, finish_reason="tool_calls")

    request = RolloutRequest(rollout_id="r", server_url="http://x", messages=[{"role": "user", "content": "go"}],
                             completion_params={}, max_turns=2)
    ctx = RolloutContext(request=request, tools=loop.get_tools(request), llm=Client())
    result = asyncio.run(loop.run(ctx))
    assert result.finish_reason == "max_turns" and len(calls) == 2
    tool_messages = [m for m in result.final_messages if m["role"] == "tool"]
    assert len(tool_messages) == 2 and "exploded: why" in tool_messages[0]["content"]
    assert result.metrics.num_tool_calls == 2


def test_osmosis_compat_eval_and_serve_take_mcp(server_dir, tmp_path, capsys):
    import argparse

    from osmosis_compat.cli import serve
    from osmosis_compat.cli.main import main

    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"user_prompt": "What is 20 + 22?", "label": "42"}) + "\n")
    out = tmp_path / "rows.jsonl"
    assert main(["eval", "--mcp", str(server_dir), "-d", str(data), "-q", "-o", str(out)]) == 0
    row = json.loads(out.read_text())
    assert row["status"] == "failed" and row["category"] == "no_reward"  # MCP loops give no reward, as upstream
    assert row["final_message"] == "The answer is 42."
    assert main(["eval", "--mcp", str(server_dir), "-m", "x:y", "-d", str(data)]) == 1
    assert "mutually exclusive" in capsys.readouterr().err
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    plan = serve.plan_server(parser.parse_args(["--mcp", f"tools={server_dir}", "-m", "calc=" + str(
        Path(__file__).resolve().parents[2] / "examples" / "legacy" / "calculator_agent.py") + ":agent_loop",
        "--local", "-p", "9123"]))
    assert set(plan.app.agents) == {"tools", "calc"}
    assert "http://0.0.0.0:9123/agents/tools/v1/rollout/init" in plan.banner or "/agents/tools/" in plan.banner
