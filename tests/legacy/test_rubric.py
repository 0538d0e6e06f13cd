"""Out-of-scope modules say why: rubric evaluator, MCP agent loops."""

import importlib
import sys

import pytest

from osmosis_compat.legacy import rubric
from osmosis_compat.legacy.exceptions import MissingAPIKeyError


def test_evaluate_rubric_raises_with_reason():
    with pytest.raises(NotImplementedError) as info:
        rubric.evaluate_rubric("rubric", "solution", {"provider": "openai", "model": "gpt"})
    assert "not part of osmosis-compat" in str(info.value)
    assert rubric.MissingAPIKeyError is MissingAPIKeyError


def test_mcp_module_import_fails_with_reason():
    sys.modules.pop("osmosis_compat.legacy.mcp", None)
    with pytest.raises(ImportError) as info:
        importlib.import_module("osmosis_compat.legacy.mcp")
    message = str(info.value)
    assert "MCP agent loops" in message and "RolloutAgentLoop" in message
