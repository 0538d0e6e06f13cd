"""The corpus host's stand-ins for what the side venv lacks (tests/upstream/scripts/corpus_host.py): a name of a
missing package that a program uses as a tool becomes a real tool of the program's framework, and only such a name,
only while that program is imported."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import pytest

HOST = Path(__file__).resolve().parents[1] / "upstream" / "scripts" / "corpus_host.py"


@pytest.fixture(scope="module")
def host():
    spec = importlib.util.spec_from_file_location("corpus_host_under_test", HOST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines functions only: no finder is installed until install_stubs runs
    return module


STRANDS_PROGRAM = '''
from strands import Agent
from strands_tools import use_aws, http_request as fetch, not_a_tool
from osmosis_ai.rollout.integrations.agents.strands import OsmosisStrandsAgent
from .helpers import local_tool

agent = OsmosisStrandsAgent(tools=[use_aws, local_tool])
agent.tool.http_request(url="x")  # a direct call names the tool, not the alias
not_a_tool(3)
'''


def test_only_names_of_an_absolute_import_used_as_tools_are_tools(host, tmp_path):
    program = tmp_path / "program.py"
    program.write_text(STRANDS_PROGRAM)
    assert host.tool_imports(str(program)) == {"strands_tools": {"use_aws": "strands", "http_request": "strands"}}
    both = tmp_path / "both.py"
    both.write_text("import agents\nimport strands\nfrom pkg import t\nx = dict(tools=[t])\n")
    assert host.tool_imports(str(both)) == {}  # which framework the tool is for is not known


def test_a_stub_tool_is_a_real_tool_a_direct_call_reaches(host):
    from strands import Agent

    tool = host.stub_tool("strands", "strands_tools", "use_aws")
    assert tool.tool_spec["name"] == "use_aws" and tool.tool_spec["inputSchema"]["json"]["properties"] == {}
    agent = Agent(tools=[tool], callback_handler=None)  # a direct call never reaches the model
    result = agent.tool.use_aws(service_name="neptune-graph", region="us-west-2")  # arguments dropped
    assert result["status"] == "success"
    assert result["content"][0]["text"] == "use_aws: strands_tools is not installed here (a stand-in for the tool)"
    from agents import FunctionTool

    assert isinstance(host.stub_tool("agents", "pkg.tools", "search"), FunctionTool)


def test_stub_tools_are_set_on_stub_modules_only_while_their_program_imports(host):
    class StubModule(types.ModuleType):
        pass

    host.STUB_MODULE[:] = [StubModule]
    stub, real = StubModule("missing_tools"), types.ModuleType("installed_tools")
    tools = host.StubTools()
    tools.use({"missing_tools": {"search": "strands"}, "installed_tools": {"search": "strands"}})
    tools.arm(stub)
    tools.arm(real)
    assert stub.search.tool_name == "search" and not hasattr(real, "search")
    program = types.ModuleType("program")
    program.search = stub.search
    assert tools.used_by(program) == ["missing_tools.search"]
    tools.disarm()
    assert "search" not in vars(stub)  # the next program gets the permissive stub again
