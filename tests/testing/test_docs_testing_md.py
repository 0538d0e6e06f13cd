"""The runnable examples in docs/testing.md run as a user would run them: written to files next to a
conftest.py that enables the fixtures plugin, and collected by a separate pytest process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def example_files() -> dict[str, str]:
    blocks = re.findall(r"```python\n# (test_\w+\.py)\n(.*?)```", DOC.read_text(), re.S)
    return {name: code for name, code in blocks}


def test_doc_examples_pass_under_pytest(tmp_path):
    files = example_files()
    assert set(files) >= {"test_calculator.py", "test_strands_model.py", "test_polling.py"}
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["osmosis_compat.testing.fixtures"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert f"{len(files)} passed" in result.stdout
