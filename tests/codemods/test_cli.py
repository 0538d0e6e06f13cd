"""osmosis-migrate CLI: every flag and exit code (in-process `main(argv)`; subprocess where the process matters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.cli import EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from tests.codemods._fixtures import FIXTURES

REPO = Path(__file__).resolve().parents[2]
STRANDS = (FIXTURES / "strands_agent" / "simple.py").read_text()
OPENAI = (FIXTURES / "openai_agent" / "handoffs.py").read_text()


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "strands_agent.py").write_text(STRANDS)
    (tmp_path / "pkg" / "openai_agent.py").write_text(OPENAI)
    (tmp_path / "pkg" / "plain.py").write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    """``main(argv)`` in process; tests name the tree (``.``) explicitly, as users must (files are written in place)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_in_place_then_nothing_to_do(tree, capsys):
    code, _, err = run(capsys, "--no-progress", ".")
    assert code == EXIT_OK
    assert "3 files scanned, 1 skipped by prefilter, 2 changed" in err
    assert "strands-agent: 1 file(s) changed" in err and "openai-agent: 1 file(s) changed" in err
    assert "OsmosisStrandsAgent" in (tree / "pkg" / "strands_agent.py").read_text()
    code, _, err = run(capsys, ".")
    assert code == EXIT_OK and "0 changed, 2 unchanged" in err


def test_nothing_to_migrate_is_said(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, ".")
    assert code == EXIT_OK and "nothing to migrate" in err and "1 skipped by prefilter" in err


def test_diff_prints_and_writes_nothing(tree, capsys):
    code, out, err = run(capsys, "--diff", "pkg/strands_agent.py")
    assert code == EXIT_CHANGES
    assert out.startswith("--- a/pkg/strands_agent.py\n+++ b/pkg/strands_agent.py\n")
    assert "+class SolveWorkflow(AgentWorkflow):" in out
    assert (tree / "pkg" / "strands_agent.py").read_text() == STRANDS
    assert "would change" in err


def test_diff_of_a_latin1_file(tree, capsys):
    (tree / "l1.py").write_bytes(("# -*- coding: latin-1 -*-\nNAME = 'caf\u00e9'\n" + STRANDS).encode("latin-1"))
    code, out, _ = run(capsys, "--diff", "l1.py")
    assert code == EXIT_CHANGES
    assert " NAME = 'caf\u00e9'" in out  # context line decoded with the file's encoding


def test_check(tree, capsys):
    assert run(capsys, "--check", ".")[0] == EXIT_CHANGES
    assert (tree / "pkg" / "openai_agent.py").read_text() == OPENAI
    assert run(capsys, ".")[0] == EXIT_OK
    assert run(capsys, "--check", ".")[0] == EXIT_OK


def test_select_and_ignore(tree, capsys):
    code, _, err = run(capsys, "--check", "--select", "OM2", ".")
    assert code == EXIT_CHANGES and "1 would change" in err and "openai-agent" in err
    code, _, err = run(capsys, "--check", "--ignore", "openai-agent,OM1", ".")
    assert code == EXIT_OK
    code, _, err = run(capsys, "--select", "OM7", ".")
    assert code == EXIT_USAGE and "unknown rule selector 'OM7'" in err


def test_strategy_choices(tree, capsys):
    assert run(capsys, "--check", "--strategy", "wrap", ".")[0] == EXIT_CHANGES
    with pytest.raises(SystemExit) as exc:
        main(["--strategy", "bogus"])
    assert exc.value.code == EXIT_USAGE


def test_exclude_default_excludes_and_gitignore(tree, capsys):
    for d in (".venv/lib", "build", "node_modules/x", "generated"):
        (tree / d).mkdir(parents=True)
        (tree / d / "agent.py").write_text(STRANDS)
    (tree / ".gitignore").write_text("generated/\n")
    code, _, err = run(capsys, "--check", "--exclude", "pkg/openai_*", ".")
    assert "3 files scanned" not in err and "2 files scanned" in err  # strands_agent.py + plain.py
    code, _, err = run(capsys, "--check", "--no-default-excludes", "--no-gitignore", ".")
    assert "7 files scanned" in err


def test_jobs(tree, capsys):
    for i in range(20):
        (tree / f"a{i}.py").write_text(STRANDS if i % 2 else "x = 1\n")
    code, _, err_pool = run(capsys, "--check", "-j", "2", ".")
    code1, _, err_one = run(capsys, "--check", "--jobs", "1", ".")
    assert code == code1 == EXIT_CHANGES
    assert err_pool.splitlines()[0] == err_one.splitlines()[0]
    assert run(capsys, "-j", "0", ".")[0] == EXIT_USAGE


def test_failed_file_exit_3_and_listed(tree, capsys):
    (tree / "broken.py").write_text("import strands\ndef f(:\n")
    code, _, err = run(capsys, ".")
    assert code == EXIT_FAILED
    assert "1 failed" in err and "broken.py: does not parse" in err
    assert "OsmosisStrandsAgent" in (tree / "pkg" / "strands_agent.py").read_text()  # the rest was migrated


def test_missing_path_is_a_usage_error(tree, capsys):
    code, _, err = run(capsys, "nope/")
    assert code == EXIT_USAGE and "no such file or directory" in err


def test_report_json(tree, capsys):
    (tree / "broken.py").write_text("import strands\ndef f(:\n")
    code, _, _ = run(capsys, "--check", "--report", "out.json", ".")
    assert code == EXIT_FAILED
    report = json.loads((tree / "out.json").read_text())
    assert report["schema"] == "osmosis-migrate-report" and report["version"] == 2
    assert report["mode"] == "check" and report["strategy"] == "auto"
    assert report["summary"]["scanned"] == 4 and report["summary"]["failed"] == 1
    files = {Path(f["path"]).name: f for f in report["files"]}
    assert "plain.py" not in files  # prefiltered files are only counted
    s = files["strands_agent.py"]
    assert s["status"] == "changed" and s["error"] is None
    assert {"code", "line", "message"} <= set(s["edits"][0]) and s["edits"][0]["code"].startswith("OM1")
    assert s["todos"][0]["code"] == "OM195" and s["todos"][0]["line"] > 0  # the plain program had no grader
    assert files["broken.py"]["status"] == "failed" and "does not parse" in files["broken.py"]["error"]


def test_rules_command(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == EXIT_OK
    assert "OM100  strands-agent" in out and "OM200  openai-agent" in out and "OM400  imports" in out
    assert run(capsys, "rules", "x")[0] == EXIT_USAGE


def test_todo_command(tree, capsys):
    code, out, err = run(capsys, "todo")
    assert code == EXIT_OK and "0 TODO markers open in 0 files" in err
    run(capsys, ".")
    code, out, err = run(capsys, "todo", "pkg")
    assert code == EXIT_CHANGES
    assert "pkg/strands_agent.py:" in out and " OM195 no Grader in this module" in out
    assert "2 TODO markers open in 2 files" in err  # a grader TODO per migrated module


def test_opt_out_comment(tree, capsys):
    (tree / "pkg" / "strands_agent.py").write_text("# osmosis-migrate: skip-file\n" + STRANDS)
    code, _, err = run(capsys, "--check", "pkg/strands_agent.py")
    assert code == EXIT_OK and "1 opted out" in err


# ---------------------------------------------------------------------------------------------- git


def _git(cwd, *args):
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True,
    )


@pytest.fixture
def repo(tree):
    _git(tree, "init", "-q")
    _git(tree, "add", "pkg")
    _git(tree, "commit", "-q", "-m", "init")
    return tree


def test_refuses_dirty_files_without_a_tty(repo, capsys):
    (repo / "pkg" / "strands_agent.py").write_text(STRANDS + "\n# local edit\n")
    code, _, err = run(capsys, ".")
    assert code == EXIT_USAGE
    assert "uncommitted changes" in err and "pkg/strands_agent.py" in err and "nothing written" in err
    assert "OsmosisAgent" not in (repo / "pkg" / "openai_agent.py").read_text()  # nothing at all is written
    code, _, _ = run(capsys, "--allow-dirty", ".")
    assert code == EXIT_OK and "OsmosisStrandsAgent" in (repo / "pkg" / "strands_agent.py").read_text()


def test_untracked_file_counts_as_dirty_clean_files_do_not(repo, capsys):
    (repo / "new_agent.py").write_text(STRANDS)
    code, _, err = run(capsys, "new_agent.py")
    assert code == EXIT_USAGE and "new_agent.py" in err
    assert run(capsys, "pkg")[0] == EXIT_OK  # committed files: written


# ------------------------------------------------------------------------------------------ process


def test_console_script_help_is_fast_and_lists_exit_codes():
    code = (
        "import sys, time; t = time.perf_counter()\n"
        "from codemods.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'libcst' not in sys.modules, 'libcst imported for --help'\n"
        "print(time.perf_counter() - t, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "exit codes:" in proc.stdout and "3  finished, but some file failed" in proc.stdout
    assert float(proc.stderr.strip().splitlines()[-1]) < 0.5


def test_no_progress_bar_without_a_terminal(tree):
    proc = subprocess.run(
        [sys.executable, "-m", "codemods.cli", "--check", "."], capture_output=True, text=True, cwd=tree,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == EXIT_CHANGES
    assert "\r[" not in proc.stderr and "files scanned" in proc.stderr


def test_libcst_tool_runs_a_rule(tmp_path):
    target = tmp_path / "agent.py"
    target.write_text(STRANDS)
    proc = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "commands.StrandsAgentCommand", str(target)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = target.read_text()
    assert "class SolveWorkflow(AgentWorkflow):" in out and "OsmosisStrandsAgent(" in out


def test_no_path_prints_usage_and_exits_2(tree, capsys):
    # issue 10 item 6: it writes in place, so the tree is never implied (before: migrated `.` silently)
    code, out, err = run(capsys)
    assert code == EXIT_USAGE and "usage: osmosis-migrate" in err and "osmosis-migrate ." in err
    assert (tree / "pkg" / "strands_agent.py").read_text() == STRANDS  # nothing written
    code, out, err = run(capsys, "--check")
    assert code == EXIT_USAGE


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    from importlib.metadata import version

    assert capsys.readouterr().out.strip() == f"osmosis-migrate {version('osmosis-compat')}"


def test_target_is_read_from_the_declared_requirement_and_reported(tree, capsys):
    legacy = (FIXTURES / "legacy_loop" / "sdk_docs_calculator.py").read_text()
    (tree / "pkg" / "loop.py").write_text(legacy)
    code, _, err = run(capsys, "--diff", "pkg/loop.py")
    assert "target: osmosis-ai 0.3 (default: no osmosis-ai requirement declared)" in err
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["osmosis-ai[server]>=0.3.2"]\n')
    code, out, err = run(capsys, "--diff", "--report", "r.json", "pkg/loop.py")
    assert "target: osmosis-ai 0.3 (pyproject.toml:3 ([project] dependencies): osmosis-ai[server]>=0.3.2" in err
    assert "+        ctx.set_reward(reward)" in out
    assert json.loads((tree / "r.json").read_text())["target"]["version"] == "0.3"
    code, out, err = run(capsys, "--diff", "--target", "0.2", "pkg/loop.py")
    assert "target: osmosis-ai 0.2 (--target)" in err and "ctx.set_sample_reward" in out


def test_summary_lines_are_those_of_the_written_file(tree, capsys):
    # before: edit/TODO lines were the input's, so they pointed at the wrong place once imports/classes moved
    text = (FIXTURES / "legacy_loop" / "init_with_args.py").read_text()
    text = "\n" * 5 + text.replace("class PromptedLoop", "import os\n\n\nclass PromptedLoop")
    (tree / "pkg" / "loop.py").write_text(text)
    (tree / "pkg" / "loop2.py").write_text((FIXTURES / "legacy_loop" / "sdk_docs_calculator.py").read_text())
    code, _, err = run(capsys, "--allow-dirty", "--report", "r.json", "pkg/loop.py", "pkg/loop2.py")
    written = (tree / "pkg" / "loop.py").read_text().splitlines()
    report = {f["path"]: f for f in json.loads((tree / "r.json").read_text())["files"]}
    [todo] = report["pkg/loop.py"]["todos"]
    assert written[todo["line"] - 1].startswith("# TODO(osmosis-migrate OM390)")
    assert f"pkg/loop.py:{todo['line']}: OM390" in err
    written2 = (tree / "pkg" / "loop2.py").read_text().splitlines()
    for edit in report["pkg/loop2.py"]["edits"]:
        if edit["code"] == "OM301":
            # the start of the code that replaced the class (generated helpers, then the config class)
            block = written2[edit["line"] - 1: edit["line"] + 80]
            assert block[0].startswith(("def last_assistant_text", "class CalculatorAgentConfig"))
            assert "class CalculatorAgentConfig(AgentWorkflowConfig):" in block
        if edit["code"] == "OM303":
            assert "create_rollout_server" in written2[edit["line"] - 1] or "LocalBackend" in written2[edit["line"] - 1]


# ------------------------------------------------------------------------------- counts and output formats (issue 20)


def _listed(text: str) -> list[str]:
    """The ``path:line: CODE reason`` lines of a summary or of ``todo`` (paths normalised)."""
    return sorted(l.strip().replace("./", "") for l in text.splitlines() if l.strip().startswith(("pkg/", "./pkg/")))


def test_counts_agree_between_a_rerun_its_report_and_todo(tree, capsys):
    # before: the re-run said "3 TODOs left" (what the rules reported again) while `todo` listed 4 markers
    code, _, err = run(capsys, ".")
    assert "2 TODO markers open (2 added by this run)" in err.splitlines()[0]
    code, _, err = run(capsys, "--report", "r.json", ".")
    assert err.splitlines()[0].endswith("; 2 TODO markers open (0 added by this run)")
    report = json.loads((tree / "r.json").read_text())
    assert report["summary"]["todos"] == 2 and report["summary"]["todos_added"] == 0
    in_report = sorted(f"{f['path']}:{t['line']}: {t['code']} {t['reason']}".replace("./", "")
                       for f in report["files"] for t in f["todos"])
    code, out, todo_err = run(capsys, "todo", ".")
    assert "2 TODO markers open in 2 files" in todo_err
    assert _listed(out) == _listed(err) == in_report  # the same markers, lines and reasons everywhere
    assert all(not t["new"] for f in report["files"] for t in f["todos"])


def test_a_refusal_says_would_change_then_nothing_written(repo, capsys):
    # before: "1 changed" in the summary, then "nothing written"
    (repo / "pkg" / "strands_agent.py").write_text(STRANDS + "\n# local edit\n")
    code, _, err = run(capsys, ".")
    head = err.splitlines()
    assert code == EXIT_USAGE
    summary = next(l for l in head if l.startswith("osmosis-migrate: 3 files scanned"))
    assert "2 would change" in summary and " changed" not in summary.replace("would change", "")
    assert head[-1] == ("osmosis-migrate: nothing written: 1 of the 2 file(s) that would change has uncommitted "
                        "changes (commit or stash them, or pass --allow-dirty)")


def test_output_format_github(tree, capsys):
    (tree / "broken.py").write_text("import strands\ndef f(:\n")
    code, out, err = run(capsys, "--check", "--output-format", "github", ".")
    assert code == EXIT_FAILED and "files scanned" in err  # the summary stays on stderr
    lines = out.splitlines()
    assert all(l.startswith(("::warning ", "::error ")) for l in lines)
    assert "::error file=broken.py,title=osmosis-migrate failed::does not parse: invalid syntax (line 2)" in lines
    # nothing was written: a marker that would be added points at the input line it would be added above
    solve = STRANDS.splitlines().index('def solve(question: str) -> str:') + 1
    assert any(l.startswith(f"::warning file=pkg/strands_agent.py,line={solve},") and ",title=OM195::no Grader" in l
               for l in lines), lines
    assert any(l.startswith("::error file=pkg/strands_agent.py,line=") and "would change: 8 edit(s)" in l for l in lines)
    run(capsys, ".")
    code, out, _ = run(capsys, "--output-format", "github", ".")
    written = (tree / "pkg" / "strands_agent.py").read_text().splitlines()
    [warning] = [l for l in out.splitlines() if "OM195" in l]
    line = int(warning.split(",line=")[1].split(",")[0])
    end = int(warning.split(",endLine=")[1].split(",")[0])
    assert written[line - 1].startswith("# TODO(osmosis-migrate OM195)") and written[end - 1].startswith("#   ")
    assert written[end].startswith("class ")


def test_github_annotations_escape_their_values():
    from codemods.output import annotation

    assert annotation("warning", "50% done\nnext", file="a,b:c.py", line=3, title="OM1") == \
        "::warning file=a%2Cb%3Ac.py,line=3,title=OM1::50%25 done%0Anext"


def test_output_format_json_is_the_report_on_stdout(tree, capsys):
    code, out, err = run(capsys, "--diff", "--output-format", "json", "--report", "r.json", ".")
    assert code == EXIT_CHANGES and err == ""
    doc = json.loads(out)
    assert doc == json.loads((tree / "r.json").read_text())
    assert doc["schema"] == "osmosis-migrate-report" and doc["version"] == 2 and doc["mode"] == "diff"
    by_name = {Path(f["path"]).name: f for f in doc["files"]}
    assert by_name["strands_agent.py"]["diff"].startswith("--- a/")  # --diff: the diff is in the document
    assert doc["summary"]["todos"] == sum(len(f["todos"]) for f in doc["files"]) == 2


def test_pre_commit_hooks_run_as_pre_commit_runs_them(tree):
    import shlex

    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"osmosis-migrate", "osmosis-migrate-todo"}
    for h in hooks.values():  # pre-commit's manifest: required keys, and a python hook on python files
        assert {"id", "name", "entry", "language"} <= set(h) and h["language"] == "python" and h["types"] == ["python"]
    check, todo = hooks["osmosis-migrate"], hooks["osmosis-migrate-todo"]
    assert "--check" in check["entry"] and check["pass_filenames"] is False
    assert todo["entry"].split()[1] == "todo" and todo.get("pass_filenames", True)
    exe = str(Path(sys.executable).with_name("osmosis-migrate"))

    def hook(h, files=()):
        argv = [exe, *shlex.split(h["entry"])[1:], *h.get("args", []), *(files if h.get("pass_filenames", True) else ())]
        return subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)

    staged = ["pkg/strands_agent.py", "pkg/plain.py"]
    assert hook(check).returncode == EXIT_CHANGES
    assert hook(todo, staged).returncode == EXIT_OK
    assert main(["."]) == EXIT_OK
    assert hook(check).returncode == EXIT_OK
    proc = hook(todo, staged)
    assert proc.returncode == EXIT_CHANGES and "pkg/strands_agent.py:" in proc.stdout and " OM195 " in proc.stdout
