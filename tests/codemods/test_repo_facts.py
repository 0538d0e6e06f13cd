"""The cross-file facts are paid only where a question needs them, and give what the full analysis gives.

``build_repo_facts`` resolves a file's names (libcst's scope analysis, the expensive part) only when a question
needs that file; ``exhaustive=True`` resolves every linked file and asks every module what it offers — the
reference. Checked on the multi-file fixture trees (real programs) with derived import shapes added (comma,
function-local, parenthesised and continued imports, a subpackage, an import cycle between agent modules, a
relative import beyond the top package), and on a real package that imports the framework but offers nothing
(a subpackage of the installed OpenAI Agents SDK: no file resolved at all)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import FullRepoManager, FullyQualifiedNameProvider

import codemods.driver as driver
from codemods.analysis import repo as repo_mod
from codemods.analysis.import_graph import imported_modules, import_lines, parse_or_none
from codemods.analysis.qualified import qualified_names
from codemods.driver import candidates, run_many, select_rules
from tests.codemods._fixtures import FIXTURES

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
CODEX = SITE / "agents" / "extensions" / "experimental" / "codex"  # real SDK code importing `agents`

# derived shapes, added beside the research_bot fixture (each imports a real module of it in another way)
SHAPES = {
    "alias_user.py": "import os, research_bot.manager as m\n\n\nasync def go(q):\n    os.getcwd()\n"
                     "    await m.ResearchManager().run(q)\n",
    "late.py": "def build():\n    from .manager import ResearchManager\n\n    return ResearchManager()\n",
    "wrapped.py": "from .agents.planner_agent import (\n    planner_agent,\n)\nfrom .agents.writer_agent \\\n"
                  "    import writer_agent\n\nPAIR = (planner_agent, writer_agent)\n",
    "scripts/__init__.py": "",
    "scripts/run_plan.py": "from agents import Runner\n\nfrom ..agents.planner_agent import planner_agent\n\n\n"
                           "async def plan(q: str):\n    return await Runner.run(planner_agent, q)\n",
    "scripts/use_plan.py": "from .run_plan import plan\n\n\nasync def main(q):\n    return await plan(q)\n",
    "ping.py": "from agents import Agent, Runner\n\nfrom . import pong\n\nping_agent = Agent(name=\"ping\", "
               "instructions=\"Answer ping.\")\n\n\nasync def ask(q):\n    return await Runner.run(pong.pong_agent, q)\n",
    "pong.py": "from agents import Agent\n\nfrom .ping import ping_agent\n\npong_agent = Agent(name=\"pong\", "
               "instructions=\"Answer pong.\", handoffs=[ping_agent])\n",
    "beyond.py": "from .... import nothing\nfrom .agents.writer_agent import writer_agent\n\nprint(writer_agent, nothing)\n",
}


def _tree(tmp_path: Path, name: str) -> list[str]:
    root = tmp_path / name
    if name == "research_bot":
        shutil.copytree(FIXTURES / "openai_agent_tree" / "research_bot", root)
        for rel, text in SHAPES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    elif name == "codex":
        shutil.copytree(CODEX, root, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        tree = "strands_agent_tree" if name == "assistant" else "openai_agent_tree"
        shutil.copytree(FIXTURES / tree / name, root)
    return [str(p) for p in sorted(root.rglob("*.py"))]


def _facts(paths: list[str], exhaustive: bool) -> repo_mod.RepoFacts:
    rules = [r for r in select_rules() if r.uses_repo]
    todo, _ = candidates(paths, rules)
    return repo_mod.build_repo_facts(paths, todo, rules, exhaustive=exhaustive)


@pytest.mark.parametrize("name", ["research_bot", "calc_app", "assistant"])
def test_the_facts_are_those_of_the_full_analysis(tmp_path, name):
    paths = _tree(tmp_path, name)
    cheap, full = _facts(paths, exhaustive=False), _facts(paths, exhaustive=True)
    assert cheap.verdicts == full.verdicts
    assert full.verdicts  # the tree's modules do offer something (or say why not)
    assert cheap.extra == full.extra
    for path in paths:
        assert cheap.imported(path) == full.imported(path), path
        assert cheap.offered(path) == full.offered(path), path
        assert dict(cheap.external_uses(path)) == dict(full.external_uses(path)), path
    assert set(cheap.resolved) <= set(full.resolved)


@pytest.mark.parametrize("name", ["research_bot", "calc_app"])
def test_a_run_writes_what_it_writes_with_the_full_analysis(tmp_path, monkeypatch, name):
    paths = _tree(tmp_path, name)
    cheap = {r.path: (r.status, r.new_bytes) for r in run_many(paths, select_rules())}
    full_build = repo_mod.build_repo_facts
    monkeypatch.setattr(repo_mod, "build_repo_facts", lambda *a, **k: full_build(*a, **k, exhaustive=True))
    full = {r.path: (r.status, r.new_bytes) for r in run_many(paths, select_rules())}
    assert cheap == full
    assert any(status == "changed" for status, _ in full.values())


@pytest.mark.skipif(not CODEX.is_dir(), reason="the OpenAI Agents SDK is not installed")
def test_a_package_whose_modules_offer_nothing_resolves_no_file(tmp_path, monkeypatch):
    paths = _tree(tmp_path, "codex")
    built: list[repo_mod.RepoFacts] = []
    build = repo_mod.build_repo_facts
    monkeypatch.setattr(repo_mod, "build_repo_facts", lambda *a, **k: built.append(build(*a, **k)) or built[-1])
    results = run_many(paths, select_rules())
    facts = built[0]
    assert facts.linked and any(r.status != "skipped" for r in results)  # linked files, parsed candidates
    assert facts.resolved == {} and facts.verdicts == {}


def _sample() -> list[tuple[str, str]]:
    """(root, path) of real files: the fixture trees and the SDK subpackage (its biggest file aside: slow)."""
    out = []
    for tree in (FIXTURES / "openai_agent_tree", FIXTURES / "strands_agent_tree"):
        out += [(str(tree), str(p)) for p in sorted(tree.rglob("*.py"))]
    if CODEX.is_dir():
        root = str(CODEX.parents[2])  # module names from site-packages/agents/…
        out += [(str(SITE), str(p)) for p in sorted(CODEX.glob("*.py")) if p.stat().st_size < 20_000]
    return out


def test_qualified_names_are_the_providers_and_the_import_scan_covers_them():
    for root, path in _sample():
        manager = FullRepoManager(root, [path], {FullyQualifiedNameProvider})
        names = manager.get_metadata_wrapper_for_path(path).resolve(FullyQualifiedNameProvider)
        expected = [(n.value, sorted(q.name for q in v)) for n, v in names.items() if isinstance(n, cst.Name)]
        got = [(value, sorted(q)) for value, q in qualified_names(path, root)]
        assert got == expected, path
        # every module a name is qualified into through an import is one the cheap scan names
        own = os.path.relpath(path, root)[:-3].replace(os.sep, ".").removesuffix(".__init__")
        is_package = os.path.basename(path) == "__init__.py"
        scanned = imported_modules(parse_or_none(Path(path).read_bytes()), own, is_package)
        modules = {q.rpartition(".")[0] for _, qs in got for q in qs}
        assert {m for m in modules if m and m != "builtins" and m != own and not m.startswith(own + ".")} <= scanned


def test_import_lines_keep_every_line_an_import_pattern_matches():
    text = (b'"""from the docs: import nothing"""\nimport os, sys\r\nx = 1\n  from .a import (b,\n    c)\n'
            b"y = 2; import json\nfrom\\\n  z import w")
    assert import_lines(text) == (b'"""from the docs: import nothing"""\nimport os, sys\r\n  from .a import (b,\n'
                                  b"y = 2; import json\nfrom\\\n  z import w")
