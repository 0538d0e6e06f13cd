"""Test-wide settings: nothing reaches the internet (spec/frameworks.md P1, P3)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ.pop("OPENAI_API_KEY", None)
