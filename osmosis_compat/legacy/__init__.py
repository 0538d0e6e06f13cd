"""The legacy ``RolloutAgentLoop`` API (osmosis-ai 0.2.7–0.2.17), name for name.

Cheap to import: every public name is resolved lazily from its module on first access (module ``__getattr__``),
so ``import osmosis_compat.legacy`` pulls in neither FastAPI nor httpx.
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULE_NAMES: dict[str, tuple[str, ...]] = {
    ".api_key": ("API_KEY_PREFIX", "API_KEY_RANDOM_BYTES", "generate_api_key", "validate_api_key"),
    ".base": ("RolloutAgentLoop", "RolloutContext", "RolloutResult"),
    ".client": ("OsmosisLLMClient",),
    ".completions": ("CompletionsResult",),
    ".config": (
        "RolloutClientSettings", "RolloutServerSettings", "RolloutSettings", "configure", "get_settings",
        "reset_settings",
    ),
    ".exceptions": (
        "AgentLoopNotFoundError", "AgentLoopValidationError", "CLIError", "MCPLoadError", "MissingAPIKeyError",
        "ModelNotFoundError", "OsmosisRolloutError", "OsmosisServerError", "OsmosisTimeoutError",
        "OsmosisTransportError", "OsmosisValidationError", "ProviderRequestError", "PublicIPDetectionError",
        "ServeError", "ToolArgumentError", "ToolExecutionError",
    ),
    ".llm_client": ("LLMClientProtocol",),
    ".network": ("detect_public_ip", "is_private_ip", "is_valid_hostname_or_ip", "validate_ipv4"),
    ".registry": (
        "AgentLoopRegistry", "get_agent_loop", "list_agent_loops", "register_agent_loop", "unregister_agent_loop",
    ),
    ".rewards": ("osmosis_reward", "osmosis_rubric"),
    ".rubric": ("evaluate_rubric",),
    ".schemas": (
        "DEFAULT_MAX_METADATA_SIZE_BYTES", "CompletionUsage", "CompletionsChoice", "CompletionsRequest",
        "CompletionsResponse", "InitResponse", "MessageDict", "OpenAIFunctionCallSchema",
        "OpenAIFunctionParametersSchema", "OpenAIFunctionParsedSchema", "OpenAIFunctionPropertySchema",
        "OpenAIFunctionSchema", "OpenAIFunctionToolCall", "OpenAIFunctionToolSchema", "RolloutMetrics",
        "RolloutRequest", "RolloutResponse", "RolloutStatus", "SamplingParamsDict", "ToolResponse",
        "get_max_metadata_size_bytes", "normalize_tools", "set_max_metadata_size_bytes",
    ),
    ".serve": ("DEFAULT_HOST", "DEFAULT_PORT", "serve_agent_loop", "validate_and_report"),
    ".state": ("AppState",),
    "osmosis_compat.server.legacy_app": ("create_app",),
    ".tools": (
        "create_tool_error_result", "create_tool_result", "execute_tool_calls", "get_tool_call_info",
        "parse_tool_arguments", "serialize_tool_result",
    ),
    ".utils": (
        "count_messages_by_role", "get_message_content", "get_message_role", "is_assistant_message",
        "is_tool_message", "is_user_message", "normalize_stop", "parse_tool_calls",
    ),
    ".validator": ("ValidationError", "ValidationResult", "validate_agent_loop"),
}

_EXPORTS: dict[str, str] = {name: module for module, names in _MODULE_NAMES.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(module_name, __name__) if module_name.startswith(".") else importlib.import_module(module_name)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
