"""The target read from the tree's declared osmosis-ai requirement, read as what it is (issue 18 item 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codemods.cli import main
from codemods.requirements import parse_requirement
from codemods.targets import WHY_02, WHY_03, WHY_LEGACY, detect_target, target_of_spec
from tests.codemods._fixtures import FIXTURES

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("spec, target", [
    # the 0.2 workflow era (0.2.18–0.2.31), and nothing later
    ("==0.2.31", "0.2"), (">=0.2.20,<0.3", "0.2"), ("~=0.2.25", "0.2"), ("<0.3", "0.2"), ("<=0.2.31", "0.2"),
    ("==0.2.*", "0.2"), ("^0.2.20", "0.2"), ("^0.2", "0.2"), ("~0.2.20", "0.2"), (">=0.2.7,<0.3", "0.2"),
    # a legacy-era pin (≤ 0.2.17) says nothing about the target: today's 0.3
    ("==0.2.12", "0.3"), (">=0.2.7,<0.2.18", "0.3"), ("~=0.2.10,<0.2.18", "0.3"),
    # allows 0.3: what pip installs
    (">=0.3", "0.3"), ("==0.3.8", "0.3"), ("~=0.3.2", "0.3"), ("^0.3", "0.3"), ("", "0.3"), ("*", "0.3"),
    (">=0.2.20", "0.3"), (">=0.2.7", "0.3"), ("^0.2 || ^0.3", "0.3"),
])
def test_target_of_spec(spec, target):
    assert target_of_spec(spec)[0] == target


def test_why_is_said():
    assert target_of_spec("==0.2.31")[1] == WHY_02
    assert target_of_spec("==0.2.12")[1] == WHY_LEGACY
    assert target_of_spec(">=0.3")[1] == WHY_03


def test_pep508_parts():
    assert parse_requirement('osmosis_AI[Server, strands] >=0.3.2 ; python_version >= "3.10"') == (
        "osmosis-ai", ("server", "strands"), ">=0.3.2", 'python_version >= "3.10"')
    assert parse_requirement("osmosis-ai (>=0.2.20,<0.3)")[2] == ">=0.2.20,<0.3"
    assert parse_requirement("osmosis-ai @ git+https://example.invalid/osmosis.git")[2] == ""
    assert parse_requirement("osmosis-ai-tools>=1")[0] == "osmosis-ai-tools"  # another project


def test_console_scripts_named_osmosis_ai_are_not_a_requirement(tmp_path):
    # before: a regex read `osmosis-ai = "…"` of [project.scripts] as the requirement, and the target was 0.2
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["httpx"]\n\n[project.scripts]\nosmosis-ai = "x.cli:main"\n'
    )
    choice = detect_target([str(tmp_path)])
    assert choice.target == "0.3" and choice.requirement is None and choice.source is None


def test_this_repository_declares_no_osmosis_ai_requirement():
    assert detect_target([str(REPO / "codemods")]).requirement is None


@pytest.mark.parametrize("files, target, where", [
    ({"pyproject.toml": '[project]\nname = "x"\ndependencies = [\n  "httpx",\n  "osmosis-ai[server]>=0.2.20,<0.3",\n]\n'},
     "0.2", "[project] dependencies"),
    ({"pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\nrl = ["osmosis-ai==0.2.31"]\n'},
     "0.2", "[project.optional-dependencies] rl"),
    ({"pyproject.toml": '[dependency-groups]\ntrain = ["osmosis-ai~=0.2.25"]\n'}, "0.2", "[dependency-groups] train"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\nosmosis-ai = "^0.2.20"\n'},
     "0.2", "[tool.poetry.dependencies]"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\nosmosis-ai = { version = "0.2.31", extras = ["server"] }\n'},
     "0.2", "[tool.poetry.dependencies]"),
    ({"pyproject.toml": '[tool.poetry.group.rl.dependencies]\nosmosis-ai = "==0.2.12"\n'},
     "0.3", "[tool.poetry.group.rl.dependencies]"),
    ({"pyproject.toml": '[tool.hatch.envs.train]\ndependencies = ["osmosis-ai<0.3"]\n'}, "0.2", "[tool.hatch.envs.train] dependencies"),
    ({"setup.cfg": "[options]\ninstall_requires =\n    requests\n    osmosis-ai==0.2.31\n"}, "0.2", "[options] install_requires"),
    ({"setup.cfg": "[options.extras_require]\nrl =\n    osmosis-ai>=0.3\n"}, "0.3", "[options.extras_require] rl"),
    ({"setup.py": "from setuptools import setup\nREQS = ['osmosis-ai==0.2.31']\nsetup(name='x', install_requires=REQS)\n"},
     "0.2", "setup(install_requires=…)"),
])
def test_dependency_tables(tmp_path, files, target, where):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    choice = detect_target([str(tmp_path)])
    assert choice.target == target and choice.requirement.where == where, choice


def test_requirements_files_comments_markers_includes_and_constraints(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        "# osmosis-ai==0.3.8 (a comment, not a requirement)\n"
        "-r requirements/base.txt\n"
        "-c constraints.txt\n"
    )
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text(
        "httpx>=0.27 \\\n    --hash=sha256:abc\n"
        'osmosis-ai[strands]>=0.2.18 ; python_version >= "3.10"  # the rollout SDK\n'
    )
    (tmp_path / "constraints.txt").write_text("osmosis-ai<0.3\n")
    choice = detect_target([str(tmp_path)])
    req = choice.requirement
    assert req.file.endswith(os.path.join("requirements", "base.txt")) and req.line == 3
    assert req.extras == ("strands",) and req.marker == 'python_version >= "3.10"'
    assert req.effective_spec == ">=0.2.18,<0.3" and choice.target == "0.2"  # the constraint narrows it
    assert "constraint" in choice.describe() and "0.2 workflow era" in choice.describe()


def test_the_closest_declaration_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["osmosis-ai==0.2.31"]\n')
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "requirements.txt").write_text("osmosis-ai>=0.3.8\n")
    assert detect_target([str(tmp_path / "svc")]).target == "0.3"
    assert detect_target([str(tmp_path / "other.py")]).target == "0.2"


def test_the_summary_and_report_say_the_target_its_source_and_the_requirement_the_output_needs(tmp_path, monkeypatch,
                                                                                                 capsys):
    (tmp_path / "requirements.txt").write_text("osmosis-ai==0.2.12\n")  # legacy era: the target stays 0.3
    (tmp_path / "agent.py").write_text((FIXTURES / "strands_agent" / "simple.py").read_text())
    (tmp_path / "loop.py").write_text((FIXTURES / "legacy_loop" / "sdk_docs_calculator.py").read_text())
    monkeypatch.chdir(tmp_path)
    code = main(["--check", "--report", "r.json", "."])
    err = capsys.readouterr().err
    assert code == 1
    assert "target: osmosis-ai 0.3 (requirements.txt:1: osmosis-ai==0.2.12 — a legacy-era requirement" in err
    assert ("requirement: the migrated files need osmosis-ai[server,strands]>=0.3.8 "
            "(not edited; declared: osmosis-ai==0.2.12)") in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["target"]["version"] == "0.3" and report["target"]["requirement"]["line"] == 1
    assert report["target"]["why"] == WHY_LEGACY
    requires = report["requires"]
    assert requires["requirement"] == "osmosis-ai[server,strands]>=0.3.8"
    assert sorted(requires["extras"]) == ["server", "strands"] and requires["declared"] == "osmosis-ai==0.2.12"
    assert (tmp_path / "requirements.txt").read_text() == "osmosis-ai==0.2.12\n"  # never edited


def test_openai_agents_output_needs_its_extra_and_0_2_needs_server(tmp_path, monkeypatch, capsys):
    (tmp_path / "agent.py").write_text((FIXTURES / "openai_agent" / "run_sync_script.py").read_text())
    monkeypatch.chdir(tmp_path)
    main(["--check", "--output-format", "json", "."])
    doc = json.loads(capsys.readouterr().out)
    assert "openai-agents" in doc["requires"]["extras"] and doc["requires"]["requirement"].endswith(">=0.3.8")
    main(["--check", "--target", "0.2", "--output-format", "json", "."])
    doc = json.loads(capsys.readouterr().out)
    assert doc["requires"]["requirement"] == "osmosis-ai[server]>=0.2.31,<0.3"  # 0.2.31: frameworks are core
