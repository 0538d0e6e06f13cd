"""Driver safety: encodings and line endings kept, parse failures and crashing rules isolated, atomic writes,
prefilter, recursion limits."""

from __future__ import annotations

import os
import sys

import libcst as cst
import pytest

from codemods import driver
from codemods.base import Rule, RuleContext
from codemods.driver import (
    STATUS_CHANGED,
    STATUS_FAILED,
    STATUS_OPTED_OUT,
    STATUS_PREFILTERED,
    STATUS_UNCHANGED,
    MigrationError,
    migrate_file,
    migrate_source,
    run_many,
    select_rules,
    write_atomic,
)

STRANDS = (
    "from strands import Agent\n\n\ndef ask(q):\n    agent = Agent(system_prompt='hi')\n    return agent(q)\n"
)


def test_crlf_and_latin1_are_kept(tmp_path):
    src = ("# -*- coding: latin-1 -*-\n" + "GREETING = 'caf\u00e9'\n" + STRANDS).replace("\n", "\r\n")
    path = tmp_path / "agent.py"
    path.write_bytes(src.encode("latin-1"))
    res = migrate_file(path)
    assert res.status == STATUS_CHANGED
    new = res.new_bytes
    assert b"caf\xe9" in new  # still latin-1
    assert new.count(b"\n") == new.count(b"\r\n")  # every line ending is CRLF, new lines included
    assert b"OsmosisStrandsAgent" in new


def test_bom_is_kept(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"\xef\xbb\xbf" + STRANDS.encode())
    res = migrate_file(path)
    assert res.new_bytes.startswith(b"\xef\xbb\xbf")


def test_prefilter_skips_files_without_trigger_words(tmp_path, monkeypatch):
    path = tmp_path / "plain.py"
    path.write_text("def f(:\n")  # would not even parse: never parsed
    calls = []
    monkeypatch.setattr(driver, "migrate_bytes", lambda *a, **k: calls.append(a))
    assert migrate_file(path).status == STATUS_PREFILTERED
    assert calls == []


def test_opt_out_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("# osmosis-migrate: skip-file\n" + STRANDS)
    assert migrate_file(path).status == STATUS_OPTED_OUT


def test_parse_error_fails_the_file_only(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import strands\ndef f(:\n")
    good = tmp_path / "good.py"
    good.write_text(STRANDS)
    results = {os.path.basename(r.path): r for r in run_many([str(bad), str(good)], select_rules())}
    assert results["bad.py"].status == STATUS_FAILED and "does not parse" in results["bad.py"].error
    assert results["good.py"].status == STATUS_CHANGED


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "(" * 3000 + "1" + ")" * 3000,  # crashes libcst's native parser: must never reach it
        "x = " + " + ".join(["a"] * 1500),  # libcst parses it; walking it exceeds the recursion limit
    ],
    ids=["deep-brackets", "long-chain"],
)
def test_too_deep_files_fail_and_the_run_goes_on(tmp_path, body):
    deep = tmp_path / "deep.py"
    deep.write_text("import strands\n" + body + "\n")
    ok = tmp_path / "ok.py"
    ok.write_text(STRANDS)
    results = {os.path.basename(r.path): r for r in run_many([str(deep), str(ok)], select_rules())}
    err = results["deep.py"].error
    assert results["deep.py"].status == STATUS_FAILED and ("does not parse" in err or "recursion" in err)
    assert results["ok.py"].status == STATUS_CHANGED


def test_codegen_recursion_error_is_a_failed_file(tmp_path, monkeypatch):
    from codemods import codegen

    path = tmp_path / "a.py"
    path.write_text(STRANDS)

    def boom(module):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(codegen, "module_bytes", boom)
    res = migrate_file(path)
    assert res.status == STATUS_FAILED and "recursion" in res.error


def test_a_chain_too_long_to_generate_is_a_failed_file(tmp_path):
    """Real recursion in code generation (libcst parses a 3,000-term chain, then recurses through it)."""
    path = tmp_path / "long_chain.py"
    path.write_text("import strands\nx = " + " + ".join(["a"] * 3000) + "\n")
    res = run_many([str(path)], select_rules())[0]
    assert res.status == STATUS_FAILED and "recursion" in res.error


class _Crashing(Rule):
    code = "OM900"
    name = "crashing"
    summary = "always crashes"
    trigger_words = ("strands",)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        raise KeyError("boom")


class _Breaking(Rule):
    code = "OM910"
    name = "breaking"
    summary = "produces code that does not parse"
    trigger_words = ("strands",)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        bad = cst.SimpleStatementLine([cst.Expr(cst.Name("def"))])  # `def` is not a valid expression
        return module.with_changes(body=[*module.body, bad])


def test_crashing_rule_fails_the_file_with_its_name(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(STRANDS)
    res = migrate_file(path, [_Crashing])
    assert res.status == STATUS_FAILED and res.error_rule == "crashing" and "KeyError" in res.error


def test_output_that_would_not_parse_is_never_written(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(STRANDS)
    res = migrate_file(path, [_Breaking])
    assert res.status == STATUS_FAILED and "would not parse" in res.error
    with pytest.raises(MigrationError):
        migrate_source(STRANDS, rules=[_Breaking])


def test_unchanged_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import strands\nprint(strands)\n")
    assert migrate_file(path).status == STATUS_UNCHANGED


def test_write_atomic_keeps_mode_and_leaves_no_temp(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    os.chmod(path, 0o640)
    write_atomic(path, b"x = 2\n")
    assert path.read_bytes() == b"x = 2\n"
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o640)
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_process_pool_gives_the_same_results(tmp_path):
    paths = []
    for i in range(12):
        p = tmp_path / f"f{i}.py"
        p.write_text(STRANDS if i % 2 else "x = 1\n")
        paths.append(str(p))
    serial = run_many(paths, select_rules(), jobs=1)
    pooled = run_many(paths, select_rules(), jobs=2)
    assert [(r.path, r.status, r.new_bytes) for r in serial] == [(r.path, r.status, r.new_bytes) for r in pooled]


def test_selectors():
    names = lambda rs: [r.name for r in rs]  # noqa: E731
    assert "strands-agent" in names(select_rules(["OM1"]))
    assert names(select_rules(["OM105"])) == ["strands-agent"]
    assert "openai-agent" not in names(select_rules(None, ["openai-agent"]))
    with pytest.raises(driver.UsageError):
        select_rules(["OM999"])


def test_recursion_limit_is_restored():
    before = sys.getrecursionlimit()
    run_many([], select_rules())
    assert sys.getrecursionlimit() == before


def test_migrate_source_with_a_latin1_cookie_round_trips_text():
    text = "# -*- coding: latin-1 -*-\nNAME = 'caf\u00e9'\n" + STRANDS
    result = migrate_source(text)
    assert result.changed and "NAME = 'caf\u00e9'" in result.new_text
