"""``-m file.py:WorkflowClass`` selects one workflow of a file that defines several, in eval, validate and serve."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from osmosis_compat.cli import serve
from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.main import main

TWO = str(Path(__file__).with_name("two_workflows.py"))
DATASET = EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_without_a_class_the_error_says_how_to_select_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-m", TWO]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "Multiple AgentWorkflow subclasses" in err
    assert f"Select one by class: -m {TWO}:AWorkflow (or BWorkflow)" in err
    assert main(["eval", "-m", TWO, "-d", str(DATASET)]) == 1
    assert "Select one by class" in capsys.readouterr().err


def test_validate_by_class(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-m", f"{TWO}:BWorkflow"]) == 0
    out = capsys.readouterr().out
    assert "Workflow 'BWorkflow' validated successfully." in out and "Grader: Grading" in out


def test_eval_by_class(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-m", f"{TWO}:BWorkflow", "-d", str(DATASET), "-q"]) == 0
    out = capsys.readouterr().out
    assert "Evaluation of BWorkflow (workflow protocol)" in out and "100.0% (5/5)" in out


def test_serve_by_class() -> None:
    plan = serve.plan_server(parse("-m", f"{TWO}:AWorkflow"))
    assert "Workflow: AWorkflow" in plan.banner
    mixed = serve.plan_server(parse("-m", f"a={TWO}:AWorkflow", "-m", f"b={TWO}:BWorkflow", "--local"))
    assert set(mixed.app.endpoints("a")) == {"workflow", "polling"} and set(mixed.app.endpoints("b")) == {"workflow", "polling"}


def test_several_graders_are_still_ambiguous(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = Path(TWO).read_text() + "\n\nclass OtherGrading(_calc.CalcGrader):\n    pass\n"
    ambiguous = tmp_path / "ambiguous.py"
    ambiguous.write_text(source.replace("Path(__file__).resolve().parents[1]", f"Path({str(Path(TWO).parents[1])!r})"))
    assert main(["validate", "-m", f"{ambiguous}:AWorkflow"]) == 1
    err = capsys.readouterr().err
    assert "Multiple Grader subclasses" in err and "bind a LocalBackend(workflow=..., grader=..." in err
