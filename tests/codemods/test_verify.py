"""``osmosis-migrate --verify`` (codemods/verify.py): original vs migrated on sample prompts with the scripted policy.

The verdicts must be right both ways: migrations that keep behaviour are ``same``, a migrated text that behaves
differently (a tool dropped, a tool that computes wrong) is ``different`` with the case named, and what cannot be
run on a prompt is ``not-verified`` with the reason — never a crash.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from codemods.cli import main
from codemods.driver import migrate_source
from codemods.verify import DIFFERENT, NOT_VERIFIED, SAME, verify_migrations
from tests.codemods._fixtures import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "examples" / "modern" / "plain"
LEGACY = ROOT / "examples" / "legacy" / "calculator_agent.py"


def _item(path: Path, new_text: str | None = None):
    text = path.read_text()
    result = migrate_source(text)
    return (str(path), text, result.new_text if new_text is None else new_text, result.edits)


def test_migrations_that_keep_behaviour_verify_as_same():
    items = [_item(PLAIN / "strands_plain.py"), _item(PLAIN / "openai_agents_plain.py"), _item(LEGACY),
             _item(FIXTURES / "strands_agent" / "simple.py")]
    verdicts = verify_migrations(items)
    assert [v.status for v in verdicts] == [SAME] * 4, [v.describe() for v in verdicts]
    for v in verdicts:
        assert len(v.cases) == 3 and all(c.original.model_calls >= 2 for c in v.cases)
        assert [c.original.reward for c in v.cases] == [1.0, 1.0, 0.0]  # the wrong label scores 0 on both sides
    assert "same behaviour on 3 prompt(s) (solve)" in verdicts[0].describe()[0]


def test_a_behaviour_change_is_reported_with_the_case():
    path = PLAIN / "strands_plain.py"
    migrated = migrate_source(path.read_text()).new_text
    no_multiply = migrated.replace("tools=[add, multiply]", "tools=[add]")
    assert no_multiply != migrated
    (verdict,) = verify_migrations([_item(path, no_multiply)])
    assert verdict.status == DIFFERENT
    assert [c.same for c in verdict.cases] == [True, False, False]  # 2 + 3 needs no multiply tool
    text = "\n".join(verdict.describe())
    assert "solve on 'Compute (2 + 3) * 4'" in text and "3 model call(s)" in text and "2 model call(s)" in text


def test_a_wrong_tool_in_a_migrated_loop_changes_the_reward():
    text = LEGACY.read_text()
    migrated = migrate_source(text).new_text
    wrong = migrated.replace("    return a + b\n", "    return a + b + 1\n", 1)
    assert wrong != migrated
    (verdict,) = verify_migrations([_item(LEGACY, wrong)])
    assert verdict.status == DIFFERENT
    case = verdict.cases[0]  # 2 + 3
    assert (case.original.reward, case.migrated.reward) == (1.0, 0.0)
    assert case.original.answer == "The answer is 5." and case.migrated.answer == "The answer is 6."


def test_what_cannot_run_on_a_prompt_is_not_verified_with_the_reason():
    verdicts = verify_migrations([
        _item(FIXTURES / "openai_agent" / "litellm_model.py"),  # main(model, api_key, question)
        _item(FIXTURES / "strands_agent" / "sync_tools_script.py"),  # run_once(): the prompt is hard-coded
        _item(FIXTURES / "imports" / "mixed.py"),
    ])
    assert [v.status for v in verdicts] == [NOT_VERIFIED] * 3
    assert "`main` takes 3 required arguments" in verdicts[0].reason
    assert "`run_once` takes 0 required arguments" in verdicts[1].reason
    assert "imports only" in verdicts[2].reason


def test_cli_verify_writes_nothing_and_reports(tmp_path, capsys):
    for name in ("strands_plain.py", "openai_agents_plain.py"):
        shutil.copy(PLAIN / name, tmp_path / name)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(["--verify", "--no-progress", str(tmp_path)]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.suffix == ".py"} == before
    err = capsys.readouterr().err
    assert "osmosis-migrate --verify: 2 file(s) run: 2 same, 0 different, 0 not verified, 0 errored" in err
    assert "strands_plain.py: same behaviour on 3 prompt(s) (solve)" in err


def test_cli_verify_help_and_no_runtime_import_at_module_level():
    # codemods imports no runtime code: importing the CLI and the verifier loads neither osmosis_compat (beyond the
    # import shim that the installed .pth hook loads at start-up) nor a framework
    code = ("import sys, codemods.cli, codemods.verify; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('osmosis_compat', 'litellm', 'strands', 'agents') "
            "and m != 'osmosis_compat' and not m.startswith('osmosis_compat.shim')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    help_text = subprocess.run([sys.executable, "-m", "codemods.cli", "--help"], cwd=ROOT, capture_output=True,
                               text=True).stdout
    assert "--verify" in help_text and "a difference was found" in help_text
