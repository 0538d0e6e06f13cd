"""A user's own pytest run of the documented fakes (docs/testing.md) shows no third-party warnings (issue 20 item
6): before, every Strands example test listed LiteLLM's pydantic deprecations and pydantic's ReadOnly notes in the
warnings summary. The run is a fresh pytest in a temporary project, without this repository's configuration."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_strands_example_runs_without_third_party_warnings(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs/testing.md").read_text(), re.S)
    example = next(b for b in blocks if "# test_strands_model.py" in b)
    (tmp_path / "test_strands_model.py").write_text(example)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["osmosis_compat.testing.fixtures"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout and "warning" not in done.stdout.lower(), done.stdout[-3000:]
