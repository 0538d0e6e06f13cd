"""The legacy wire and tool schemas (spec/legacy-protocol.md §1.2.1, §2.8), pydantic v2, name for name.

Default pydantic config everywhere (unknown fields are ignored) except the two JSON-schema pieces of a tool —
:class:`OpenAIFunctionPropertySchema` and :class:`OpenAIFunctionParametersSchema` — which keep every extra key
(``items``, nested ``properties``, ``additionalProperties``, ``default``, ``anyOf``, ``$defs`` …) so a tool schema
reaches the controller whole (upstream silently dropped them; see docs/legacy-api.md).

:func:`normalize_tools` turns a ``get_tools()`` return value into the JSON list sent in the ``InitResponse``, or
raises ``ValueError`` naming the bad tool.
"""

from __future__ import annotations

import json
import threading
from enum import Enum
from typing import Any, Literal, Optional
from urllib.parse import urlparse

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError

from osmosis_compat.runtime.wirecheck import check_header_value, check_http_url, check_identifier, check_wire_json

__all__ = [
    "DEFAULT_MAX_METADATA_SIZE_BYTES",
    "CompletionUsage",
    "CompletionsChoice",
    "CompletionsRequest",
    "CompletionsResponse",
    "InitResponse",
    "MessageDict",
    "OpenAIFunctionCallSchema",
    "OpenAIFunctionParametersSchema",
    "OpenAIFunctionParsedSchema",
    "OpenAIFunctionPropertySchema",
    "OpenAIFunctionSchema",
    "OpenAIFunctionToolCall",
    "OpenAIFunctionToolSchema",
    "RolloutMetrics",
    "RolloutRequest",
    "RolloutResponse",
    "RolloutStatus",
    "SamplingParamsDict",
    "ToolResponse",
    "get_max_metadata_size_bytes",
    "normalize_tools",
    "set_max_metadata_size_bytes",
]

MessageDict = dict[str, Any]
"""One chat message (``{"role": ..., "content": ..., ...}``); content is not validated."""

SamplingParamsDict = dict[str, Any]
"""Free-form sampling parameters (``completion_params``)."""

# --- metadata size limit -----------------------------------------------------------------------------------------

DEFAULT_MAX_METADATA_SIZE_BYTES = 1 * 1024 * 1024
"""Default limit for the JSON-encoded size of ``RolloutRequest.metadata`` (1 MiB)."""

_metadata_limit_lock = threading.Lock()
_max_metadata_size_bytes = DEFAULT_MAX_METADATA_SIZE_BYTES


def get_max_metadata_size_bytes() -> int:
    """The process-wide limit (bytes) for ``RolloutRequest.metadata`` encoded as UTF-8 JSON."""
    with _metadata_limit_lock:
        return _max_metadata_size_bytes


def set_max_metadata_size_bytes(max_bytes: int) -> None:
    """Set the process-wide metadata size limit (thread-safe). ``max_bytes <= 0`` → ``ValueError``.

    Note: ``RolloutSettings.max_metadata_size_bytes`` is not wired to this limit (as upstream).
    """
    global _max_metadata_size_bytes
    if max_bytes <= 0:
        raise ValueError("max_metadata_size_bytes must be positive")
    with _metadata_limit_lock:
        _max_metadata_size_bytes = max_bytes


def _check_rollout_id(value: str) -> str:
    if not value.strip():
        raise ValueError("rollout_id cannot be empty or whitespace only")
    return value


# --- tool schemas ------------------------------------------------------------------------------------------------


class OpenAIFunctionPropertySchema(BaseModel):
    """One property of a function's parameters.

    ``type``, ``description`` and ``enum`` are the upstream fields (``description``/``enum`` dump as explicit
    ``null``). Every other JSON-schema key is kept as is. Differences from upstream, deliberate: ``type`` may be
    a union list (``["string", "null"]``) or absent (e.g. an ``anyOf`` property; it is then left out of the dump),
    and ``enum`` may hold any JSON values.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: Optional[str | list[str]] = None
    description: Optional[str] = None
    enum: Optional[list[Any]] = None

    @model_serializer(mode="wrap")
    def _omit_absent_type(self, handler: Any) -> Any:
        data = handler(self)
        if self.type is None and isinstance(data, dict):
            data.pop("type", None)
        return data


class OpenAIFunctionParametersSchema(BaseModel):
    """A function's parameters: ``type``, ``properties`` and ``required`` are required (as upstream); every other
    JSON-schema key (``additionalProperties``, ``$defs`` …) is kept."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str
    properties: dict[str, OpenAIFunctionPropertySchema]
    required: list[str]


def _empty_parameters() -> OpenAIFunctionParametersSchema:
    return OpenAIFunctionParametersSchema(type="object", properties={}, required=[])


class OpenAIFunctionSchema(BaseModel):
    """A function declaration: ``name`` and ``description`` are required; omitted ``parameters`` become an empty
    object schema; ``strict`` defaults to ``False``."""

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    parameters: OpenAIFunctionParametersSchema = Field(default_factory=_empty_parameters)
    strict: bool = False


class OpenAIFunctionToolSchema(BaseModel):
    """A tool: ``{"type": "function", "function": {...}}`` (``type`` is not restricted, as upstream).

    Use ``model_dump(exclude_none=True)`` when handing it to an LLM API.
    """

    model_config = ConfigDict(defer_build=True)

    type: str
    function: OpenAIFunctionSchema


class OpenAIFunctionParsedSchema(BaseModel):
    """A function call as the model emitted it: ``arguments`` is the raw JSON string."""

    model_config = ConfigDict(defer_build=True)

    name: str
    arguments: str


class OpenAIFunctionCallSchema(BaseModel):
    """A function call with decoded ``arguments``."""

    model_config = ConfigDict(defer_build=True)

    name: str
    arguments: dict[str, Any]

    @staticmethod
    def from_openai_function_parsed_schema(
        parsed_schema: OpenAIFunctionParsedSchema,
    ) -> tuple[OpenAIFunctionCallSchema, bool]:
        """Decode ``parsed_schema.arguments``; returns ``(call, has_decode_error)``.

        Invalid JSON or JSON that is not an object gives ``arguments={}`` and ``True``.
        """
        has_decode_error = False
        try:
            arguments = json.loads(parsed_schema.arguments)
        except (json.JSONDecodeError, TypeError):
            arguments = {}
            has_decode_error = True
        if not isinstance(arguments, dict):
            arguments = {}
            has_decode_error = True
        return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments=arguments), has_decode_error


class OpenAIFunctionToolCall(BaseModel):
    """A tool call of an assistant message."""

    model_config = ConfigDict(defer_build=True)

    id: str
    type: Literal["function"] = "function"
    function: OpenAIFunctionCallSchema


class ToolResponse(BaseModel):
    """A multi-modal tool result: optional ``text``, ``image`` list, ``video`` list."""

    model_config = ConfigDict(defer_build=True)

    text: Optional[str] = None
    image: Optional[list[Any]] = None
    video: Optional[list[Any]] = None

    @model_validator(mode="before")
    @classmethod
    def _media_fields_are_lists(cls, values: Any) -> Any:
        if isinstance(values, dict):
            for key in ("image", "video"):
                if values.get(key) is not None and not isinstance(values[key], list):
                    raise ValueError(f"{key} must be a list")
        return values

    def is_empty(self) -> bool:
        """True when there is no text, image or video."""
        return not self.text and not self.image and not self.video

    def is_text_only(self) -> bool:
        """True when there is text and no image or video."""
        return self.text is not None and not self.image and not self.video


# --- rollout protocol --------------------------------------------------------------------------------------------


class RolloutStatus(str, Enum):
    """Final status of a rollout."""

    COMPLETED = "COMPLETED"
    ERROR = "ERROR"


class RolloutMetrics(BaseModel):
    """Counters reported with a finished rollout."""

    model_config = ConfigDict(defer_build=True)

    total_latency_ms: float = 0.0
    llm_latency_ms: float = 0.0
    tool_latency_ms: float = 0.0
    num_llm_calls: int = 0
    num_tool_calls: int = 0
    prompt_tokens: int = 0
    response_tokens: int = 0
    max_context_tokens: int = 0


class RolloutRequest(BaseModel):
    """Body of ``POST /v1/rollout/init``.

    ``rollout_id`` is 1–256 characters and not blank; ``server_url`` is an http(s) URL with a host;
    ``completion_params`` is required; ``metadata`` must be JSON-serialisable and within
    :func:`get_max_metadata_size_bytes`. ``max_turns``, ``max_tokens_total`` and ``tool_server_url`` are advisory.

    Stricter than upstream (docs/legacy-server.md, "Bad input"): ``rollout_id`` / ``idempotency_key`` without
    control characters or lone surrogates; ``server_url`` without whitespace/control characters and with a valid
    port; ``api_key`` sendable as an HTTP header; ``messages`` / ``completion_params`` strict JSON (finite numbers,
    valid Unicode), since the server sends them on.
    """

    model_config = ConfigDict(defer_build=True)

    rollout_id: str = Field(..., min_length=1, max_length=256)
    server_url: str
    messages: list[MessageDict]
    completion_params: SamplingParamsDict
    tool_server_url: Optional[str] = None
    max_turns: int = 10
    max_tokens_total: int = 8192
    metadata: dict[str, Any] = Field(default_factory=dict)
    api_key: Optional[str] = None
    idempotency_key: Optional[str] = None

    @field_validator("rollout_id")
    @classmethod
    def _rollout_id_not_blank(cls, value: str) -> str:
        # Beyond upstream: the id names the debug trace file (serve --log) and appears in logs, so NUL and other
        # control characters, and lone surrogates, are refused here rather than failing the rollout later.
        return check_identifier(_check_rollout_id(value), label="rollout_id")

    @field_validator("idempotency_key")
    @classmethod
    def _idempotency_key_is_text(cls, value: Optional[str]) -> Optional[str]:
        return None if value is None else check_identifier(value, label="idempotency_key")

    @field_validator("server_url")
    @classmethod
    def _server_url_is_http(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https"):
            raise ValueError("server_url must use http or https scheme")
        if not parsed.netloc:
            raise ValueError("server_url must have a valid host")
        # Beyond upstream: every model call and the callback go to this URL; one httpx cannot send (CR/LF,
        # spaces, a bad port, no host name) would leave the rollout unable to report.
        check_http_url(value, label="server_url")
        return value

    @field_validator("api_key")
    @classmethod
    def _api_key_is_sendable(cls, value: Optional[str]) -> Optional[str]:
        # Sent back as "Authorization: Bearer <api_key>" on every model call and on the callback.
        return check_header_value(value, label="api_key")

    @field_validator("messages", "completion_params")
    @classmethod
    def _resent_values_are_json(cls, value: Any, info: Any) -> Any:
        # Re-sent to {server_url}/v1/chat/completions: NaN/Infinity or a lone surrogate would fail every model call.
        return check_wire_json(value, label=info.field_name)

    @field_validator("tool_server_url")
    @classmethod
    def _tool_server_url_is_text(cls, value: Optional[str]) -> Optional[str]:
        # Advisory (the server never calls it), so only what any later use would trip over: lone surrogates.
        return None if value is None else check_wire_json(value, label="tool_server_url", numbers=False)

    @field_validator("metadata")
    @classmethod
    def _metadata_within_limit(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            return value
        # NaN/Infinity stay accepted here, as upstream (free-form); lone surrogates do not (nothing can encode them).
        check_wire_json(value, label="metadata", numbers=False)
        try:
            size = len(json.dumps(value).encode("utf-8"))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be JSON serializable: {exc}") from exc
        limit = get_max_metadata_size_bytes()
        if size > limit:
            raise ValueError(f"metadata size exceeds maximum allowed size of {limit // (1024 * 1024)}MB")
        return value


class InitResponse(BaseModel):
    """Body of the 202 answer to ``/v1/rollout/init``: the rollout id and the tools the agent offers."""

    model_config = ConfigDict(defer_build=True)

    rollout_id: str
    tools: list[OpenAIFunctionToolSchema] = Field(default_factory=list)


class RolloutResponse(BaseModel):
    """Body of ``POST {server_url}/v1/rollout/completed`` (field order is the wire order)."""

    model_config = ConfigDict(defer_build=True)

    rollout_id: str
    status: RolloutStatus
    final_messages: list[MessageDict] = Field(default_factory=list)
    finish_reason: Optional[str] = None
    error_message: Optional[str] = None
    reward: Optional[float] = None
    metrics: Optional[RolloutMetrics] = None
    extra_fields: dict[str, Any] = Field(default_factory=dict)


class CompletionsRequest(BaseModel):
    """Body of ``POST {server_url}/v1/chat/completions`` (legacy dialect: ``rollout_id`` in the body, no tools)."""

    model_config = ConfigDict(defer_build=True)

    model: str = "default"
    messages: list[MessageDict]
    rollout_id: str = Field(..., min_length=1, max_length=256)
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    stop: Optional[list[str]] = None
    logprobs: bool = True

    @field_validator("rollout_id")
    @classmethod
    def _rollout_id_not_blank(cls, value: str) -> str:
        return _check_rollout_id(value)


class CompletionsChoice(BaseModel):
    """One choice of a chat-completions reply."""

    model_config = ConfigDict(defer_build=True)

    index: int = 0
    message: MessageDict
    finish_reason: str = "stop"


class CompletionUsage(BaseModel):
    """Token usage of a chat-completions reply."""

    model_config = ConfigDict(defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class CompletionsResponse(BaseModel):
    """A chat-completions reply as TrainGate builds it (``token_ids``/``logprobs``/``prompt_token_ids`` are
    TrainGate-internal)."""

    model_config = ConfigDict(defer_build=True)

    id: str
    object: str = "chat.completion"
    created: int
    model: str = "default"
    choices: list[CompletionsChoice]
    usage: Optional[CompletionUsage] = None
    token_ids: Optional[list[int]] = None
    logprobs: Optional[list[float]] = None
    prompt_token_ids: Optional[list[int]] = None


# --- tool list normalisation -------------------------------------------------------------------------------------


def _describe_validation_error(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{loc}: {error.get('msg')}" if loc else str(error.get("msg")))
    return "; ".join(parts)


def normalize_tools(tools: Any) -> list[dict[str, Any]]:
    """Validate a ``get_tools()`` return value and return the JSON-ready tool list of the ``InitResponse``.

    Accepts a list (or tuple) of :class:`OpenAIFunctionToolSchema` objects and/or dicts of that shape. Each tool
    is dumped as upstream did (``description``/``enum`` as explicit ``null``, ``strict`` defaulting to ``false``,
    omitted ``parameters`` → empty object schema) but with every extra JSON-schema key kept.

    Raises ``ValueError`` naming the tool index and the problem: not a list, an element that is neither a tool
    object nor a dict, a missing/blank function name, a missing description, malformed parameters, or values
    that cannot be encoded as JSON.
    """
    if isinstance(tools, OpenAIFunctionToolSchema) or isinstance(tools, dict):
        raise ValueError(f"get_tools() must return a list of tools, got a single {type(tools).__name__}")
    if not isinstance(tools, (list, tuple)):
        raise ValueError(f"get_tools() must return a list of tools, got {type(tools).__name__}")
    normalized: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        if isinstance(tool, OpenAIFunctionToolSchema):
            model = tool
        elif isinstance(tool, dict):
            try:
                model = OpenAIFunctionToolSchema.model_validate(tool)
            except PydanticValidationError as exc:
                raise ValueError(f"tools[{index}]: {_describe_validation_error(exc)}") from exc
        else:
            raise ValueError(
                f"tools[{index}]: expected an OpenAIFunctionToolSchema or a dict, got {type(tool).__name__}"
            )
        if not model.function.name.strip():
            raise ValueError(f"tools[{index}]: function.name must be a non-empty string")
        try:
            # Checked on the python dump: the JSON-mode dump would quietly turn NaN/inf into null.
            json.dumps(model.model_dump(), allow_nan=False)
            dumped = model.model_dump(mode="json")
        except (PydanticSerializationError, TypeError, ValueError) as exc:
            raise ValueError(f"tools[{index}] ({model.function.name}): not JSON-encodable: {exc}") from exc
        normalized.append(dumped)
    return normalized
