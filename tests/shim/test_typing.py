"""Type checkers and IDEs see the osmosis_ai.* names (PEP 561 stubs), and shim modules have a __file__."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from osmosis_compat.shim.names import STUBS_DIRNAME
from osmosis_compat.shim.stubgen import generate

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / STUBS_DIRNAME


def test_checked_in_stubs_match_the_name_table():
    expected = generate()
    on_disk = {p.relative_to(STUBS).as_posix(): p.read_text() for p in STUBS.rglob("*.pyi")}
    assert sorted(on_disk) == sorted(expected), "run `python -m osmosis_compat.shim.stubgen`"
    for relative, content in expected.items():
        assert on_disk[relative] == content, f"{relative} is stale: run `python -m osmosis_compat.shim.stubgen`"


def test_wheel_ships_the_stub_package():
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.hatch.build.targets.wheel.force-include]", 1)[1].split("\n[", 1)[0]
    assert f'"{STUBS_DIRNAME}" = "{STUBS_DIRNAME}"' in section


def test_mypy_finds_and_types_the_shim_names(tmp_path):
    pytest.importorskip("mypy")
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(
        """
        from osmosis_ai import osmosis_reward
        from osmosis_ai.rollout import RolloutAgentLoop, RolloutContext, RolloutRequest, RolloutResult
        from osmosis_ai.rollout.core.schemas import OpenAIFunctionToolSchema
        from osmosis_ai.rollout.tools import execute_tool_calls


        class Calculator(RolloutAgentLoop):
            name = "calculator"

            def get_tools(self, request: RolloutRequest) -> list[OpenAIFunctionToolSchema]:
                return []

            async def run(self, ctx: RolloutContext) -> RolloutResult:
                return ctx.complete([])


        not_a_number: int = RolloutAgentLoop  # a real type, not Any: mypy must flag this line
        """
    ))
    env = {**os.environ, "MYPYPATH": ""}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(agent)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert not [line for line in lines if "import-not-found" in line or "import-untyped" in line], result.stdout
    assert len(lines) == 1 and "agent.py:18: error" in lines[0] and "type[RolloutAgentLoop]" in lines[0], result.stdout


def test_merged_shim_modules_have_a_file():
    result = subprocess.run(
        [sys.executable, "-c", "import osmosis_ai, osmosis_ai.rollout, osmosis_ai.rollout.client as c; "
                               "print(osmosis_ai.__file__); print(osmosis_ai.rollout.__file__); print(c.__file__)"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    files = result.stdout.split()
    assert [Path(f).relative_to(STUBS).as_posix() for f in files] == [
        "__init__.pyi", "rollout/__init__.pyi", "rollout/client.pyi"]
    assert all(Path(f).is_file() for f in files)
