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
