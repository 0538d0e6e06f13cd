"""The `.pth` start-up hook is nearly free: it imports nothing, and hands over on the first osmosis_ai import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=60)


def test_interpreter_start_imports_nothing_of_ours():
    code = """
        import json, sys
        print(json.dumps({"modules": sorted(sys.modules), "meta_path": [type(f).__name__ for f in sys.meta_path]}))
    """
    on = json.loads(_python(code).stdout)
    off = json.loads(_python(code, OSMOSIS_COMPAT_SHIM="off").stdout)
    assert not [m for m in on["modules"] if m.startswith("osmosis_compat")]
    # The hook adds no module at all (before: importlib.abc, pathlib, re, tempfile, typing … 29 modules).
    assert set(on["modules"]) == set(off["modules"])
    assert on["meta_path"].count("OsmosisAIShimHook") == 1
    assert "OsmosisAIShimHook" not in off["meta_path"]


def test_first_osmosis_ai_import_swaps_in_the_finder():
    result = _python(
        """
        import sys
        before = [type(f).__name__ for f in sys.meta_path]
        import json  # other imports pass the placeholder untouched
        assert not any(m.startswith("osmosis_compat") for m in sys.modules)
        from osmosis_ai.rollout import RolloutAgentLoop
        after = [type(f).__name__ for f in sys.meta_path]
        print(before.index("OsmosisAIShimHook"), after.index("OsmosisAIFinder"), "OsmosisAIShimHook" in after,
              RolloutAgentLoop.__module__)
        """
    )
    assert result.returncode == 0, result.stderr
    hook_index, finder_index, hook_left, module = result.stdout.split()
    assert hook_index == finder_index  # the finder took the placeholder's place
    assert hook_left == "False" and module == "osmosis_compat.legacy.base"


def test_off_mode_installs_nothing():
    result = _python("import osmosis_ai", OSMOSIS_COMPAT_SHIM="off")
    assert result.returncode != 0 and "No module named 'osmosis_ai'" in result.stderr


def test_bench_reports_no_added_modules():
    """bench/shim_startup.py builds venvs with and without the hook: the hook adds no module."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "shim_startup.py"), "--runs", "3"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "added by the hook (0): -" in result.stdout, result.stdout
