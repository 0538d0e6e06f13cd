"""Exception hierarchy and texts (spec §2.9)."""

import pytest

from osmosis_compat.legacy import exceptions as e


def test_hierarchy():
    for cls in (e.OsmosisTransportError, e.OsmosisServerError, e.OsmosisValidationError, e.OsmosisTimeoutError,
                e.AgentLoopNotFoundError, e.ToolExecutionError, e.ToolArgumentError):
        assert issubclass(cls, e.OsmosisRolloutError)
    assert issubclass(e.ToolArgumentError, e.ToolExecutionError)
    assert issubclass(e.OsmosisRolloutError, Exception)
    for cls in (e.ServeError, e.AgentLoopValidationError, e.CLIError, e.PublicIPDetectionError, e.MCPLoadError):
        assert not issubclass(cls, e.OsmosisRolloutError)
    assert issubclass(e.ModelNotFoundError, e.ProviderRequestError)


@pytest.mark.parametrize("cls", [e.OsmosisServerError, e.OsmosisValidationError])
def test_status_code_errors(cls):
    exc = cls("body text", 503)
    assert str(exc) == "body text" and exc.status_code == 503
    with pytest.raises(TypeError):
        cls("missing status")


def test_agent_loop_not_found():
    exc = e.AgentLoopNotFoundError("x", ["a", "b"])
    assert str(exc) == "Agent loop 'x' not found. Available: ['a', 'b']"
    assert exc.name == "x" and exc.available == ["a", "b"]


def test_tool_errors():
    exc = e.ToolExecutionError("bad")
    assert (str(exc), exc.tool_call_id, exc.tool_name) == ("bad", "", "")
    exc = e.ToolArgumentError("bad args", tool_call_id="c1", tool_name="add")
    assert (exc.tool_call_id, exc.tool_name) == ("c1", "add")


def test_validation_error_errors_list():
    assert e.AgentLoopValidationError("m").errors == []
    assert e.AgentLoopValidationError("m", errors=[1]).errors == [1]


def test_rubric_errors():
    exc = e.ProviderRequestError("openai", "gpt", " timeout ")
    assert str(exc) == "Provider 'openai' request for model 'gpt' failed. timeout"
    assert (exc.provider, exc.model, exc.detail) == ("openai", "gpt", "timeout")
    assert isinstance(e.MissingAPIKeyError("k"), RuntimeError)
