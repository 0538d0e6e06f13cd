"""Every fixture's output parses and is a fixed point; hypothesis mixes fixture bodies into new files."""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codemods.driver import migrate_source
from tests.codemods._fixtures import fixture_files, fixture_id

ALL = fixture_files()


@pytest.mark.parametrize("path", ALL, ids=[fixture_id(p) for p in ALL])
def test_output_parses_and_is_a_fixed_point(path):
    first = migrate_source(path.read_text(), filename=path.name)
    ast.parse(first.new_text)
    second = migrate_source(first.new_text, filename=path.name)
    assert second.new_text == first.new_text
    assert second.edits == []  # nothing left to do; TODOs may be reported again, but never added twice
    assert [t.code for t in second.todos] == [t.code for t in first.todos] or len(second.todos) <= len(first.todos)


def _chunks() -> list[str]:
    # top-level statements of the non-import fixtures (functions, classes, assignments) to recombine
    out = []
    for p in fixture_files():
        tree = ast.parse(p.read_text())
        lines = p.read_text().splitlines(keepends=True)
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                out.append("".join(lines[start - 1 : node.end_lineno]))
    return out


HEADERS = [
    "from strands import Agent, tool\nfrom strands.models.litellm import LiteLLMModel\n",
    "from agents import Agent, Runner, ModelSettings, function_tool\n",
    "import strands as s\nimport agents as ag\n",
    "from osmosis_ai.rollout import *\nfrom osmosis_ai.rollout import AgentWorkflow, OsmosisStrandsAgent\n",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(HEADERS), st.lists(st.sampled_from(_chunks()), min_size=1, max_size=5))
def test_recombined_files_parse_and_reach_a_fixed_point(header, chunks):
    text = header + "\n\n" + "\n\n".join(chunks)
    try:
        ast.parse(text)
    except SyntaxError:
        return
    first = migrate_source(text)
    ast.parse(first.new_text)
    assert migrate_source(first.new_text).new_text == first.new_text


# The hypothesis case above, minimised: a loop whose module imports a name the rewrite needs
# (`OsmosisStrandsAgent`) from the path 0.3 removed. The legacy-loop rule (first) took that binding for "something
# else" and refused the loop; the imports rule (last) then moved the import, so the next run rewrote the loop: no
# fixed point. Both paths name one object (codemods.base.MOVED_IMPORTS), and every rule now reads them so.
MOVED_IMPORT_LOOP = '''from osmosis_ai.rollout import OsmosisStrandsAgent, RolloutAgentLoop


class EchoLoop(RolloutAgentLoop):
    name = "echo"

    def get_tools(self, request):
        return []

    async def run(self, ctx):
        messages = list(ctx.request.messages)
        result = await ctx.chat(messages)
        messages.append(result.message)
        return ctx.complete(messages)
'''


@pytest.mark.parametrize("target", ["0.2", "0.3"])
def test_a_loop_importing_a_name_of_the_rewrite_from_its_old_path_is_rewritten_in_one_run(target):
    first = migrate_source(MOVED_IMPORT_LOOP, target=target)
    assert "OM301" in {e.code for e in first.edits}, first.todos
    assert "OM390" not in {t.code for t in first.todos}
    second = migrate_source(first.new_text, target=target)
    assert second.new_text == first.new_text and second.edits == []
    # the name is imported once, from where it lives now
    tree = ast.parse(first.new_text)
    sources = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               for a in n.names if a.name == "OsmosisStrandsAgent"]
    assert sources == ["osmosis_ai.rollout.integrations.agents.strands"]
