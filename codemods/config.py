"""``[tool.osmosis-migrate]`` in ``pyproject.toml``, and the line length TODO markers are wrapped at.

The configuration follows ruff's conventions: it is read from the closest ``pyproject.toml`` *that has a
``[tool.osmosis-migrate]`` table*, looking in the directory of the first PATH and then its parents; command-line
flags override it key by key. Keys (all optional)::

    [tool.osmosis-migrate]
    select = ["OM1", "imports"]     # as --select: rule names or code prefixes (a list, or one comma-separated string)
    ignore = ["OM5"]                # as --ignore
    exclude = ["generated/*"]       # as --exclude (added to the default excludes); --exclude replaces this list
    extend-exclude = ["*_pb2.py"]   # more excludes, kept when --exclude is given
    target = "0.3"                  # as --target: "auto" | "0.2" | "0.3"
    strategy = "auto"               # as --strategy: "auto" | "rewrite" | "wrap"
    line-length = 100               # width of wrapped TODO markers (below)

An exclude pattern with a ``/`` is anchored at the directory of that ``pyproject.toml`` (as ruff anchors it);
one without matches a file or directory name anywhere. An unknown key or a wrong type is a usage error that names
the file and the key.

**Line length** (:func:`line_length_for`): per file, the closest of, directory by directory upwards from the file
(stopping after a repository root, a directory holding ``.git``): ``pyproject.toml``'s
``[tool.osmosis-migrate] line-length``, ruff's ``[tool.ruff.lint.pycodestyle] max-line-length`` or
``[tool.ruff] line-length`` (also in ``ruff.toml`` / ``.ruff.toml``), black's ``[tool.black] line-length``; else
:data:`DEFAULT_LINE_LENGTH` (88, the default of both black and ruff).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_LINE_LENGTH = 88
SECTION = "osmosis-migrate"
_KEYS = ("select", "ignore", "exclude", "extend-exclude", "target", "strategy", "line-length")
_CHOICES = {"target": ("auto", "0.2", "0.3"), "strategy": ("auto", "rewrite", "wrap")}


class ConfigError(ValueError):
    """A ``[tool.osmosis-migrate]`` table that cannot be used (unknown key, wrong type, unreadable TOML)."""


@dataclass(frozen=True)
class MigrateConfig:
    """The ``[tool.osmosis-migrate]`` settings of a tree (``None``: not set there). ``path``: the file read."""

    path: Optional[str] = None
    select: Optional[tuple[str, ...]] = None
    ignore: Optional[tuple[str, ...]] = None
    exclude: Optional[tuple[str, ...]] = None
    extend_exclude: tuple[str, ...] = ()
    target: Optional[str] = None
    strategy: Optional[str] = None
    line_length: Optional[int] = None


def read_toml(path: str) -> Optional[dict[str, Any]]:
    """The TOML document at ``path``; ``None`` when there is no such file. Raises :class:`ConfigError` when it
    does not parse (a broken ``pyproject.toml`` is worth saying, not skipping)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _read_toml(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _read_toml(path: str, _mtime: int, _size: int) -> Optional[dict[str, Any]]:
    # keyed by mtime and size too: a test (or a user) that rewrites the file between runs in one process is re-read
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError:
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def table(doc: Optional[dict[str, Any]], *keys: str) -> Optional[dict[str, Any]]:
    """``doc[k1][k2]…`` when every step is a table, else ``None``."""
    node: Any = doc
    for k in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(k)
    return node if isinstance(node, dict) else None


def start_dir(path: str) -> str:
    """The directory a PATH names, or the one holding the file it names (absolute)."""
    full = os.path.abspath(path)
    return full if os.path.isdir(full) else os.path.dirname(full)


def upwards(directory: str):
    """``directory`` and its parents, stopping after a repository root (a directory holding ``.git``)."""
    while True:
        yield directory
        if os.path.exists(os.path.join(directory, ".git")):
            return
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def _strings(path: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ConfigError(f"{path}: [tool.{SECTION}] {key} must be a list of strings (or one string), not {value!r}")


def _anchored(base: str, globs: Sequence[str]) -> tuple[str, ...]:
    """Globs with a ``/`` (other than a trailing one) anchored at ``base`` as absolute patterns; name globs
    (``migrations``, ``*_pb2.py``) and patterns starting with ``*`` stay as they are (they match anywhere)."""
    out = []
    for g in globs:
        g = g.strip()
        if "/" in g.rstrip("/") and not g.startswith("*") and not os.path.isabs(g):
            g = os.path.join(base, g[2:] if g.startswith("./") else g)
        out.append(g)
    return tuple(out)


def parse_config(path: str, settings: dict[str, Any]) -> MigrateConfig:
    """Validate one ``[tool.osmosis-migrate]`` table (read from ``path``) into a :class:`MigrateConfig`."""
    unknown = sorted(set(settings) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.{SECTION}]: {', '.join(unknown)} "
                          f"(known: {', '.join(_KEYS)})")
    base = os.path.dirname(os.path.abspath(path))
    values: dict[str, Any] = {"path": path}
    for key in ("select", "ignore"):
        if key in settings:
            values[key] = _strings(path, key, settings[key])
    if "exclude" in settings:
        values["exclude"] = _anchored(base, _strings(path, "exclude", settings["exclude"]))
    if "extend-exclude" in settings:
        values["extend_exclude"] = _anchored(base, _strings(path, "extend-exclude", settings["extend-exclude"]))
    for key, choices in _CHOICES.items():
        if key in settings:
            value = settings[key]
            value = str(value) if isinstance(value, float) else value  # target = 0.3 written as a TOML number
            if value not in choices:
                raise ConfigError(f"{path}: [tool.{SECTION}] {key} must be one of {', '.join(choices)}, not {settings[key]!r}")
            values[key] = value
    if "line-length" in settings:
        n = settings["line-length"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ConfigError(f"{path}: [tool.{SECTION}] line-length must be a positive integer, not {n!r}")
        values["line_length"] = n
    return MigrateConfig(**values)


def load_config(paths: Sequence[str]) -> MigrateConfig:
    """The ``[tool.osmosis-migrate]`` of the closest ``pyproject.toml`` above the first of ``paths`` that has
    one (an empty config when none has). Raises :class:`ConfigError` for an invalid table."""
    if not paths:
        return MigrateConfig()
    for directory in upwards(start_dir(paths[0])):
        candidate = os.path.join(directory, "pyproject.toml")
        settings = table(read_toml(candidate), "tool", SECTION)
        if settings is not None:
            return parse_config(candidate, settings)
    return MigrateConfig()


def _positive_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _line_length_in(directory: str) -> Optional[tuple[int, str]]:
    """(line length, where) declared by the config files of one directory, if any."""
    pyproject = os.path.join(directory, "pyproject.toml")
    doc = read_toml(pyproject)
    own = _positive_int((table(doc, "tool", SECTION) or {}).get("line-length"))
    if own:
        return own, f"{pyproject}: [tool.{SECTION}] line-length"
    for name, ruff in (("ruff.toml", read_toml(os.path.join(directory, "ruff.toml"))),
                       (".ruff.toml", read_toml(os.path.join(directory, ".ruff.toml"))),
                       ("pyproject.toml", table(doc, "tool", "ruff"))):
        if ruff is None:
            continue
        where = os.path.join(directory, name) + ("" if name != "pyproject.toml" else ": [tool.ruff]")
        pycodestyle = table(ruff, "lint", "pycodestyle") or table(ruff, "pycodestyle") or {}
        n = _positive_int(pycodestyle.get("max-line-length")) or _positive_int(ruff.get("line-length"))
        if n:
            return n, where
    black = _positive_int((table(doc, "tool", "black") or {}).get("line-length"))
    if black:
        return black, f"{pyproject}: [tool.black] line-length"
    return None


def clear_caches() -> None:
    """Forget the line lengths found so far (a run starts with this: config files may have changed)."""
    _line_length_of_dir.cache_clear()


@functools.lru_cache(maxsize=1024)
def _line_length_of_dir(directory: str) -> tuple[int, str]:
    for d in upwards(directory):
        try:
            found = _line_length_in(d)
        except ConfigError:
            found = None  # a broken pyproject.toml only costs the wrapping its width: the default is used
        if found:
            return found
    return DEFAULT_LINE_LENGTH, "default"


def line_length_for(path: str) -> int:
    """The line length TODO markers in the file at ``path`` are wrapped at (the module docstring says where it
    comes from). Cached per directory until :func:`clear_caches`."""
    return _line_length_of_dir(start_dir(path))[0]
