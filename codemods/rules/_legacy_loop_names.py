"""Which names of the legacy SDK (osmosis-ai 0.2.7–0.2.17) a migrated file may still import, and which it may not
(spec/legacy-protocol.md §2.1 against osmosis-ai 0.3.8's exports): the ``legacy-loop`` rule translates some,
writes some into the file, and reports the rest (OM396) — an import of one of them fails on today's osmosis-ai.
"""

from __future__ import annotations

from codemods.rules._legacy_loop_helpers import LEGACY_HELPERS, SCHEMA_FIELDS

#: ``osmosis_ai.rollout.__all__`` at v0.2.17 (76 names), plus the package's top-level legacy exports
LEGACY_ROLLOUT_NAMES = frozenset("""
DEFAULT_HOST DEFAULT_MAX_METADATA_SIZE_BYTES DEFAULT_PORT AgentLoopNotFoundError AgentLoopRegistry
AgentLoopValidationError CompletionUsage CompletionsChoice CompletionsRequest CompletionsResponse CompletionsResult
InitResponse LLMClientProtocol MessageDict OpenAIFunctionCallSchema OpenAIFunctionParametersSchema
OpenAIFunctionParsedSchema OpenAIFunctionPropertySchema OpenAIFunctionSchema OpenAIFunctionToolCall
OpenAIFunctionToolSchema OsmosisLLMClient OsmosisRolloutError OsmosisServerError OsmosisTimeoutError
OsmosisTransportError OsmosisValidationError PublicIPDetectionError RolloutAgentLoop RolloutClientSettings
RolloutContext RolloutMetrics RolloutRequest RolloutResponse RolloutResult RolloutServerSettings RolloutSettings
RolloutStatus SamplingParamsDict ServeError ToolArgumentError ToolExecutionError ToolResponse ValidationError
ValidationResult configure count_messages_by_role create_app create_tool_error_result create_tool_result
detect_public_ip execute_tool_calls get_agent_loop get_max_metadata_size_bytes get_message_content get_message_role
get_settings get_tool_call_info is_assistant_message is_private_ip is_tool_message is_user_message
is_valid_hostname_or_ip list_agent_loops normalize_stop parse_tool_arguments parse_tool_calls register_agent_loop
reset_settings serialize_tool_result serve_agent_loop set_max_metadata_size_bytes unregister_agent_loop
validate_agent_loop validate_and_report validate_ipv4 osmosis_reward osmosis_rubric _REGISTRY
""".split())
#: names osmosis-ai 0.3.8 also exports from ``osmosis_ai.rollout`` (importable, though RolloutContext and
#: RolloutStatus mean something else there)
NAMES_03 = frozenset({"MessageDict", "RolloutContext", "RolloutStatus"})
#: legacy modules osmosis-ai 0.3.8 no longer has (every name imported from them fails)
LEGACY_MODULES = frozenset({
    "osmosis_ai.rollout.core", "osmosis_ai.rollout.core.base", "osmosis_ai.rollout.core.schemas",
    "osmosis_ai.rollout.core.exceptions", "osmosis_ai.rollout.core.llm_client", "osmosis_ai.rollout.tools",
    "osmosis_ai.rollout.registry", "osmosis_ai.rollout.config", "osmosis_ai.rollout.config.settings",
    "osmosis_ai.rollout.validator", "osmosis_ai.rollout.network", "osmosis_ai.rollout.mcp",
    "osmosis_ai.rollout.testing", "osmosis_ai.rollout.cli_utils", "osmosis_ai.rollout.server.serve",
    "osmosis_ai.rollout.server.state", "osmosis_ai.rollout.server.api_key", "osmosis_ai.rollout.server.registration",
    "osmosis_ai.rollout._compat", "osmosis_ai.rollout.test_mode",
})
#: names the rule translates where a rewritten loop uses them
TRANSLATED = frozenset({"RolloutAgentLoop", "RolloutContext", "RolloutRequest", "RolloutResult", "CompletionsResult",
                        "create_app", *SCHEMA_FIELDS})


def legacy_name(qualified: str) -> str | None:
    """The legacy name ``qualified`` (``module.name``) imports, when it is one of the legacy SDK's (else None)."""
    mod, _, name = qualified.rpartition(".")
    if not mod.startswith("osmosis_ai"):
        return None
    if mod in LEGACY_MODULES or name in LEGACY_ROLLOUT_NAMES:
        return name
    return None


def is_legacy_only(qualified: str) -> bool:
    """Whether importing ``qualified`` fails on osmosis-ai 0.3 and the rule has nothing that replaces it (neither a
    translation nor a definition it writes into the file)."""
    name = legacy_name(qualified)
    if name is None or name in TRANSLATED or name in LEGACY_HELPERS:
        return False
    mod = qualified.rpartition(".")[0]
    return mod in LEGACY_MODULES or name not in NAMES_03


def breaks_on_03(qualified: str) -> bool:
    """Whether ``from <module> import <name>`` fails on osmosis-ai 0.3 (a legacy module, or a legacy name 0.3 does
    not export)."""
    name = legacy_name(qualified)
    if name is None:
        return False
    mod = qualified.rpartition(".")[0]
    return mod in LEGACY_MODULES or name not in NAMES_03
