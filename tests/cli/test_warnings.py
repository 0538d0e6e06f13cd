"""The CLI shows users their own warnings, and its own commands emit none (issue 12).

Upstream's CLI silenced every warning; osmosis-compat did the same, hiding a user's own ``warnings.warn`` even with
``-v``. Now the default filters apply, and the library warnings that made silencing tempting are fixed at their
cause (pydantic's alias warning on the legacy app: tests/server/test_no_library_warnings.py). Each run is a fresh
``osmosis-compat`` process, as a user starts it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

BIN = Path(sys.executable).parent / "osmosis-compat"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}

AGENT = textwrap.dedent(
    """
    import warnings

    from osmosis_ai.rollout import RolloutAgentLoop

    warnings.warn("my agent's own warning", UserWarning)


    class Loop(RolloutAgentLoop):
        name = "warns"

        def get_tools(self, request):
            return []

        async def run(self, ctx):
            warnings.warn("warned while running a rollout", RuntimeWarning)
            result = await ctx.chat(list(ctx.request.messages))
            return ctx.complete([*ctx.request.messages, result.message], reward=1.0)


    agent_loop = Loop()
    """
)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=ENV)


def test_validate_shows_the_users_own_warning(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    result = _cli("validate", "-m", "agent:agent_loop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "UserWarning: my agent's own warning" in result.stderr


def test_eval_shows_the_users_warnings_and_no_library_warning(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "data.jsonl").write_text(
        '{"system_prompt": "s", "user_prompt": "What is 1 + 1?", "ground_truth": "2"}\n')
    result = _cli("eval", "-m", "agent:agent_loop", "-d", "data.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "UserWarning: my agent's own warning" in result.stderr
    assert "RuntimeWarning: warned while running a rollout" in result.stderr
    library = [line for line in result.stderr.splitlines()
               if "Warning" in line and "site-packages" in line]
    assert library == [], result.stderr


def test_builtin_eval_emits_no_warning(tmp_path: Path) -> None:
    result = _cli("eval", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
