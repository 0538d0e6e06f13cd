"""``module:attr`` references (upstream ``utils/imports.py``, spec §2.14), with upstream's results and error texts.

One addition: a class or instance that osmosis-compat serves under an ``osmosis_ai`` name gets that name from
:func:`to_import_path` (``osmosis_ai.rollout.agent_workflow:AgentWorkflow``, as upstream answers), so paths
recorded by user code read the same on both. The ``osmosis_ai`` name is used only when importing it yields the
very same object (not when the real osmosis-ai is installed and the shim steps aside).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["resolve_object", "to_import_path"]


def resolve_object(ref: str | Any) -> Any:
    """Resolve ``"pkg.module:attr"`` to the object; non-strings are returned as is.

    As upstream: split on the last ``:``; ``ValueError`` without one; the module's own import errors propagate;
    ``ImportError("<module> does not export '<attr>'")`` when the attribute is missing or ``None`` (``attr`` is
    one name: no dotted paths).
    """
    if not isinstance(ref, str):
        return ref
    if ":" not in ref:
        raise ValueError(f"Invalid import path '{ref}' \u2014 expected 'module:attr' format")
    module_path, attr_name = ref.rsplit(":", 1)
    module = importlib.import_module(module_path)
    obj = getattr(module, attr_name, None)
    if obj is None:
        raise ImportError(f"{module_path} does not export '{attr_name}'")
    return obj


def to_import_path(obj: Any) -> str:
    """``"module:attr"`` for a class (``__module__:__qualname__``) or a module-level instance (found by identity
    among the public names of its type's module); ``ValueError`` otherwise (functions included, as upstream).

    Classes and instances osmosis-compat serves under an ``osmosis_ai`` name get that name.
    """
    if isinstance(obj, type):
        return _public_path(obj.__module__, obj.__qualname__, obj) or f"{obj.__module__}:{obj.__qualname__}"
    obj_module = getattr(type(obj), "__module__", None)
    if obj_module:
        module = sys.modules.get(obj_module)
        if module:
            for name, value in vars(module).items():
                if value is obj and not name.startswith("_"):
                    return _public_path(module.__name__, name, obj) or f"{module.__name__}:{name}"
    raise ValueError(f"Cannot resolve import path for {obj!r}. Ensure it is a class or a module-level variable.")


def _public_path(module_name: str, attr_path: str, obj: Any) -> str | None:
    """The ``osmosis_ai`` path serving ``obj`` (defined at ``module_name:attr_path``), or ``None``."""
    if not module_name.startswith("osmosis_compat.") or "<locals>" in attr_path:
        return None
    # Deferred import: only osmosis-compat's own objects ask the shim's name table (the one place that knows
    # which osmosis_ai module serves which osmosis-compat module).
    from osmosis_compat.shim.names import upstream_modules_for

    for candidate in upstream_modules_for(module_name, attr_path):
        try:
            value: Any = importlib.import_module(candidate)
            for part in attr_path.split("."):
                value = getattr(value, part)
        except (ImportError, AttributeError):
            continue
        if value is obj:
            return f"{candidate}:{attr_path}"
    return None
