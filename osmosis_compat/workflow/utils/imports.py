"""``module:attr`` references (upstream ``utils/imports.py``, spec §2.14)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["resolve_object", "to_import_path"]


def resolve_object(ref: Any) -> Any:
    """Resolve ``"pkg.module:attr"`` (dotted attrs allowed) to the object; non-strings are returned as is.

    ``ValueError`` without a ``:``; ``ImportError`` when the module cannot be imported or the attribute is
    missing or ``None``.
    """
    if not isinstance(ref, str):
        return ref
    module_name, sep, attr_path = ref.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"Invalid object reference {ref!r}: expected 'module:attr'")
    module = importlib.import_module(module_name)
    value: Any = module
    for part in attr_path.split("."):
        value = getattr(value, part, None)
        if value is None:
            raise ImportError(f"Cannot resolve {ref!r}: module {module_name!r} has no attribute {attr_path!r}")
    return value


def to_import_path(obj: Any) -> str:
    """``module:qualname`` for a class or function; for an instance, the public module-level binding of its
    type's module that *is* the object. ``ValueError`` when no such path exists."""
    if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if module and qualname and "<locals>" not in qualname:
            return f"{module}:{qualname}"
        raise ValueError(f"{obj!r} has no importable path")
    module_name = type(obj).__module__
    module = sys.modules.get(module_name)
    if module is not None:
        for name, value in vars(module).items():
            if not name.startswith("_") and value is obj:
                return f"{module_name}:{name}"
    raise ValueError(
        f"Cannot find an import path for {type(obj).__name__} instance: bind it to a public name in {module_name}"
    )
