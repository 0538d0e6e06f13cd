"""Import a framework's LiteLLM model module without loading litellm until litellm is really used.

Why: ``strands.models.litellm`` and ``agents.extensions.models.litellm_model`` import litellm at module level,
and ``import litellm`` alone costs ~2.5 s and ~170 MB of RSS (it builds hundreds of pydantic models and parses its
model-cost JSON). Our rollout models subclass those framework classes (``isinstance(model, LiteLLMModel)`` must
hold) but talk to the controller through a pooled OpenAI client, so on the normal path litellm is never called.

How: while the framework module is imported, ``sys.modules`` briefly holds stand-ins for ``litellm`` and the two
submodules those framework modules import names from (``litellm.exceptions``, ``litellm.utils``). The stand-ins
are removed right after, so any later ``import litellm`` (by the user, or by anything else) loads the real package.
What the framework module kept is resolved on first use:

- its ``litellm`` global forwards attribute access to the real package (importing it then);
- names taken from ``litellm.utils`` are forwarding functions;
- exception classes taken from ``litellm.exceptions`` are inert placeholders. litellm can only raise after it
  was loaded, and loading goes through :func:`load_litellm`, which swaps the real objects into the framework
  module first — so its ``except ContextWindowExceededError`` clauses see the real class.

If litellm is already imported, or the framework module needs anything else from litellm at import time, the
module is simply imported normally (correct, just heavier).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import types
from typing import Any

__all__ = ["import_deferring_litellm", "load_litellm"]

_lock = threading.RLock()
#: (module object, global name, "litellm.submodule", attribute) to resolve when litellm is loaded.
_pending: list[tuple[types.ModuleType, str, str, str]] = []


def load_litellm() -> types.ModuleType:
    """Import the real litellm (offline cost map, quiet errors) and resolve every deferred binding."""
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        for name in ("litellm.utils", "litellm.exceptions", "litellm"):
            if isinstance(sys.modules.get(name), _StandIn):
                del sys.modules[name]
        litellm = importlib.import_module("litellm")
        litellm.suppress_debug_info = True  # P2: no "Give Feedback / Get Help" banners on stdout
        while _pending:
            module, global_name, submodule, attribute = _pending.pop()
            if submodule == "litellm":
                setattr(module, global_name, litellm)
            else:
                setattr(module, global_name, getattr(importlib.import_module(submodule), attribute))
        return litellm


class _StandIn(types.ModuleType):
    """Base of the stand-in modules (lets :func:`load_litellm` recognise and drop them)."""


class _DeferredLitellm(_StandIn):
    """The framework module's ``litellm`` global: the real package, imported on first attribute access."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(load_litellm(), name)


class _PendingError(Exception):
    """Placeholder for a litellm exception class; replaced by the real class before litellm can raise."""


class _NamesFrom(_StandIn):
    """``litellm.exceptions`` / ``litellm.utils`` during the framework import: hands out resolvable names."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        submodule = self.__name__
        if submodule == "litellm.exceptions":
            return type(name, (_PendingError,), {"__module__": __name__})

        def forward(*args: Any, **kwargs: Any) -> Any:
            load_litellm()
            return getattr(importlib.import_module(submodule), name)(*args, **kwargs)

        forward.__name__ = forward.__qualname__ = name
        forward._osmosis_deferred = True  # type: ignore[attr-defined]
        return forward


def _is_placeholder(value: Any) -> bool:
    if isinstance(value, _DeferredLitellm):
        return True
    if isinstance(value, type) and issubclass(value, _PendingError) and value is not _PendingError:
        return True
    return callable(value) and getattr(value, "_osmosis_deferred", False) is True


def import_deferring_litellm(module_name: str) -> types.ModuleType:
    """Import ``module_name`` (a framework module that imports litellm) without loading litellm yet.

    Falls back to a normal import when litellm is already loaded or the deferral cannot cover the module.
    """
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        if module_name in sys.modules:
            return sys.modules[module_name]
        if "litellm" in sys.modules and not isinstance(sys.modules["litellm"], _StandIn):
            load_litellm()  # already paid for: just make sure it is quiet
            return importlib.import_module(module_name)
        stand_ins = {
            "litellm": _DeferredLitellm("litellm"),
            "litellm.exceptions": _NamesFrom("litellm.exceptions"),
            "litellm.utils": _NamesFrom("litellm.utils"),
        }
        sys.modules.update(stand_ins)
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            # The module wanted more of litellm than the stand-ins offer: import it for real.
            sys.modules.pop(module_name, None)
            _drop(stand_ins)
            load_litellm()
            return importlib.import_module(module_name)
        finally:
            _drop(stand_ins)
        for global_name, value in list(vars(module).items()):
            if not _is_placeholder(value):
                continue
            if isinstance(value, _DeferredLitellm):
                _pending.append((module, global_name, "litellm", ""))
            elif isinstance(value, type):
                _pending.append((module, global_name, "litellm.exceptions", value.__name__))
            else:
                _pending.append((module, global_name, "litellm.utils", value.__name__))
        return module


def _drop(stand_ins: dict[str, types.ModuleType]) -> None:
    for name, stand_in in stand_ins.items():
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
