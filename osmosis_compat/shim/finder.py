"""A meta-path finder that serves the ``osmosis_ai.*`` module names from osmosis-compat.

Rules (documented in docs/import-shim.md):

- ``OSMOSIS_COMPAT_SHIM=auto`` (default): if a real ``osmosis_ai`` package is importable from ``sys.path``, the
  finder steps aside and the real package is used; otherwise osmosis-compat serves the names.
- ``OSMOSIS_COMPAT_SHIM=force``: osmosis-compat serves the names even if the real package is installed.
- ``OSMOSIS_COMPAT_SHIM=off``: the finder is not installed (``import osmosis_ai`` then finds the real package
  or fails).

Start-up cost: ``osmosis_compat_shim.pth`` runs at every interpreter start of the environment. It imports
nothing: it puts a placeholder object on ``sys.meta_path`` whose ``find_spec`` answers ``None`` for every name
but ``osmosis_ai.*``, and on the first of those imports this module (:func:`activate_from_hook`). This module
itself uses only ``os`` and ``sys`` at import time — no ``importlib.abc`` (it drags in pathlib, re, tempfile,
typing …), no ``typing``, not even ``from __future__`` — and the name table, the loader and
``importlib.machinery`` come only with the first served name. ``bench/shim_startup.py`` measures the cost;
``tests/shim/test_startup.py`` keeps it at zero extra modules.
"""

import os
import sys

ENV_VAR = "OSMOSIS_COMPAT_SHIM"
ROOT = "osmosis_ai"

__all__ = [
    "ENV_VAR", "HOOK_CLASS_NAME", "OsmosisAIFinder", "activate_from_hook", "install", "real_osmosis_ai_installed",
    "shim_mode", "uninstall",
]


def shim_mode() -> str:
    """``"auto"``, ``"force"`` or ``"off"`` from :data:`ENV_VAR` (unknown values mean ``"auto"``)."""
    mode = os.environ.get(ENV_VAR, "auto").strip().lower()
    return mode if mode in ("auto", "force", "off") else "auto"


def real_osmosis_ai_installed() -> bool:
    """Whether a real ``osmosis_ai`` package can be found on ``sys.path`` (ignoring this finder)."""
    import importlib.machinery

    return importlib.machinery.PathFinder.find_spec(ROOT) is not None


class OsmosisAIFinder:
    """Finds the ``osmosis_ai.*`` names listed in :mod:`osmosis_compat.shim.names`.

    A plain class rather than an ``importlib.abc.MetaPathFinder`` subclass: ``sys.meta_path`` only needs
    ``find_spec``, and the ABC's module costs ~14 ms of start-up in every Python process. Loading is done by
    :class:`osmosis_compat.shim.loader.ShimLoader`, imported on first use.
    """

    def __init__(self) -> None:
        self._defer_to_real: "bool | None" = None  # decided on the first osmosis_ai import, then kept

    def _stepping_aside(self) -> bool:
        if self._defer_to_real is None:
            self._defer_to_real = shim_mode() == "auto" and real_osmosis_ai_installed()
        return self._defer_to_real

    # Annotations are strings: evaluating them would need typing/importlib.machinery at start-up.
    def find_spec(self, fullname: str, path: "object" = None, target: "object" = None) -> "object | None":
        """A spec for an ``osmosis_ai.*`` name osmosis-compat serves; ``None`` for every other name (at once)."""
        if fullname != ROOT and not fullname.startswith("osmosis_ai."):
            return None
        if self._stepping_aside():
            return None
        from .loader import spec_for

        return spec_for(fullname)

    def invalidate_caches(self) -> None:
        """Part of the meta-path protocol (``importlib.invalidate_caches``); nothing is cached per path."""


HOOK_CLASS_NAME = "OsmosisAIShimHook"
"""Class name of the start-up placeholder that ``osmosis_compat_shim.pth`` puts on ``sys.meta_path``."""


_finder: "OsmosisAIFinder | None" = None


def install() -> "OsmosisAIFinder | None":
    """Put the finder on ``sys.meta_path`` (idempotent) in place of the ``.pth`` placeholder, else first;
    ``None`` when ``OSMOSIS_COMPAT_SHIM=off`` (the placeholder is then removed)."""
    global _finder
    hooks = [i for i, f in enumerate(sys.meta_path) if type(f).__name__ == HOOK_CLASS_NAME]
    if shim_mode() == "off":
        for index in reversed(hooks):
            del sys.meta_path[index]
        return None
    if _finder is None:
        _finder = OsmosisAIFinder()
    if _finder in sys.meta_path:
        for index in reversed(hooks):
            del sys.meta_path[index]
    elif hooks:
        # Same index as the placeholder, so an import already walking sys.meta_path sees no shift.
        sys.meta_path[hooks[0]] = _finder
        for index in reversed(hooks[1:]):
            del sys.meta_path[index]
    else:
        sys.meta_path.insert(0, _finder)
    return _finder


def activate_from_hook(fullname: str, path: "object" = None, target: "object" = None) -> "object | None":
    """Called by the ``.pth`` placeholder on the first ``osmosis_ai`` import: swap in the real finder, answer.

    The placeholder (defined inline in ``osmosis_compat_shim.pth``) costs well under a millisecond per
    interpreter start and imports nothing; this module is imported only here.
    """
    finder = install()
    return None if finder is None else finder.find_spec(fullname, path, target)


def uninstall() -> None:
    """Remove the finder (tests)."""
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
