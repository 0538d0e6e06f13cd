"""docs/migrate.md's code tables are the registry (``codemods/codes.py``), and the rules emit codes only from it.

The registry is read, never copied: a code the lead adds to ``codes.py`` fails here until the docs table has it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from codemods.codes import REGISTRY
from codemods.rules import all_rules

ROOT = Path(__file__).resolve().parents[2]
MIGRATE_MD = ROOT / "docs" / "migrate.md"
CODE = re.compile(r"\bOM\d{3}\b")
CODES_HEADER = "| code | rule | kind | meaning | what to do |"
RULES_HEADER = "| code | name | does |"


def _table(header: str) -> list[list[str]]:
    """The rows (cells stripped) of the markdown table of docs/migrate.md whose header line is ``header``."""
    lines = MIGRATE_MD.read_text().splitlines()
    assert lines.count(header) == 1, f"docs/migrate.md must have exactly one table headed {header!r}"
    start = lines.index(header) + 2  # the header, then the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def _plain(text: str) -> str:
    """Table text as the registry writes it: code spans unquoted, whitespace collapsed."""
    return " ".join(text.replace("`", "").split())


def _code_rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for row in _table(CODES_HEADER):
        assert len(row) == 5, f"a code row has 5 cells: {row}"
        code = row[0]
        assert code not in rows, f"{code} is documented twice"
        rows[code] = row
    return rows


def test_every_registered_code_is_in_the_docs_table():
    missing = sorted(set(REGISTRY) - set(_code_rows()))
    assert not missing, f"codes registered in codemods/codes.py but missing from docs/migrate.md's table: {missing}"


def test_every_code_in_the_docs_table_is_registered():
    unknown = sorted(set(_code_rows()) - set(REGISTRY))
    assert not unknown, f"docs/migrate.md documents codes no rule can emit (not in codemods/codes.py): {unknown}"


def test_the_table_says_what_the_registry_says():
    """Rule, kind and the one-line meaning (the registry's ``title``) match; the rows are in code order."""
    rows = _code_rows()
    assert list(rows) == sorted(rows), "the code table is in code order"
    drift = []
    for code, (_, rule, kind, meaning, todo) in rows.items():
        entry = REGISTRY.get(code)
        if entry is None:
            continue
        if rule != f"`{entry.rule}`" and rule != entry.rule:
            drift.append(f"{code}: rule {rule!r}, registry {entry.rule!r}")
        if kind.lower() != entry.kind.lower():
            drift.append(f"{code}: kind {kind!r}, registry {entry.kind!r}")
        if _plain(meaning) != _plain(entry.title):
            drift.append(f"{code}: meaning {_plain(meaning)!r}, registry title {entry.title!r}")
        if entry.kind == "todo" and _plain(todo) in ("", "—", "-"):
            drift.append(f"{code}: a TODO row says what to do")
    assert not drift, "\n".join(drift)


def test_the_rules_table_is_the_rules():
    """The short table of rules: one row per rule class, its base code and name."""
    rules = {rule.code: rule.name for rule in all_rules()}
    documented = {row[0]: row[1].strip("`") for row in _table(RULES_HEADER)}
    assert documented == rules
    for code, name in rules.items():
        assert REGISTRY[code].rule == name, f"the rule {name} has the base code {code} of {REGISTRY[code].rule}"


def test_every_code_the_docs_mention_is_registered():
    """Prose too: a code named anywhere in the docs (docs/*.md, README, examples' READMEs) exists."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").rglob("*.md"))]
    unknown = []
    for doc in docs:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            unknown += [f"{doc.relative_to(ROOT)}:{n}: {c}" for c in CODE.findall(line) if c not in REGISTRY]
    assert not unknown, unknown


def _sources() -> list[Path]:
    return [p for p in sorted((ROOT / "codemods").rglob("*.py")) if p != ROOT / "codemods" / "codes.py"]


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of the module, its classes and functions."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _code_literals(path: Path) -> list[str]:
    """Where ``path`` writes a code (or a code family) as a value instead of taking it from the registry: a string
    that is a code or a family (``"OM103"``, ``"OM1"``), an f-string or a ``+`` that builds one (``f"OM{n}90"``)."""
    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    found: dict[int, str] = {}  # line → what (one finding per line)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if re.fullmatch(r"OM\d{1,3}", node.value.strip()):  # a bare "OM" is the selector of every rule
                found.setdefault(node.lineno, repr(node.value))
        elif isinstance(node, ast.JoinedStr):
            parts = node.values
            for part, after in zip(parts, parts[1:]):
                if isinstance(part, ast.Constant) and isinstance(after, ast.FormattedValue) \
                        and re.search(r"\bOM\d{0,2}$", str(part.value)):
                    found.setdefault(node.lineno, "an f-string building a code")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, str) \
                        and re.fullmatch(r"OM\d{0,2}", side.value):
                    found.setdefault(node.lineno, f"{side.value!r} + …")
    return [f"{line}: {what}" for line, what in sorted(found.items())]


def test_codes_come_from_the_registry():
    """Outside codemods/codes.py no module spells a code as a value: rules, the driver and --verify import the
    constants (``codes.STRANDS.wrap.code``), so a renamed code cannot leave a stale copy behind."""
    found = [f"{p.relative_to(ROOT)}:{where}" for p in _sources() for where in _code_literals(p)]
    assert not found, "codes written as literals instead of taken from codemods/codes.py:\n" + "\n".join(found)


def test_codes_named_in_the_codemods_sources_are_registered():
    """Docstrings, comments and messages that name a code name one that exists (OM193 was named, never emitted)."""
    unknown = []
    for path in _sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            unknown += [f"{path.relative_to(ROOT)}:{n}: {c}" for c in CODE.findall(line) if c not in REGISTRY]
    assert not unknown, unknown


def test_the_codes_the_rules_emitted_on_the_fixtures_are_registered():
    """What the rules really emitted on every fixture (the snapshots record each edit and TODO with its code)."""
    snapshots = sorted((ROOT / "tests" / "codemods" / "__snapshots__").glob("*.ambr"))
    assert snapshots
    emitted = {c for path in snapshots for c in CODE.findall(path.read_text())}
    assert emitted, "the snapshots record codes"
    assert not emitted - set(REGISTRY), sorted(emitted - set(REGISTRY))


def test_the_check_finds_a_code_literal(tmp_path):
    """The literal check is not vacuous: each way of spelling a code by hand is found."""
    sample = tmp_path / "rule.py"
    sample.write_text('"""Doc naming OM103 is fine."""\n'
                      'A = "OM103"\nB = f"OM{2}90"\nC = "OM" + str(1)\nD = "a message about OM103"\n')
    assert [w.split(":")[0] for w in _code_literals(sample)] == ["2", "3", "4"]


def test_the_rule_context_records_only_registered_codes_of_their_kind():
    """``ctx.edit`` / ``ctx.todo`` refuse a code the registry does not declare (a typo would ship an undocumented
    code) or one of the other kind (an edit code on a TODO would miscount both), naming the code."""
    import pytest

    from codemods import codes
    from codemods.base import RuleContext

    ctx = RuleContext()
    ctx.edit(codes.LEGACY_SERVING.code, 0, "an edit")
    ctx.todo(codes.LEGACY_APP_ARGS.code, 0, "a todo")
    assert [e.code for e in ctx.edits] == ["OM303"] and [t.code for t in ctx.todos] == ["OM391"]
    unregistered = "OM" + "193"  # a code the registry lacks (named once in old docs, never emitted)
    for record in (ctx.edit, ctx.todo):
        with pytest.raises(ValueError, match=unregistered):
            record(unregistered, 0, "a typo")
    with pytest.raises(ValueError, match="OM391"):
        ctx.edit(codes.LEGACY_APP_ARGS.code, 0, "a TODO code recorded as an edit")
    with pytest.raises(ValueError, match="OM303"):
        ctx.todo(codes.LEGACY_SERVING.code, 0, "an edit code recorded as a TODO")
    assert len(ctx.edits) == 1 and len(ctx.todos) == 1  # nothing refused was recorded
