"""``[tool.osmosis-migrate]`` in pyproject.toml (issue 20 item 6: there was no configuration), ruff's conventions:
the closest pyproject.toml with the table above the first PATH; command-line flags override it key by key."""

from __future__ import annotations

import json

import pytest

from codemods.cli import EXIT_CHANGES, EXIT_OK, EXIT_USAGE, main
from codemods.config import MigrateConfig, load_config
from tests.codemods._fixtures import FIXTURES

STRANDS = (FIXTURES / "strands_agent" / "simple.py").read_text()
OPENAI = (FIXTURES / "openai_agent" / "run_sync_script.py").read_text()
LEGACY = (FIXTURES / "legacy_loop" / "sdk_docs_calculator.py").read_text()


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "src" / "gen").mkdir(parents=True)
    (tmp_path / "src" / "strands_agent.py").write_text(STRANDS)
    (tmp_path / "src" / "openai_agent.py").write_text(OPENAI)
    (tmp_path / "src" / "gen" / "generated_agent.py").write_text(STRANDS)
    (tmp_path / "src" / "loop.py").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _report(capsys, *argv):
    code = main(["--check", "--output-format", "json", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def _changed(doc):
    return sorted(f["path"].replace("\\", "/").split("src/")[-1] for f in doc["files"] if f["status"] == "changed")


def test_select_ignore_exclude_target_strategy_from_the_config(tree, capsys):
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.osmosis-migrate]\nselect = ["OM1", "legacy-loop"]\nignore = "OM3"\n'
        'exclude = ["src/gen"]\ntarget = "0.2"\nstrategy = "wrap"\n'
    )
    code, doc, _ = _report(capsys, "src")
    assert code == EXIT_CHANGES
    assert [r["name"] for r in doc["rules"]] == ["strands-agent"]  # select minus ignore
    assert _changed(doc) == ["strands_agent.py"]  # src/gen excluded (anchored at the pyproject's directory)
    assert doc["target"]["version"] == "0.2" and "[tool.osmosis-migrate] target" in doc["target"]["source"]
    assert doc["strategy"] == "wrap"


def test_command_line_flags_override_the_config(tree, capsys):
    (tree / "pyproject.toml").write_text(
        '[tool.osmosis-migrate]\nselect = ["OM1"]\nexclude = ["src/gen"]\nextend-exclude = ["openai_*"]\n'
        'target = "0.2"\nstrategy = "wrap"\n'
    )
    code, doc, _ = _report(capsys, "--select", "OM1,OM2,OM3", "--exclude", "loop.py", "--target", "0.3",
                           "--strategy", "rewrite", "src")
    assert [r["name"] for r in doc["rules"]] == ["legacy-loop", "strands-agent", "openai-agent"]
    # --exclude replaced the config's exclude (src/gen is back) but extend-exclude still applies (openai_*)
    assert _changed(doc) == ["gen/generated_agent.py", "strands_agent.py"]
    assert doc["target"] == {**doc["target"], "version": "0.3", "source": "--target"}
    assert doc["strategy"] == "rewrite"


def test_the_closest_pyproject_with_the_table_is_used(tree, capsys):
    (tree / "pyproject.toml").write_text('[tool.osmosis-migrate]\nselect = ["OM2"]\n')
    (tree / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')  # no table: looked past
    assert load_config(["src/loop.py"]).select == ("OM2",)
    (tree / "src" / "pyproject.toml").write_text('[tool.osmosis-migrate]\nselect = ["OM1"]\n')
    assert load_config(["src/loop.py"]).select == ("OM1",)
    assert load_config([str(tree.parent)]) == MigrateConfig()


@pytest.mark.parametrize("table, message", [
    ('selct = ["OM1"]', "unknown key(s) in [tool.osmosis-migrate]: selct"),
    ("target = 0.4", "target must be one of auto, 0.2, 0.3"),
    ('strategy = "fast"', "strategy must be one of auto, rewrite, wrap"),
    ("select = 1", "select must be a list of strings"),
    ('line-length = "wide"', "line-length must be a positive integer"),
    ('select = ["OM9"]', "unknown rule selector 'OM9'"),
])
def test_a_bad_config_is_a_usage_error_naming_the_file_and_key(tree, capsys, table, message):
    (tree / "pyproject.toml").write_text(f"[tool.osmosis-migrate]\n{table}\n")
    code = main(["--check", "src"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and message in err
    if "selector" not in message:
        assert "pyproject.toml" in err


def test_a_pyproject_that_is_not_toml_is_a_usage_error(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.osmosis-migrate\n")
    assert main(["--check", "src"]) == EXIT_USAGE and "not valid TOML" in capsys.readouterr().err


def test_target_written_as_a_toml_number_and_auto(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.osmosis-migrate]\ntarget = 0.2\n")
    assert _report(capsys, "src/loop.py")[1]["target"]["version"] == "0.2"
    (tree / "pyproject.toml").write_text('[project]\ndependencies = ["osmosis-ai==0.2.31"]\n'
                                         '[tool.osmosis-migrate]\ntarget = "auto"\n')
    doc = _report(capsys, "src/loop.py")[1]
    assert doc["target"]["version"] == "0.2" and doc["target"]["requirement"]["text"] == "osmosis-ai==0.2.31"


def test_todo_honours_the_config_excludes(tree, capsys):
    main(["--select", "OM1", "src"])
    capsys.readouterr()
    assert main(["todo", "src"]) == EXIT_CHANGES
    assert "2 files" in capsys.readouterr().err  # strands_agent.py and gen/generated_agent.py
    (tree / "pyproject.toml").write_text('[tool.osmosis-migrate]\nexclude = ["gen"]\n')
    main(["todo", "src"])
    assert "in 1 file" in capsys.readouterr().err
    (tree / "pyproject.toml").write_text('[tool.osmosis-migrate]\nextend-exclude = ["src/*.py", "gen"]\n')
    assert main(["todo", "src"]) == EXIT_OK
