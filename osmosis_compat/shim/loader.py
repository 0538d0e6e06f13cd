"""Creating the ``osmosis_ai.*`` modules the finder found: aliases, merged (lazy) modules, unavailable ones.

Imported on the first ``osmosis_ai`` import, never at interpreter start (see :mod:`.finder`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

from .names import Entry, exported_names, lookup, resolve_attribute, stub_file

__all__ = ["ShimLoader", "spec_for"]


class _LazyModule(types.ModuleType):
    """A synthetic module whose attributes resolve on first access from an export table."""

    def __getattr__(self, name: str) -> Any:
        try:
            value = resolve_attribute(self.__name__, name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(exported_names(self.__name__)))


class ShimLoader(importlib.abc.Loader):
    """Loads one table entry: an alias becomes the osmosis-compat module itself, a merged module a
    :class:`_LazyModule`, an unavailable one raises ``ImportError`` with the reason."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _LazyModule(spec.name)
        if spec.submodule_search_locations is not None:
            module.__path__ = []  # a package: submodules are found by the finder, not on disk
        return module

    def exec_module(self, module: types.ModuleType) -> None:
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


_LOADER = ShimLoader()


def spec_for(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """The module spec of an ``osmosis_ai.*`` name osmosis-compat serves (``None`` for names it does not).

    Merged modules get the typing stub that describes them as their origin, so ``module.__file__`` names a real
    file (tools that locate a module by ``__file__`` — IDEs, coverage, ``inspect`` — find its names there).
    """
    entry: Entry | None = lookup(fullname)
    if entry is None:
        return None
    origin = stub_file(fullname) if entry.target is None and entry.unavailable is None else None
    spec = importlib.machinery.ModuleSpec(fullname, _LOADER, origin=origin, is_package=entry.is_package)
    spec.has_location = origin is not None
    return spec
