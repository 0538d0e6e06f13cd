"""The rules' cheap paths give exactly what the expensive ones they replace gave (so no output changes with them):
the read-only walk calls a visitor as libcst's ``visit`` does, the text-filtered name lookup equals
``used_names``, the token scan equals a regex over the generated code, a path rebuild equals a transform.

Checked over every fixture and a sample of real third-party modules from this venv (varied syntax: f-strings,
decorators, comprehensions, match statements, type annotations...)."""

from __future__ import annotations

import ast
import keyword
import random
import re
import sys
from pathlib import Path

import libcst as cst
import pytest

from codemods import visit as fast
from codemods.analysis.names import candidate_uses
from codemods.base import RuleContext, used_names
from tests.codemods._fixtures import fixture_files

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _corpus() -> list[Path]:
    real = sorted(p for pkg in ("libcst", "hypothesis", "httpx", "pydantic", "fastapi", "starlette")
                  for p in (SITE / pkg).rglob("*.py") if p.stat().st_size < 60_000)
    random.Random(0).shuffle(real)
    return [*fixture_files(), *real[:30]]


CORPUS = _corpus()


def _modules():
    for path in CORPUS:
        data = path.read_bytes()
        try:
            yield path, data, cst.parse_module(data)
        except Exception:  # noqa: BLE001 - a file libcst cannot parse is simply not part of the corpus
            continue


class _Log(cst.CSTVisitor):
    """Logs every call libcst makes, and prunes some subtrees (a visit_* returning False)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int]] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.log.append(("name", id(node)))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.log.append(("lambda", id(node)))
        return False

    def leave_Call(self, node: cst.Call) -> None:
        self.log.append(("call", id(node)))

    def visit_Comment(self, node: cst.Comment) -> None:
        self.log.append(("comment", id(node)))

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.log.append(("block", id(node)))


class _Everything(cst.CSTVisitor):
    """Overrides on_visit/on_leave (the generic path of the fast walk)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.log.append(("in", id(node)))
        return not isinstance(node, cst.Subscript)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.log.append(("out", id(original_node)))


def test_the_fast_walk_calls_a_visitor_exactly_as_libcst_does():
    n = 0
    for path, _, module in _modules():
        for kind in (_Log, _Everything):
            slow, quick = kind(), kind()
            module.visit(slow)
            fast.visit(module, quick)
            assert quick.log == slow.log, (path, kind.__name__)
        n += 1
    assert n > 100


def test_children_are_in_libcsts_order():
    for _, _, module in list(_modules())[:40]:
        stack = [module]
        while stack:
            node = stack.pop()
            kids = list(fast.children(node))
            assert [id(k) for k in kids] == [id(k) for k in node.children]
            stack.extend(kids)


def test_used_names_among_equals_used_names():
    rnd = random.Random(3)
    for path, data, module in _modules():
        tree = ast.parse(data)
        ctx = RuleContext()
        ctx.set_source(module, tree, data)
        exact = used_names(module)
        words = sorted({w.decode() for w in re.findall(rb"[A-Za-z_]\w*", data)})
        candidates = set(rnd.sample(words, min(60, len(words)))) | {"a", "b", "r", "self", "zzz_not_there"}
        assert ctx.used_names_among(module, candidates) == candidates & exact, path
        # a changed module: new statements are walked, the input's filtered by their text
        changed = module.with_changes(body=[*module.body[:1], cst.parse_statement("x = zzz_not_there\n"),
                                            *module.body[1:]])
        assert ctx.used_names_among(changed, candidates) == candidates & used_names(changed), path


def test_candidate_uses_equal_a_regex_over_the_generated_code():
    rnd = random.Random(5)
    for path, _, module in _modules():
        words = sorted(set(re.findall(r"[A-Za-z_]\w*", module.code)) - set(keyword.kwlist))
        for stmt in module.body:
            code = module.code_for_node(stmt)
            candidates = sorted(set(rnd.sample(words, min(30, len(words)))) | set(re.findall(r"[A-Za-z_]\w*", code)[:30])
                                - set(keyword.kwlist))
            expected = {n: 1 for n in candidates if re.search(rf"\b{re.escape(n)}\b", code)}
            assert candidate_uses(stmt, candidates, module) == expected, (path, code[:200])


@pytest.mark.parametrize("source", [
    "class G:\n    def f(self):\n        for a in b:\n            x = 1\n            reward = PH\n            y(reward)\n",
    "def f():\n    if a:\n        pass\n    else:\n        reward = PH  # why\n",
])
def test_replace_node_equals_a_transform(source):
    module = cst.parse_module(source)
    target = next(n for n in _names(module) if n.value == "PH")

    class Swap(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return cst.Name("value") if original is target else updated

    assert fast.replace_node(module, target, cst.Name("value")).code == module.visit(Swap()).code


def _names(module: cst.Module) -> list[cst.Name]:
    out: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            out.append(node)

    fast.visit(module, V())
    return out


def test_module_bytes_equals_libcst_code_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's code generation without position bookkeeping writes what ``Module.bytes`` writes — on inputs
    and on the trees the rules built — and it is the fast path that runs here (a libcst it checked)."""
    from codemods import codegen
    from codemods.driver import migrate_bytes, select_rules

    built: list[cst.Module] = []
    fast = codegen.module_bytes

    def checked(module: cst.Module) -> bytes:
        built.append(module)
        out = fast(module)
        assert out == module.bytes
        return out

    monkeypatch.setattr(codegen, "module_bytes", checked)
    for path, data, module in _modules():
        assert fast(module) == module.bytes == data, path
        if b"osmosis" in data or b"strands" in data or b"agents" in data:
            migrate_bytes(data, select_rules(), filename=str(path))
    assert len(built) > 20 and codegen._fast_path_works()


def test_module_bytes_falls_back_to_libcst_when_its_internals_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    from codemods import codegen

    monkeypatch.setattr(codegen, "_fast_ok", None)
    monkeypatch.setattr(codegen, "_state_class", lambda: (_ for _ in ()).throw(ImportError("moved")))
    module = cst.parse_module("x = (1,  2)  # kept\n")
    assert codegen.module_bytes(module) == b"x = (1,  2)  # kept\n" and codegen._fast_ok is False
