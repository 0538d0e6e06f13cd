"""Test-wide settings: nothing reaches the internet (spec/frameworks.md P1, P3)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ.pop("OPENAI_API_KEY", None)

import sys
from pathlib import Path

# Test helper modules are imported as `tests.<area>.<module>` (pytest runs in importlib mode).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def pytest_configure(config):  # noqa: D103
    config.addinivalue_line(
        "markers", "upstream: drives the real osmosis-ai (0.2.31 / 0.3.8) from a side venv (tests/upstream/venvs.py)"
    )


def pytest_collection_modifyitems(config, items):  # noqa: D103
    # Side venvs take minutes to build: start them now, so they build while the other tests run.
    if any(item.get_closest_marker("upstream") for item in items):
        from tests.upstream.venvs import prebuild

        prebuild()
