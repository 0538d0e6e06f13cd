"""A meta-path finder that serves the ``osmosis_ai.*`` module names from osmosis-compat.

Rules (documented in docs/import-shim.md):

- ``OSMOSIS_COMPAT_SHIM=auto`` (default): if a real ``osmosis_ai`` package is importable from ``sys.path``, the
  finder steps aside and the real package is used; otherwise osmosis-compat serves the names.
- ``OSMOSIS_COMPAT_SHIM=force``: osmosis-compat serves the names even if the real package is installed.
- ``OSMOSIS_COMPAT_SHIM=off``: the finder is not installed (``import osmosis_ai`` then finds the real package
  or fails).

Stdlib only: this module is imported at every interpreter start.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Any

ENV_VAR = "OSMOSIS_COMPAT_SHIM"
ROOT = "osmosis_ai"

__all__ = ["ENV_VAR", "OsmosisAIFinder", "install", "real_osmosis_ai_installed", "shim_mode", "uninstall"]


def shim_mode() -> str:
    """``"auto"``, ``"force"`` or ``"off"`` from :data:`ENV_VAR` (unknown values mean ``"auto"``)."""
    mode = os.environ.get(ENV_VAR, "auto").strip().lower()
    return mode if mode in {"auto", "force", "off"} else "auto"


def real_osmosis_ai_installed() -> bool:
    """Whether a real ``osmosis_ai`` package can be found on ``sys.path`` (ignoring this finder)."""
    return importlib.machinery.PathFinder.find_spec(ROOT) is not None


class _LazyModule(types.ModuleType):
    """A synthetic module whose attributes resolve on first access from an export table."""

    def __getattr__(self, name: str) -> Any:
        from .names import resolve_attribute  # deferred: keep interpreter start-up cheap

        try:
            value = resolve_attribute(self.__name__, name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        from .names import exported_names

        return sorted(set(super().__dir__()) | set(exported_names(self.__name__)))


class OsmosisAIFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the ``osmosis_ai.*`` names listed in :mod:`osmosis_compat.shim.names`."""

    def __init__(self) -> None:
        self._defer_to_real: bool | None = None

    def _stepping_aside(self) -> bool:
        if self._defer_to_real is None:
            self._defer_to_real = shim_mode() == "auto" and real_osmosis_ai_installed()
        return self._defer_to_real

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != ROOT and not fullname.startswith(ROOT + "."):
            return None
        if self._stepping_aside():
            return None
        from .names import lookup

        entry = lookup(fullname)
        if entry is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=entry.is_package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _LazyModule(spec.name)
        if spec.submodule_search_locations is not None:
            module.__path__ = []  # a package: submodules are found by this finder, not on disk
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        from .names import lookup

        entry = lookup(module.__name__)
        assert entry is not None
        if entry.unavailable is not None:
            raise ImportError(entry.unavailable, name=module.__name__)
        if entry.target is not None:
            # A plain alias: the import system re-reads sys.modules after exec_module, so the importer gets the
            # real module object itself (its own __spec__ and globals intact, monkeypatching works).
            sys.modules[module.__name__] = importlib.import_module(entry.target)
            return
        module.__dict__.update(entry.static_attributes())


_finder: OsmosisAIFinder | None = None


def install() -> OsmosisAIFinder | None:
    """Put the finder first on ``sys.meta_path`` (idempotent); ``None`` when ``OSMOSIS_COMPAT_SHIM=off``."""
    global _finder
    if shim_mode() == "off":
        return None
    if _finder is None:
        _finder = OsmosisAIFinder()
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return _finder


def uninstall() -> None:
    """Remove the finder (tests)."""
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
