"""An entrypoint with two workflow classes and one grader: select one with ``-m two_workflows.py:BWorkflow``.

Both reuse the framework-free calculator workflow of ``tests/server/calc_workflow.py`` (loaded under another
name, so only the classes bound here are discovery candidates).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_calc_for_two_workflows", Path(__file__).resolve().parents[1] / "server" / "calc_workflow.py"
)
assert _spec is not None and _spec.loader is not None
_calc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_calc)


class AWorkflow(_calc.CalcWorkflow):
    """The calculator, as one of two workflows in this file."""


class BWorkflow(_calc.CalcWorkflow):
    """The calculator again: a second candidate."""


class Grading(_calc.CalcGrader):
    """The one grader, shared by whichever workflow is selected."""
