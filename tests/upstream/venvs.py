"""Side virtual environments holding the real osmosis-ai releases, used as test oracles.

The real package is never installed next to osmosis-compat (its ``osmosis_ai`` import shim steps aside when the
real package is present): each release gets its own venv, built on first use and cached between runs. The
install recipes are those of ``spec/frameworks.md`` (appendix), which avoid litellm 1.106.x (it cannot run a
tool-calling rollout beside mcp < 2.2).

- cache: ``$OSMOSIS_COMPAT_UPSTREAM_VENVS`` or ``~/.cache/osmosis-compat/upstream-venvs``; one directory per
  release and recipe hash, so a changed recipe builds a fresh venv; a ``.complete`` marker is written last, so a
  build interrupted half-way is redone;
- Python: osmosis-ai ≥ 0.2.25 requires Python ≥ 3.12. ``$OSMOSIS_COMPAT_UPSTREAM_PYTHON`` names an interpreter;
  otherwise ``python3.12``/``python3.13`` on ``PATH`` or in ``~/.pyenv/versions``;
- builds of both releases start together the first time either is asked for (they take 1–2 minutes each);
- where no such interpreter exists the oracle tests skip, naming what is missing — except under ``CI=true``,
  where they fail: CI must run them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

__all__ = [
    "RECIPES",
    "UpstreamUnavailable",
    "prebuild",
    "require_upstream",
    "upstream_env",
    "upstream_python",
    "upstream_venv",
]

#: Install steps per release, run with the venv's pip (``{venv}`` is replaced by the venv path).
RECIPES: dict[str, tuple[tuple[str, ...], ...]] = {
    "0.3.8": (
        # parquet: pyarrow, so `osmosis dataset validate` checks Parquet files too (the dataset-check oracle)
        ("install", "osmosis-ai[server,strands,openai-agents,parquet]==0.3.8"),
        ("install", "--no-deps", "litellm==1.105.7"),
        ("install", "filelock>=3.16.1,<4"),
    ),
    "0.2.31": (
        ("install", "osmosis-ai==0.2.31"),
        # Upstream's own lock pin; kept out of the resolver's way on a path put first on PYTHONPATH.
        ("install", "--no-deps", "--target", "{venv}/litellm-pin", "litellm==1.91.1"),
    ),
}

#: Extra ``PYTHONPATH`` entries per release (relative to the venv).
_PATH_FIRST: dict[str, tuple[str, ...]] = {"0.2.31": ("litellm-pin",)}

_BUILD_TIMEOUT_S = 900


class UpstreamUnavailable(RuntimeError):
    """No interpreter can host the real osmosis-ai here, or its install failed."""


def _cache_root() -> Path:
    configured = os.environ.get("OSMOSIS_COMPAT_UPSTREAM_VENVS")
    return Path(configured) if configured else Path.home() / ".cache" / "osmosis-compat" / "upstream-venvs"


def _runs(python: str) -> bool:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "True"


def find_python() -> str:
    """An interpreter ≥ 3.12 that can build the side venvs (see the module docstring)."""
    configured = os.environ.get("OSMOSIS_COMPAT_UPSTREAM_PYTHON")
    candidates: list[str] = [configured] if configured else []
    if sys.version_info >= (3, 12):
        candidates.append(sys.executable)
    for name in ("python3.12", "python3.13"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        for version in sorted(pyenv.iterdir(), reverse=True):
            if version.name.startswith(("3.12", "3.13")):
                candidates.append(str(version / "bin" / "python3"))
    for candidate in candidates:
        if candidate and _runs(candidate):
            return candidate
    raise UpstreamUnavailable(
        "the real osmosis-ai needs Python >= 3.12 and none was found "
        "(set OSMOSIS_COMPAT_UPSTREAM_PYTHON to a python3.12 interpreter)"
    )


def _venv_dir(version: str) -> Path:
    recipe = json.dumps(RECIPES[version]).encode()
    return _cache_root() / f"osmosis-ai-{version}-{hashlib.sha256(recipe).hexdigest()[:10]}"


def _build(version: str) -> Path:
    venv = _venv_dir(version)
    marker = venv / ".complete"
    if marker.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest process may be building the same venv
        if marker.exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        python = find_python()
        log = venv.parent / f"{venv.name}.log"
        with open(log, "w") as out:
            steps: list[list[str]] = [[python, "-m", "venv", str(venv)]]
            pip = [str(venv / "bin" / "python"), "-m", "pip", "-q", "--disable-pip-version-check"]
            steps += [pip + [arg.replace("{venv}", str(venv)) for arg in step] for step in RECIPES[version]]
            for step in steps:
                out.write(f"$ {' '.join(step)}\n")
                out.flush()
                done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=_BUILD_TIMEOUT_S)
                if done.returncode != 0:
                    raise UpstreamUnavailable(f"building the osmosis-ai {version} venv failed at {step[-1]!r}; see {log}")
        marker.write_text(version)
    return venv


_pool = ThreadPoolExecutor(max_workers=len(RECIPES), thread_name_prefix="upstream-venv")
_builds: dict[str, Future[Path]] = {}
_builds_lock = threading.Lock()


def prebuild(versions: Sequence[str] = tuple(RECIPES)) -> None:
    """Start building ``versions`` in the background (no-op for those built or building)."""
    with _builds_lock:
        for version in versions:
            if version not in _builds:
                _builds[version] = _pool.submit(_build, version)


def upstream_venv(version: str) -> Path:
    """The venv with osmosis-ai ``version``, built if needed (both releases are started together)."""
    if version not in RECIPES:
        raise KeyError(f"no recipe for osmosis-ai {version}; known: {', '.join(RECIPES)}")
    prebuild()
    return _builds[version].result()


def upstream_python(version: str) -> Path:
    """The interpreter of :func:`upstream_venv`."""
    return upstream_venv(version) / "bin" / "python"


def upstream_env(version: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a process of the side venv: offline settings, no osmosis-compat on the path."""
    venv = upstream_venv(version)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENAI_AGENTS_DISABLE_TRACING="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        VIRTUAL_ENV=str(venv),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    env.pop("OPENAI_API_KEY", None)
    first = [str(venv / p) for p in _PATH_FIRST.get(version, ())]
    if first:
        env["PYTHONPATH"] = os.pathsep.join(first)
    env.update(extra or {})
    return env


def require_upstream(version: str) -> Path:
    """:func:`upstream_python` for a test: skips (fails under ``CI=true``) when the oracle cannot be built."""
    import pytest

    try:
        return upstream_python(version)
    except UpstreamUnavailable as exc:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"osmosis-ai {version} oracle unavailable under CI: {exc}")
        pytest.skip(f"osmosis-ai {version} oracle unavailable: {exc}")
