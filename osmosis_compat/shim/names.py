"""The name table: which osmosis-compat object answers each ``osmosis_ai.*`` import.

Three kinds of entries:

- an **alias** (``target``): the module *is* an osmosis-compat module (``osmosis_ai.rollout.core.schemas`` →
  ``osmosis_compat.legacy.schemas``);
- a **merged** module (``exports`` and/or ``sources``): names resolved lazily, on first access, from several
  modules — this is how one ``osmosis_ai.rollout`` serves both the legacy and the workflow API;
- **unavailable** (``unavailable``): importing it raises ``ImportError`` with the reason (out-of-scope features).

Where the two APIs define the same name, the legacy meaning wins at ``osmosis_ai.rollout`` level (legacy files
must run unchanged); the workflow meaning stays reachable at its own module (``osmosis_ai.rollout.context``,
``osmosis_ai.rollout.types``). The clashing names are listed in :data:`CLASHES`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CLASHES", "Entry", "STUBS_DIRNAME", "UPSTREAM_HOMES", "exported_names", "lookup", "resolve_attribute",
    "served_modules", "stub_file", "upstream_modules_for",
]

LEGACY = "osmosis_compat.legacy"
WORKFLOW = "osmosis_compat.workflow"
STRANDS = "osmosis_compat.workflow.integrations.strands"
OPENAI_AGENTS = "osmosis_compat.workflow.integrations.openai_agents"

UPSTREAM_VERSION = "0.2.31"
"""The newest upstream API osmosis-compat implements (legacy 0.2.7–0.2.17 and workflow 0.2.18–0.2.31)."""


def _version() -> str:
    from osmosis_compat import __version__

    return f"{UPSTREAM_VERSION}+compat.{__version__}"


@dataclass(frozen=True)
class Entry:
    is_package: bool = False
    target: str | None = None
    exports: dict[str, str] = field(default_factory=dict)
    """name -> "module" (same attribute name) or "module:attr"."""
    sources: tuple[str, ...] = ()
    """Modules searched in order for names not in ``exports``."""
    all_names: tuple[str, ...] | None = None
    unavailable: str | None = None

    def static_attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if self.all_names is not None:
            attrs["__all__"] = list(self.all_names)
        return attrs


def _from(module: str, *names: str) -> dict[str, str]:
    return {name: module for name in names}


# --- export lists (spec/legacy-protocol.md §2.1, spec/workflow-api.md §1) -------------------------------------

LEGACY_ROLLOUT_NAMES = (
    "DEFAULT_HOST", "DEFAULT_MAX_METADATA_SIZE_BYTES", "DEFAULT_PORT", "AgentLoopNotFoundError", "AgentLoopRegistry",
    "AgentLoopValidationError", "CompletionUsage", "CompletionsChoice", "CompletionsRequest", "CompletionsResponse",
    "CompletionsResult", "InitResponse", "LLMClientProtocol", "MessageDict", "OpenAIFunctionCallSchema",
    "OpenAIFunctionParametersSchema", "OpenAIFunctionParsedSchema", "OpenAIFunctionPropertySchema",
    "OpenAIFunctionSchema", "OpenAIFunctionToolCall", "OpenAIFunctionToolSchema", "OsmosisLLMClient",
    "OsmosisRolloutError", "OsmosisServerError", "OsmosisTimeoutError", "OsmosisTransportError",
    "OsmosisValidationError", "PublicIPDetectionError", "RolloutAgentLoop", "RolloutClientSettings", "RolloutContext",
    "RolloutMetrics", "RolloutRequest", "RolloutResponse", "RolloutResult", "RolloutServerSettings", "RolloutSettings",
    "RolloutStatus", "SamplingParamsDict", "ServeError", "ToolArgumentError", "ToolExecutionError", "ToolResponse",
    "ValidationError", "ValidationResult", "configure", "count_messages_by_role", "create_app",
    "create_tool_error_result", "create_tool_result", "detect_public_ip", "execute_tool_calls", "get_agent_loop",
    "get_max_metadata_size_bytes", "get_message_content", "get_message_role", "get_settings", "get_tool_call_info",
    "is_assistant_message", "is_private_ip", "is_tool_message", "is_user_message", "is_valid_hostname_or_ip",
    "list_agent_loops", "normalize_stop", "parse_tool_arguments", "parse_tool_calls", "register_agent_loop",
    "reset_settings", "serialize_tool_result", "serve_agent_loop", "set_max_metadata_size_bytes",
    "unregister_agent_loop", "validate_agent_loop", "validate_and_report", "validate_ipv4",
)

WORKFLOW_ROLLOUT_NAMES = (
    "AgentWorkflow", "AgentWorkflowConfig", "AgentWorkflowContext", "AgentWorkflowOutput", "BaseConfig",
    "ConcurrencyConfig", "ControllerAuth", "ExecutionBackend", "ExecutionOutcome", "ExecutionRequest",
    "ExecutionResult", "Grader", "GraderCompleteRequest",
    "GraderConfig", "GraderContext", "GraderInitRequest", "GraderInitResponse", "GraderStatus",
    "HarborAgentWorkflowContext", "LocalBackend", "MultiTurnMode", "RolloutCompleteRequest", "RolloutErrorCategory",
    "RolloutInitRequest", "RolloutInitResponse", "RolloutResultResponse", "RolloutSample", "SampleSource",
    "create_rollout_server",
    "get_rollout_context",
)

STRANDS_NAMES = ("OsmosisRolloutModel", "OsmosisStrandsAgent")

CLASHES = {
    "RolloutContext": f"{WORKFLOW}.context",
    "RolloutStatus": f"{WORKFLOW}.types",
    "MessageDict": f"{WORKFLOW}.types",
}
"""Names both APIs export at ``osmosis_ai.rollout``: the legacy one wins there; the workflow one lives at the
module given here (``from osmosis_ai.rollout.context import RolloutContext``). ``ValidationError`` is
one class shared by both validators; the legacy ``ValidationResult`` subclasses the shared one, so they do not
clash."""

OSMOSIS_AI_NAMES = (
    "CompletionsResult", "InitResponse", "MissingAPIKeyError", "ModelNotFoundError", "OpenAIFunctionToolSchema",
    "OsmosisLLMClient", "OsmosisRolloutError", "OsmosisServerError", "OsmosisTimeoutError", "OsmosisTransportError",
    "OsmosisValidationError", "ProviderRequestError", "RolloutAgentLoop", "RolloutContext", "RolloutMetrics",
    "RolloutRequest", "RolloutResponse", "RolloutResult", "__version__", "create_app", "evaluate_rubric",
    "get_agent_loop", "list_agent_loops", "osmosis_reward", "osmosis_rubric", "register_agent_loop",
)

_OUT_OF_SCOPE_EVAL = (
    "{name}: upstream's internal test-mode classes (LocalTestRunner, ExternalLLMClient, ...) are not part of "
    "osmosis-compat. The commands are: `osmosis test` / `osmosis eval` (LiteLLM models, --base-url, eval "
    "functions) and `osmosis-compat eval`."
)

_TABLE: dict[str, Entry] = {
    "osmosis_ai": Entry(
        is_package=True,
        exports={
            **{n: LEGACY for n in OSMOSIS_AI_NAMES if n != "__version__"},
        },
        all_names=OSMOSIS_AI_NAMES,
    ),
    "osmosis_ai.rollout": Entry(
        is_package=True,
        exports={
            **{n: LEGACY for n in LEGACY_ROLLOUT_NAMES},
            **{n: WORKFLOW for n in WORKFLOW_ROLLOUT_NAMES},
            **{n: STRANDS for n in STRANDS_NAMES},
        },
        # Star imports get the legacy names and the framework-free workflow names (not the Strands classes,
        # so `from osmosis_ai.rollout import *` never needs strands installed).
        all_names=LEGACY_ROLLOUT_NAMES + WORKFLOW_ROLLOUT_NAMES,
    ),
    # legacy modules
    "osmosis_ai.rollout.core": Entry(is_package=True, sources=(f"{LEGACY}.schemas", f"{LEGACY}.exceptions", f"{LEGACY}.base", f"{LEGACY}.llm_client")),
    "osmosis_ai.rollout.core.base": Entry(target=f"{LEGACY}.base"),
    "osmosis_ai.rollout.core.schemas": Entry(target=f"{LEGACY}.schemas"),
    "osmosis_ai.rollout.core.exceptions": Entry(target=f"{LEGACY}.exceptions"),
    "osmosis_ai.rollout.core.llm_client": Entry(target=f"{LEGACY}.llm_client"),
    "osmosis_ai.rollout.client": Entry(sources=(f"{LEGACY}.client", f"{LEGACY}.completions")),
    "osmosis_ai.rollout.tools": Entry(target=f"{LEGACY}.tools"),
    "osmosis_ai.rollout.utils": Entry(is_package=True, sources=(f"{LEGACY}.utils",)),
    "osmosis_ai.rollout.config": Entry(is_package=True, sources=(f"{LEGACY}.config",)),
    "osmosis_ai.rollout.config.settings": Entry(target=f"{LEGACY}.config"),
    "osmosis_ai.rollout.registry": Entry(target=f"{LEGACY}.registry"),
    "osmosis_ai.rollout.network": Entry(target=f"{LEGACY}.network"),
    "osmosis_ai.rollout.testing": Entry(target=f"{LEGACY}.testing"),
    "osmosis_ai.rollout.validator": Entry(sources=(f"{LEGACY}.validator", f"{WORKFLOW}.validator")),
    "osmosis_ai.rollout.server": Entry(
        is_package=True,
        sources=(f"{LEGACY}.serve", f"{LEGACY}.state", f"{LEGACY}.api_key", "osmosis_compat.server.legacy_app", "osmosis_compat.server.workflow_app", f"{WORKFLOW}.auth"),
    ),
    "osmosis_ai.rollout.server.app": Entry(sources=("osmosis_compat.server.legacy_app", "osmosis_compat.server.workflow_app")),
    "osmosis_ai.rollout.server.state": Entry(target=f"{LEGACY}.state"),
    "osmosis_ai.rollout.server.api_key": Entry(target=f"{LEGACY}.api_key"),
    "osmosis_ai.rollout.server.serve": Entry(target=f"{LEGACY}.serve"),
    "osmosis_ai.rollout.server.auth": Entry(target=f"{WORKFLOW}.auth"),
    "osmosis_ai.rollout.server.registration": Entry(
        unavailable="osmosis_ai.rollout.server.registration: Osmosis Platform registration (and the public-IP "
        "detection it needs) is not part of osmosis-compat, which never contacts the platform. Serve with "
        "`osmosis-compat serve` and register the server's address with your controller yourself."
    ),
    "osmosis_ai.rollout.cli_utils": Entry(target="osmosis_compat.cli.loading"),
    "osmosis_ai.rollout.mcp": Entry(target=f"{LEGACY}.mcp"),
    "osmosis_ai.rollout.eval": Entry(is_package=True, unavailable=_OUT_OF_SCOPE_EVAL.format(name="osmosis_ai.rollout.eval")),
    "osmosis_ai.rollout.test_mode": Entry(unavailable=_OUT_OF_SCOPE_EVAL.format(name="osmosis_ai.rollout.test_mode")),
    "osmosis_ai.rubric_eval": Entry(target=f"{LEGACY}.rubric"),
    "osmosis_ai.rubric_types": Entry(target=f"{LEGACY}.rubric"),
    "osmosis_ai.utils": Entry(target=f"{LEGACY}.rewards"),
    # workflow modules
    "osmosis_ai.rollout.agent_workflow": Entry(target=f"{WORKFLOW}.agent_workflow"),
    "osmosis_ai.rollout.grader": Entry(target=f"{WORKFLOW}.grader"),
    "osmosis_ai.rollout.context": Entry(target=f"{WORKFLOW}.context"),
    "osmosis_ai.rollout.types": Entry(target=f"{WORKFLOW}.types"),
    "osmosis_ai.rollout.types.config": Entry(target=f"{WORKFLOW}.types.config"),
    "osmosis_ai.rollout.types.protocol": Entry(target=f"{WORKFLOW}.types.protocol"),
    "osmosis_ai.rollout.types.sample": Entry(target=f"{WORKFLOW}.types.sample"),
    "osmosis_ai.rollout.types.output": Entry(target=f"{WORKFLOW}.types.output"),
    "osmosis_ai.rollout.backend": Entry(target=f"{WORKFLOW}.backend"),
    "osmosis_ai.rollout.backend.base": Entry(target=f"{WORKFLOW}.backend.base"),
    "osmosis_ai.rollout.backend.local": Entry(is_package=True, sources=(f"{WORKFLOW}.backend.local",)),
    "osmosis_ai.rollout.backend.local.backend": Entry(target=f"{WORKFLOW}.backend.local"),
    "osmosis_ai.rollout.backend.harbor": Entry(
        is_package=True,
        unavailable="osmosis_ai.rollout.backend.harbor: the Harbor container backend is not part of osmosis-compat; "
        "use LocalBackend.",
    ),
    "osmosis_ai.rollout.integrations": Entry(is_package=True, exports=_from(STRANDS, *STRANDS_NAMES)),
    "osmosis_ai.rollout.integrations.agents": Entry(is_package=True, exports=_from(STRANDS, *STRANDS_NAMES)),
    "osmosis_ai.rollout.integrations.agents.strands": Entry(target=STRANDS),
    "osmosis_ai.rollout.integrations.agents.openai_agents": Entry(target=OPENAI_AGENTS),
    "osmosis_ai.rollout.utils.concurrency": Entry(target=f"{WORKFLOW}.utils.concurrency"),
    "osmosis_ai.rollout.utils.identifiers": Entry(target=f"{WORKFLOW}.utils.identifiers"),
    "osmosis_ai.rollout.utils.imports": Entry(target=f"{WORKFLOW}.utils.imports"),
    "osmosis_ai.rollout.utils.messages": Entry(target=f"{WORKFLOW}.utils.messages"),
    "osmosis_ai.rollout.utils.rewards": Entry(target=f"{WORKFLOW}.utils.rewards"),
    "osmosis_ai.rollout.utils.file_artifacts": Entry(target=f"{WORKFLOW}.utils.file_artifacts"),
    "osmosis_ai.rollout.utils.http": Entry(target=f"{WORKFLOW}.utils.http"),
    "osmosis_ai.rollout.driver": Entry(target=f"{WORKFLOW}.driver"),
}


def lookup(fullname: str) -> Entry | None:
    """The table entry for an ``osmosis_ai.*`` module name, or ``None`` if osmosis-compat does not serve it."""
    return _TABLE.get(fullname)


def exported_names(fullname: str) -> list[str]:
    entry = _TABLE.get(fullname)
    if entry is None:
        return []
    names = set(entry.exports)
    if entry.all_names:
        names |= set(entry.all_names)
    return sorted(names)


def resolve_attribute(fullname: str, name: str) -> Any:
    """The object ``osmosis_ai``-module ``fullname`` exports as ``name``; ``AttributeError`` if none."""
    entry = _TABLE.get(fullname)
    if entry is None:
        raise AttributeError(name)
    if fullname == "osmosis_ai" and name == "__version__":
        return _version()
    spec = entry.exports.get(name)
    if spec is not None:
        module_name, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module_name), attr or name)
    if name.startswith("__"):
        raise AttributeError(name)
    for module_name in entry.sources:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(name)


STUBS_DIRNAME = "osmosis_ai-stubs"
"""The PEP 561 stub-only package shipped beside ``osmosis_compat`` (``site-packages/osmosis_ai-stubs``): type
checkers and IDEs find the ``osmosis_ai.*`` names there. Generated from this table by
:mod:`osmosis_compat.shim.stubgen`."""


def served_modules() -> list[str]:
    """Every ``osmosis_ai.*`` module name osmosis-compat serves (unavailable ones left out), sorted."""
    return sorted(name for name, entry in _TABLE.items() if entry.unavailable is None)


def stub_relpath(fullname: str) -> str:
    """Path of ``fullname``'s stub inside :data:`STUBS_DIRNAME` (``rollout/__init__.pyi``, ``rollout/client.pyi``).

    A module is a directory (``__init__.pyi``) when it is a package or another served name lies below it.
    """
    parts = fullname.split(".")[1:]
    prefix = fullname + "."
    entry = _TABLE.get(fullname)
    is_dir = (entry is not None and entry.is_package) or any(name.startswith(prefix) for name in _TABLE)
    if is_dir:
        return "/".join([*parts, "__init__.pyi"])
    return "/".join(parts) + ".pyi"


def stub_file(fullname: str) -> str | None:
    """The installed stub of ``fullname`` (the ``__file__`` of merged modules), or ``None`` if not shipped."""
    import os

    import osmosis_compat

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(osmosis_compat.__file__))), STUBS_DIRNAME)
    path = os.path.join(root, *stub_relpath(fullname).split("/"))
    return path if os.path.isfile(path) else None


UPSTREAM_HOMES: dict[str, str] = {
    "osmosis_compat.runtime.limiter:ConcurrencyLimiter": "osmosis_ai.rollout.utils.concurrency",
    "osmosis_compat.runtime.validation:ValidationError": "osmosis_ai.rollout.validator",
}
"""``"osmosis_compat.module:Qualname"`` → the ``osmosis_ai`` module upstream defines it in, where that is not the
module aliasing osmosis-compat's (checked against the real 0.2.31 by tests/workflow/test_upstream_oracle.py)."""


def upstream_modules_for(module_name: str, attr_path: str = "") -> list[str]:
    """The ``osmosis_ai`` modules that may serve ``module_name``'s ``attr_path``, most specific first: the
    upstream home named in :data:`UPSTREAM_HOMES`, then the modules aliasing ``module_name``."""
    candidates = []
    home = UPSTREAM_HOMES.get(f"{module_name}:{attr_path}")
    if home:
        candidates.append(home)
    candidates += sorted((name for name, entry in _TABLE.items() if entry.target == module_name),
                         key=lambda name: (-name.count("."), name))
    return candidates
