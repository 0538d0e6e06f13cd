"""Send the original program's model calls to the verification endpoint, whatever model it names.

Installed in the child process before the original program is imported, so every way a program reaches a model
lands on one chat-completions endpoint answered by the ``ScriptedPolicy``:

* every OpenAI client built (``OpenAI``/``AsyncOpenAI``, also inside Strands' ``OpenAIModel`` and the OpenAI
  Agents providers) gets the endpoint's ``base_url`` and key, whatever it was given;
* LiteLLM calls (Strands ``LiteLLMModel``, Agents ``LitellmModel``) get ``api_base``/``api_key`` and an
  ``openai/`` model;
* Strands' model classes (``BedrockModel``, ``OpenAIModel``, ``AnthropicModel``, ``OllamaModel``… and the
  ``BedrockModel()`` an ``Agent()`` without a model builds) become a ``LiteLLMModel`` on the endpoint carrying
  their sampling settings — the class the migrated ``OsmosisRolloutModel`` is;
* OpenAI Agents speaks chat completions (the endpoint has no Responses API): the default API is pinned, an
  explicit ``OpenAIResponsesModel`` becomes an ``OpenAIChatCompletionsModel`` on the endpoint's client.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import types
from typing import Any

#: Strands model modules whose ``*Model`` classes are redirected (those whose provider SDK is installed).
STRANDS_MODELS = ("bedrock", "openai", "openai_responses", "anthropic", "ollama", "mistral", "writer", "llamaapi",
                   "gemini", "llamacpp", "sagemaker")
#: Sampling settings a redirected Strands model keeps (``stop_sequences`` → ``stop``), as the migrator carries them.
_SAMPLING = ("temperature", "max_tokens", "top_p")


def install(base_url: str, api_key: str, stubs: list[str], program: str) -> None:
    """Redirect every model the program may build to ``base_url`` (an OpenAI-compatible ``…/v1``). The frameworks
    the ``program`` text does not name are not imported (seconds each): its calls through them could not happen."""
    os.environ.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_BASE": base_url, "OPENAI_API_KEY": api_key,
                       "ANTHROPIC_API_KEY": api_key, "GEMINI_API_KEY": api_key, "MISTRAL_API_KEY": api_key})
    _openai_clients(base_url, api_key)
    if "strands" in program or "litellm" in program.lower():
        _litellm(base_url, api_key)
        _strands(base_url, api_key, stubs)
    if re.search(r"\bagents\b", program):
        _openai_agents()


def _openai_clients(base_url: str, api_key: str) -> None:
    import openai

    for cls in (openai.OpenAI, openai.AsyncOpenAI):
        original = cls.__init__

        def init(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> None:
            kwargs.update(base_url=base_url, api_key=api_key)
            kwargs.pop("websocket_base_url", None)
            __original(self, *args, **kwargs)

        cls.__init__ = init  # type: ignore[method-assign]


def _litellm(base_url: str, api_key: str) -> None:
    try:
        import litellm
    except ImportError:  # pragma: no cover - litellm is a dependency of the integrations
        return

    def redirected(call: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            model = str(kwargs.pop("model", args[0] if args else "model"))
            for key in ("base_url", "custom_llm_provider", "aws_region_name", "vertex_project", "api_version"):
                kwargs.pop(key, None)
            kwargs.update(api_base=base_url, api_key=api_key)
            return call("openai/" + model.rsplit("/", 1)[-1], *args[1:], **kwargs)
        return wrapper

    for name in ("acompletion", "completion"):
        setattr(litellm, name, redirected(getattr(litellm, name)))


def _strands(base_url: str, api_key: str, stubs: list[str]) -> None:
    try:
        from strands.models.litellm import LiteLLMModel
    except ImportError:
        return
    replaced: dict[Any, Any] = {}
    for module_name in STRANDS_MODELS:
        try:
            module = importlib.import_module(f"strands.models.{module_name}")
        except ImportError as exc:  # its provider SDK is missing: the module offers the redirected class anyway
            sys.modules[f"strands.models.{module_name}"] = _ModelModule(
                f"strands.models.{module_name}", (LiteLLMModel, base_url, api_key), stubs, exc.name or module_name)
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and name.endswith("Model") and value.__module__ == module.__name__:
                replaced[value] = _redirected_strands_model(name, LiteLLMModel, base_url, api_key)
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").split(".")[0] != "strands":
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and value in replaced:
                setattr(module, name, replaced[value])
    import strands.models

    for value, redirected in replaced.items():
        setattr(strands.models, value.__name__, redirected)


def _redirected_strands_model(name: str, base: type, base_url: str, api_key: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        params = dict(kwargs.get("params") or {})
        params.update({k: kwargs[k] for k in _SAMPLING if kwargs.get(k) is not None})
        if kwargs.get("stop_sequences"):
            params["stop"] = kwargs["stop_sequences"]
        base.__init__(self, client_args={"api_base": base_url, "api_key": api_key}, model_id="openai/verify",
                      params=params)

    return type(name, (base,), {"__init__": __init__, "__doc__": f"{name}, redirected to the verify endpoint"})


class _ModelModule(types.ModuleType):
    """``strands.models.<provider>`` when its SDK is not installed: its ``*Model`` classes, redirected."""

    def __init__(self, name: str, redirect: tuple[type, str, str], stubs: list[str], sdk: str) -> None:
        super().__init__(name)
        self._redirect, self._stubs, self._sdk = redirect, stubs, sdk

    def __getattr__(self, name: str) -> Any:
        if not name.endswith("Model"):
            raise AttributeError(name)
        cls = _redirected_strands_model(name, *self._redirect)
        setattr(self, name, cls)
        self._stubs.append(f"{self._sdk} (for {self.__name__}.{name})")
        return cls


def _openai_agents() -> None:
    try:
        from agents import _config
        from agents.models import _openai_shared
        from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    except ImportError:
        return
    _openai_shared.set_use_responses_by_default(False)
    _openai_shared.set_use_responses_by_default = lambda use: None  # the endpoint speaks chat completions only
    _config.set_default_openai_api = lambda api: None

    class OpenAIResponsesModel(OpenAIChatCompletionsModel):
        def __init__(self, model: Any, openai_client: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(model, openai_client)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").split(".")[0] == "agents" and "OpenAIResponsesModel" in vars(module):
            module.OpenAIResponsesModel = OpenAIResponsesModel
