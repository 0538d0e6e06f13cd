"""Finding the Python files to migrate: default excludes, ``--exclude`` globs and ``.gitignore`` files.

Explicitly named files are always taken (as ruff and black do); absolute globs (the configuration's anchored
patterns, :mod:`codemods.config`) match absolute paths; directories are walked with the excludes applied
to every directory and file below them. ``.gitignore`` support covers the common syntax: blank lines and ``#``
comments, ``!`` negation, a trailing ``/`` (directories only), a leading or inner ``/`` (anchored to the
``.gitignore``'s directory), ``*``, ``?``, ``[…]`` and ``**``.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", "env", "virtualenv", ".tox", ".nox", "build", "dist",
    "site-packages", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs",
    "*.egg-info", "_build", "buck-out",
)
PY_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _glob_to_regex(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = glob.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class GitIgnore:
    """The patterns of one ``.gitignore`` file, relative to its directory."""

    def __init__(self, base: str, lines: Iterable[str]) -> None:
        self.base = base
        self.patterns: list[_Pattern] = []
        for raw in lines:
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip() or line.startswith("#"):
                continue
            line = line.rstrip(" ")
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            if line.startswith("\\"):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            self.patterns.append(_Pattern(re.compile(_glob_to_regex(line) + r"\Z"), negate, dir_only, anchored))

    @classmethod
    def load(cls, directory: str) -> Optional["GitIgnore"]:
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return cls(directory, fh.readlines())
        except OSError:
            return None

    def match(self, path: str, is_dir: bool) -> Optional[bool]:
        """True = ignored, False = re-included by ``!``, None = no pattern says anything."""
        rel = os.path.relpath(path, self.base).replace(os.sep, "/")
        if rel.startswith(".."):
            return None
        name = rel.rsplit("/", 1)[-1]
        verdict: Optional[bool] = None
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            target = rel if p.anchored else name
            if p.regex.match(target):
                verdict = not p.negate
        return verdict


class _Excludes:
    """The exclude globs, compiled once per walk: relative globs match an entry's name or its path relative to the
    walked root (also as a directory above it: ``glob/*``); an absolute glob (a configuration's pattern anchored at
    its ``pyproject.toml``) matches its absolute path. Each kind is one alternation of :func:`fnmatch.translate`'s
    patterns (every one ends with ``\\Z``), so one regex match per kind answers what a ``fnmatchcase`` call per
    glob and kind answered (the walk of a 12,000-file site-packages spent most of its ~2 s there)."""

    def __init__(self, globs: Sequence[str]) -> None:
        rel = [g.rstrip("/") for g in globs if not os.path.isabs(g.rstrip("/"))]
        full = [g.rstrip("/").replace(os.sep, "/") for g in globs if os.path.isabs(g.rstrip("/"))]
        self.rel = self._compile(rel)
        self.rel_below = self._compile([g + "/*" for g in rel])
        self.full = self._compile([*full, *(g + "/*" for g in full)])

    @staticmethod
    def _compile(globs: Sequence[str]) -> Optional[re.Pattern[str]]:
        return re.compile("|".join(fnmatch.translate(g) for g in globs)) if globs else None

    def __call__(self, rel: str, name: str, path: str) -> bool:
        if self.rel is not None and (self.rel.match(name) or self.rel.match(rel) or self.rel_below.match(rel)):
            return True
        return self.full is not None and self.full.match(os.path.abspath(path).replace(os.sep, "/")) is not None


def iter_python_files(
    paths: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    use_default_excludes: bool = True,
    respect_gitignore: bool = True,
) -> Iterator[str]:
    """Yield the Python files under ``paths`` (sorted per directory, each once)."""
    globs = [*(DEFAULT_EXCLUDES if use_default_excludes else ()), *exclude]
    seen: set[str] = set()
    for root in paths:
        if os.path.isfile(root):
            real = os.path.realpath(root)
            if real not in seen:
                seen.add(real)
                yield root
            continue
        if not os.path.isdir(root):
            continue
        ignores: list[GitIgnore] = []
        if respect_gitignore:
            # .gitignore files of the enclosing directories, up to the repository root
            parent = os.path.abspath(root)
            chain = []
            while True:
                gi = GitIgnore.load(parent)
                if gi is not None:
                    chain.append(gi)
                if os.path.exists(os.path.join(parent, ".git")):  # a directory, or a file (worktree, submodule)
                    break
                up = os.path.dirname(parent)
                if up == parent:
                    chain = [g for g in chain if g.base == os.path.abspath(root)]  # not in a repo: own only
                    break
                parent = up
            ignores = list(reversed(chain))
        yield from _walk(root, root, "", _Excludes(globs), ignores, respect_gitignore, seen)


def _ignored(path: str, is_dir: bool, ignores: Sequence[GitIgnore]) -> bool:
    verdict = False
    for gi in ignores:  # outer first, inner files override
        v = gi.match(os.path.abspath(path), is_dir)
        if v is not None:
            verdict = v
    return verdict


def _walk(
    top: str, root: str, prefix: str, excluded: _Excludes, ignores: list[GitIgnore], gitignore: bool, seen: set[str],
) -> Iterator[str]:
    """The files below ``top``, whose path relative to ``root`` is ``prefix`` (``""`` or ending with ``/``)."""
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except OSError:
        return
    if gitignore and top != root:
        gi = GitIgnore.load(os.path.abspath(top))
        if gi is not None:
            ignores = [*ignores, gi]
    real_top: Optional[str] = None  # realpath of top, for its entries that are not symbolic links (POSIX)
    for entry in entries:
        rel = prefix + entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if excluded(rel, entry.name, entry.path):
            continue
        if is_dir:
            if os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                continue  # a virtualenv under any name
            if ignores and _ignored(entry.path, True, ignores):
                continue
            yield from _walk(entry.path, root, rel + "/", excluded, ignores, gitignore, seen)
        elif entry.name.endswith(PY_SUFFIXES) and entry.is_file():
            if ignores and _ignored(entry.path, False, ignores):
                continue
            if os.path is posixpath and not entry.is_symlink():
                # realpath(top/name) of a name that is no link: one lstat per directory, not one per path component
                if real_top is None:
                    real_top = os.path.realpath(top)
                real = os.path.join(real_top, entry.name)
            else:
                real = os.path.realpath(entry.path)
            if real in seen:
                continue
            seen.add(real)
            yield entry.path
