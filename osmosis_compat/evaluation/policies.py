"""The model behind an evaluation run: a real OpenAI-compatible endpoint, reached through the fake controller.

The fake controllers answer every model call with ``await policy.areply(messages, tools, model=…)``; the
built-in deterministic policy is :class:`~osmosis_compat.testing.ScriptedPolicy`, and
:class:`ForwardingPolicy` implements the same method by forwarding the call to ``--base-url``. So an agent under
evaluation talks to its controller exactly as in training, and the controller talks to the real model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["ForwardingPolicy", "LiteLLMPolicy", "RemotePolicyError", "resolve_api_key", "litellm_model_id",
           "missing_api_key", "DEFAULT_BASE_URL", "API_KEY_ENV_VARS", "PROVIDER_API_KEY_ENV"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Environment variables read (in order) for the endpoint's key when ``--api-key-env`` is not given.
API_KEY_ENV_VARS = ("OSMOSIS_EVAL_API_KEY", "OPENAI_API_KEY")


class RemotePolicyError(RuntimeError):
    """The endpoint did not answer a model call with a chat completion."""


def resolve_api_key(env_name: str | None, environ: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``(key, variable it came from)``: ``env_name`` when given, else the first set of :data:`API_KEY_ENV_VARS`.

    Raises ``ValueError`` when ``env_name`` is given but unset or empty.
    """
    environ = os.environ if environ is None else environ
    if env_name:
        value = environ.get(env_name)
        if not value:
            raise ValueError(f"environment variable {env_name} (from --api-key-env) is not set")
        return value, env_name
    for name in API_KEY_ENV_VARS:
        if environ.get(name):
            return environ[name], name
    return None, None


class ForwardingPolicy:
    """Answers model calls by POSTing them to ``{base_url}/chat/completions`` (non-streaming).

    ``model`` replaces whatever model name the agent asked for (legacy loops send ``"default"``, the
    integrations ``"osmosis-rollout"``). The sampling parameters the agent sent (``temperature``, ``top_p``,
    ``max_tokens``, ``stop``, ``tool_choice`` …, handed over by the fake controller because
    ``accepts_request_params`` is true) are forwarded; ``params`` (``--temperature`` / ``--max-tokens``)
    override them. The controller turns the JSON answer into SSE for agents that stream. Raises
    :class:`RemotePolicyError` for a non-2xx answer or a body without ``choices``; the fake controller then
    answers the agent 500, which the agent sees as a failed model call.
    """

    accepts_request_params = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.params = dict(params or {})
        self.timeout_s = timeout_s
        self._client: Any = None

    async def areply(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        model: str = "",
        params: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The endpoint's ``chat.completion`` for ``messages`` with ``tools`` offered."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **(params or {}), **self.params}
        if tools:
            body["tools"] = tools
        else:
            body.pop("tool_choice", None)  # a tool_choice without tools is rejected by OpenAI-compatible servers
        return await self._post(body)

    async def preflight(self) -> None:
        """One tiny call, so a wrong URL, model or key fails the run before any row does."""
        await self._post({"model": self.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=10.0))
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = await self._client.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise RemotePolicyError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        if not 200 <= response.status_code < 300:
            raise RemotePolicyError(f"{self.url} answered HTTP {response.status_code}: {response.text[:500]}")
        try:
            data = response.json()
        except ValueError:
            raise RemotePolicyError(f"{self.url} answered with a non-JSON body: {response.text[:200]!r}") from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise RemotePolicyError(f"{self.url} answered without 'choices': {str(data)[:200]}")
        return data


#: ``osmosis test`` / ``osmosis eval`` (0.2.17): the key variable LiteLLM reads for a provider prefix.
PROVIDER_API_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "COHERE_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "xai": "XAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "replicate": "REPLICATE_API_KEY",
    "deepinfra": "DEEPINFRA_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "ai21": "AI21_API_KEY",
    "sambanova": "SAMBANOVA_API_KEY",
    "nvidia_nim": "NVIDIA_NIM_API_KEY",
    "github": "GITHUB_API_KEY",
}


def litellm_model_id(model: str, base_url: str | None) -> str:
    """The LiteLLM model id ``osmosis test`` / ``osmosis eval`` use: a bare name becomes ``openai/<name>``; with
    ``base_url`` every name goes through LiteLLM's ``openai/`` provider (an OpenAI-compatible endpoint)."""
    if base_url is not None:
        return model if model.startswith("openai/") else f"openai/{model}"
    return model if "/" in model else f"openai/{model}"


def missing_api_key(model_id: str, *, api_key: str | None, base_url: str | None,
                    environ: Mapping[str, str] | None = None) -> str | None:
    """The provider's unset key variable, or ``None`` when nothing is missing (an explicit key, a base URL,
    ``LITELLM_API_KEY`` or a provider LiteLLM resolves by other means)."""
    environ = os.environ if environ is None else environ
    if api_key or base_url is not None or environ.get("LITELLM_API_KEY"):
        return None
    variable = PROVIDER_API_KEY_ENV.get(model_id.split("/", 1)[0])
    if variable and not environ.get(variable):
        return variable
    return None


class LiteLLMPolicy:
    """Answers model calls with ``litellm.acompletion`` — upstream ``osmosis test``'s ``ExternalLLMClient``.

    ``model`` is a LiteLLM id (``openai/gpt-5-mini``, ``anthropic/claude-sonnet-4-5``, …); ``api_key`` /
    ``base_url`` are passed as LiteLLM's ``api_key`` / ``api_base``. As upstream, every sampling parameter the
    agent sent is forwarded (``params``, handed over by the fake controller), the agent's offered tools are sent
    with every call, and ``overrides`` (``--temperature`` / ``--max-tokens``) win. LiteLLM is imported on the
    first call. A failed call raises :class:`RemotePolicyError` (the agent then sees a 500 from its controller).
    """

    accepts_request_params = True

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 overrides: Mapping[str, Any] | None = None, timeout_s: float = 300.0) -> None:
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.overrides = dict(overrides or {})
        self.timeout_s = timeout_s

    async def areply(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        model: str = "",
        params: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The model's ``chat.completion`` (as a dict) for ``messages`` with ``tools`` offered."""
        kwargs: dict[str, Any] = {**(params or {}), **self.overrides}
        if tools:
            kwargs["tools"] = tools
        else:
            kwargs.pop("tool_choice", None)
        return await self._complete(messages, kwargs)

    async def preflight(self) -> None:
        """One token of ``"hi"`` (as upstream), so a wrong model, key or URL fails before any row."""
        await self._complete([{"role": "user", "content": "hi"}], {"max_tokens": 1})

    async def _complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
        from osmosis_compat.workflow.integrations._deferred_litellm import load_litellm

        litellm = load_litellm()
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if self.base_url is not None:
            kwargs["api_base"] = self.base_url
        kwargs.setdefault("timeout", self.timeout_s)
        try:
            response = await litellm.acompletion(model=self.model, messages=messages, **kwargs)
        except Exception as exc:  # LiteLLM maps every provider failure to its own exception classes
            raise RemotePolicyError(f"{self.model}: {type(exc).__name__}: {exc}") from exc
        data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
        if not data.get("choices"):
            raise RemotePolicyError(f"{self.model} answered without 'choices': {str(data)[:200]}")
        return data
