"""The ``osmosis-ai`` requirements a project declares, read as what they are, and version specifiers.

Sources, in the order one directory is read (the first that declares ``osmosis-ai`` is the declaration):

* ``pyproject.toml``, parsed as TOML, its **dependency tables only**: ``[project] dependencies``,
  ``[tool.poetry.dependencies]``, ``[project.optional-dependencies]``, ``[dependency-groups]`` (PEP 735),
  Poetry's groups and ``dev-dependencies``, ``[tool.pdm.dev-dependencies]``, ``[tool.uv] dev-dependencies``,
  Hatch environments' ``dependencies`` / ``extra-dependencies``. Never ``[project.scripts]`` or any other table;
* ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]``;
* ``setup.py``: a literal ``install_requires=[…]`` / ``extras_require={…}`` of the ``setup(…)`` call (or a
  module-level name bound to such a literal);
* ``requirements.txt``, other ``requirements*.txt``, ``requirements/*.txt``: comments, line continuations,
  per-line options (``--hash``), ``-r``/``--requirement`` includes (followed) and ``-c``/``--constraint`` files
  (their ``osmosis-ai`` constraints narrow the requirement, as pip applies them); ``-e`` lines are skipped.

A requirement is PEP 508 (``osmosis-ai[server,strands]>=0.3.2; python_version >= "3.10"``; the environment marker
is kept and shown, not evaluated), or Poetry's (``^0.2.20``, ``~0.2``, ``0.2.31``, ``*``, ``||`` alternatives).
No third-party parser: ``packaging`` is not a dependency of osmosis-compat, and release versions are all that a
target decision needs.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Iterator, Optional

from codemods.config import ConfigError, read_toml, table

NAME = "osmosis-ai"
_PEP508 = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^\]]*)\])?\s*(?P<rest>.*)\Z", re.S)
_CLAUSE = re.compile(r"\s*(===|==|~=|!=|>=|<=|>|<|\^|~|=)?\s*v?(\d+(?:\.\d+)*)(\.\*)?[A-Za-z0-9.+-]*\s*\Z")
_INCLUDE = re.compile(r"(-r|--requirement|-c|--constraint)(?:\s+|=)(\S+)")


def canonical(name: str) -> str:
    """PEP 503 normalised project name (``Osmosis_AI`` → ``osmosis-ai``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """One declaration of ``osmosis-ai``: where (``file``, 1-based ``line``, 0 if unknown; ``where`` names the
    table or the include chain), the text as written, extras, the version specifier (PEP 440 or Poetry; ``""``
    for none), an environment marker and the constraints of ``-c`` files that narrow it."""

    file: str
    line: int
    where: str
    text: str
    extras: tuple[str, ...] = ()
    spec: str = ""
    marker: str = ""
    constraints: tuple["Requirement", ...] = ()

    @property
    def effective_spec(self) -> str:
        """The specifier narrowed by the constraints (their clauses joined by commas)."""
        return ",".join(s for s in (self.spec, *(c.spec for c in self.constraints)) if s)

    def describe(self, cwd: Optional[str] = None) -> str:
        """``pyproject.toml:12 ([project] dependencies): osmosis-ai[server]>=0.3.2`` (path relative to ``cwd``
        when it lies below it)."""
        path = display_path(self.file, cwd)
        loc = f"{path}:{self.line}" if self.line else path
        where = f" ({self.where})" if self.where else ""
        extra = "".join(f" + constraint {c.describe(cwd)}" for c in self.constraints)
        return f"{loc}{where}: {self.text}{extra}"


def display_path(path: str, cwd: Optional[str] = None) -> str:
    """``path`` relative to ``cwd`` (default: the current directory) when it lies below it, else absolute."""
    cwd = cwd or os.getcwd()
    rel = os.path.relpath(os.path.abspath(path), cwd)
    return path if rel.startswith("..") else rel


def parse_requirement(text: str) -> Optional[tuple[str, tuple[str, ...], str, str]]:
    """(canonical name, extras, specifier, marker) of a PEP 508 string, or ``None`` if it is not one. A direct
    URL reference (``name @ url``) has no specifier."""
    m = _PEP508.match(text)
    if m is None:
        return None
    extras = tuple(sorted(canonical(e.strip()) for e in (m.group("extras") or "").split(",") if e.strip()))
    rest = m.group("rest").strip()
    marker = ""
    if rest.startswith("@"):
        url, _, marker = rest.partition(" ;")
        return canonical(m.group("name")), extras, "", marker.strip()
    spec, _, marker = rest.partition(";")
    spec = spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    if spec and not re.match(r"[=<>!~^]", spec):
        return None  # not a requirement (e.g. prose in a list)
    return canonical(m.group("name")), extras, spec, marker.strip()


# --------------------------------------------------------------------------------------------- specifiers


def version_tuple(text: str) -> tuple[int, ...]:
    """The release part of a version (``0.3.0rc1`` → ``(0, 3, 0)``)."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def _bump(v: tuple[int, ...], index: int) -> tuple[int, ...]:
    """``v`` with component ``index`` incremented and the rest dropped (the exclusive upper bound of a range)."""
    v = v + (0,) * (index + 1 - len(v))
    return v[:index] + (v[index] + 1,)


def _below(v: tuple[int, ...], upper: tuple[int, ...]) -> bool:
    a, b = _pad(v, upper)
    return a < b


def _clause_admits(op: str, bound: tuple[int, ...], wildcard: bool, v: tuple[int, ...]) -> bool:
    if wildcard:
        prefix = v[:len(bound)] + (0,) * (len(bound) - len(v[:len(bound)]))
        return (prefix == bound) == (op != "!=")
    a, b = _pad(v, bound)
    if op in ("==", "===", "=", ""):
        return a == b
    if op == "!=":
        return a != b
    if op == ">=":
        return a >= b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    if op == "~=":  # >= bound, and the same release series (all components but the last)
        return a >= b and v[:len(bound) - 1] + (0,) * max(0, len(bound) - 1 - len(v)) == bound[:-1]
    if op == "^":  # Poetry caret: below the next change of the first non-zero component
        first = next((i for i, x in enumerate(bound) if x), len(bound) - 1)
        return a >= b and _below(v, _bump(bound, first))
    if op == "~":  # Poetry tilde: ~1.2.3 → <1.3; ~1 → <2
        return a >= b and _below(v, _bump(bound, 1 if len(bound) >= 2 else 0))
    return False


def admits(spec: str, version: tuple[int, ...]) -> bool:
    """Whether the specifier ``spec`` (PEP 440 clauses separated by commas; Poetry's forms and ``||``
    alternatives too) admits the release ``version``. An empty spec or ``*`` admits everything; a clause that
    cannot be read admits everything (it says nothing the tool understands)."""
    for alternative in (spec or "").split("||"):
        ok = True
        for clause in alternative.split(","):
            clause = clause.strip()
            if not clause or clause == "*":
                continue
            m = _CLAUSE.match(clause)
            if m is None:
                continue
            op = m.group(1) or ""
            if not _clause_admits(op, tuple(int(x) for x in m.group(2).split(".")), bool(m.group(3)), version):
                ok = False
                break
        if ok:
            return True
    return False


# --------------------------------------------------------------------------------------------- sources


def _line_of(path: str, needle: "str | re.Pattern[str]") -> int:
    """1-based line of the first line holding ``needle`` (a string, or a pattern matched at the line's start) in
    the file, 0 if none: TOML/INI parsers keep no positions."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                if needle in line if isinstance(needle, str) else needle.match(line):
                    return n
    except OSError:
        pass
    return 0


def _from_pep508(path: str, where: str, text: str, line: Optional[int] = None) -> Optional[Requirement]:
    parsed = parse_requirement(text)
    if parsed is None or parsed[0] != NAME:
        return None
    _, extras, spec, marker = parsed
    return Requirement(path, _line_of(path, text) if line is None else line, where, text.strip(), extras, spec, marker)


def _poetry(path: str, where: str, deps: Any) -> Iterator[Requirement]:
    if not isinstance(deps, dict):
        return
    for key, value in deps.items():
        if canonical(key) != NAME:
            continue
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            if isinstance(entry, str):
                spec, extras, marker = entry, (), ""
            elif isinstance(entry, dict):
                spec = str(entry.get("version", ""))
                extras = tuple(sorted(canonical(e.strip()) for e in entry.get("extras", []) if isinstance(e, str)))
                marker = str(entry.get("markers", ""))
            else:
                continue
            spec = spec.strip()
            if re.match(r"v?\d", spec):
                spec = "==" + spec  # Poetry: a bare version is an exact one
            text = f"{key} = {entry!r}" if not isinstance(entry, str) else f'{key} = "{entry}"'
            line = _line_of(path, re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*="))
            yield Requirement(path, line, where, text, extras, spec, marker)


def _strings_of(path: str, where: str, values: Any) -> Iterator[Requirement]:
    if not isinstance(values, list):
        return
    for v in values:
        if isinstance(v, str):
            req = _from_pep508(path, where, v)
            if req is not None:
                yield req


def from_pyproject(path: str) -> Iterator[Requirement]:
    """The ``osmosis-ai`` declarations of a ``pyproject.toml``'s dependency tables, main dependencies first."""
    doc = read_toml(path)
    if doc is None:
        return
    project = table(doc, "project") or {}
    poetry = table(doc, "tool", "poetry") or {}
    yield from _strings_of(path, "[project] dependencies", project.get("dependencies"))
    yield from _poetry(path, "[tool.poetry.dependencies]", poetry.get("dependencies"))
    for extra, deps in (table(doc, "project", "optional-dependencies") or {}).items():
        yield from _strings_of(path, f"[project.optional-dependencies] {extra}", deps)
    for group, deps in (table(doc, "dependency-groups") or {}).items():
        yield from _strings_of(path, f"[dependency-groups] {group}", deps)
    for group, spec in (table(poetry, "group") or {}).items():
        if isinstance(spec, dict):
            yield from _poetry(path, f"[tool.poetry.group.{group}.dependencies]", spec.get("dependencies"))
    yield from _poetry(path, "[tool.poetry.dev-dependencies]", poetry.get("dev-dependencies"))
    for group, deps in (table(doc, "tool", "pdm", "dev-dependencies") or {}).items():
        yield from _strings_of(path, f"[tool.pdm.dev-dependencies] {group}", deps)
    yield from _strings_of(path, "[tool.uv] dev-dependencies", (table(doc, "tool", "uv") or {}).get("dev-dependencies"))
    for env, spec in (table(doc, "tool", "hatch", "envs") or {}).items():
        if isinstance(spec, dict):
            for key in ("dependencies", "extra-dependencies"):
                yield from _strings_of(path, f"[tool.hatch.envs.{env}] {key}", spec.get(key))


def from_setup_cfg(path: str) -> Iterator[Requirement]:
    """``[options] install_requires`` and ``[options.extras_require]`` of a ``setup.cfg``."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError, OSError):
        return
    sections = [("options", "install_requires", "[options] install_requires")]
    if parser.has_section("options.extras_require"):
        sections += [("options.extras_require", k, f"[options.extras_require] {k}")
                     for k in parser.options("options.extras_require")]
    for section, key, where in sections:
        if parser.has_option(section, key):
            for line in parser.get(section, key).splitlines():
                req = _from_pep508(path, where, line.split(" #", 1)[0]) if line.strip() else None
                if req is not None:
                    yield req


def _literal_strings(node: ast.AST, names: dict[str, ast.AST]) -> list[str]:
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def from_setup_py(path: str) -> Iterator[Requirement]:
    """Literal ``install_requires`` / ``extras_require`` of the ``setup(…)`` call in a ``setup.py``."""
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, RecursionError):
        return
    names = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == "setup"):
            continue
        for kw in call.keywords:
            if kw.arg == "install_requires":
                for s in _literal_strings(kw.value, names):
                    req = _from_pep508(path, "setup(install_requires=…)", s)
                    if req:
                        yield req
            elif kw.arg == "extras_require":
                value = names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                if isinstance(value, ast.Dict):
                    for k, v in zip(value.keys, value.values):
                        label = k.value if isinstance(k, ast.Constant) else "?"
                        for s in _literal_strings(v, names):
                            req = _from_pep508(path, f"setup(extras_require={{{label!r}: …}})", s)
                            if req:
                                yield req


def _logical_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a requirements file: comments dropped, ``\\`` continuations joined."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            raw = fh.read().splitlines()
    except OSError:
        return
    pending, start = "", 0
    for n, line in enumerate(raw, 1):
        if not pending:
            start = n
        line = re.sub(r"(^|\s)#.*", "", line)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text, pending = (pending + line).strip(), ""
        if text:
            yield start, text


def from_requirements_file(path: str, _seen: Optional[set[str]] = None, _via: str = "") -> Iterator[Requirement]:
    """The ``osmosis-ai`` lines of a requirements file and the files it includes with ``-r``, each narrowed by
    the ``osmosis-ai`` lines of its ``-c`` constraint files."""
    seen = _seen if _seen is not None else set()
    real = os.path.realpath(path)
    if real in seen:
        return
    seen.add(real)
    found: list[Requirement] = []
    constraints: list[Requirement] = []
    for n, text in _logical_lines(path):
        include = _INCLUDE.match(text)
        if include:
            target = os.path.join(os.path.dirname(path), include.group(2))
            if include.group(1) in ("-r", "--requirement"):
                found += from_requirements_file(target, seen, f"{_via}{os.path.basename(path)} -r ")
            else:
                constraints += from_requirements_file(target, seen, "")
            continue
        if text.startswith("-"):
            continue  # -e / --index-url / other options
        text = re.split(r"\s--?[a-z]", " " + text)[0].strip()  # per-line options (--hash=…)
        req = _from_pep508(path, _via.rstrip(), text, line=n)
        if req is not None:
            found.append(req)
    for req in found:
        if constraints:
            req = replace(req, constraints=(*req.constraints, *constraints))
        yield req


def _requirement_files(directory: str) -> list[str]:
    out = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return out
    top = [n for n in names if n.startswith("requirements") and n.endswith(".txt")]
    out += sorted(top, key=lambda n: (n != "requirements.txt", n))
    sub = os.path.join(directory, "requirements")
    if os.path.isdir(sub):
        try:
            out += [os.path.join("requirements", n) for n in sorted(os.listdir(sub)) if n.endswith(".txt")]
        except OSError:
            pass
    return [os.path.join(directory, n) for n in out if os.path.isfile(os.path.join(directory, n))]


def declared_in(directory: str) -> Optional[Requirement]:
    """The first ``osmosis-ai`` declaration of one directory's project files (order: module docstring), if any.
    Raises :class:`codemods.config.ConfigError` for a ``pyproject.toml`` that is not valid TOML."""
    readers = [(os.path.join(directory, "pyproject.toml"), from_pyproject),
               (os.path.join(directory, "setup.cfg"), from_setup_cfg),
               (os.path.join(directory, "setup.py"), from_setup_py)]
    readers += [(p, from_requirements_file) for p in _requirement_files(directory)]
    for path, reader in readers:
        if os.path.isfile(path):
            for req in reader(path):
                return req
    return None


__all__ = ["ConfigError", "Requirement", "admits", "declared_in", "parse_requirement", "version_tuple"]
