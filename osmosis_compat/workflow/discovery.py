"""Entrypoint discovery: which workflow, config and grader an entrypoint module defines (spec workflow-api §2.12).

Upstream ran this only in ``osmosis train submit`` preflight; osmosis-compat exposes it as :func:`discover`
(a loaded module) and :func:`discover_entrypoint` (a ``.py`` file), used by ``osmosis-compat validate``.

Rules (upstream's): every module-level binding that is an ``AgentWorkflow`` subclass (other than
``AgentWorkflow`` itself) is a candidate — imported classes and abstract helpers count; bindings of the same
class object (aliases) count once. Exactly one class is required. Configs: at most one ``AgentWorkflowConfig``
instance and one ``GraderConfig`` instance (by identity). Grader: at most one ``Grader`` subclass, or an
explicit ``"module:attr"`` reference.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from osmosis_compat.workflow.agent_workflow import AgentWorkflow
from osmosis_compat.workflow.grader import Grader
from osmosis_compat.workflow.types.config import AgentWorkflowConfig, GraderConfig
from osmosis_compat.workflow.utils.imports import resolve_object

__all__ = ["DiscoveryError", "discover", "discover_entrypoint", "load_entrypoint"]


class DiscoveryError(ValueError):
    """The entrypoint does not define exactly one workflow (or defines several configs/graders)."""


def _group(namespace: dict[str, Any], predicate: Any) -> list[tuple[str, Any, list[str]]]:
    """``[(representative binding, object, all binding names)]`` grouped by object identity."""
    groups: dict[int, tuple[Any, list[str]]] = {}
    for name, value in namespace.items():
        if name.startswith("__"):
            continue
        try:
            matches = predicate(value)
        except Exception:  # exotic objects (proxies) that fail isinstance/issubclass are not candidates
            matches = False
        if matches:
            groups.setdefault(id(value), (value, []))[1].append(name)
    return [(min(names), value, sorted(names)) for value, names in groups.values()]


def _is_workflow_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, AgentWorkflow) and value is not AgentWorkflow


def _is_grader_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Grader) and value is not Grader


def _at_most_one(groups: list[tuple[str, Any, list[str]]], what: str, where: str) -> Any:
    if not groups:
        return None
    if len(groups) > 1:
        names = sorted(n for _, _, bindings in groups for n in bindings)
        raise DiscoveryError(f"Multiple {what} found in {where}: {', '.join(names)}. Keep exactly one.")
    return groups[0][1]


def discover(
    module: ModuleType | dict[str, Any],
    *,
    grader: str | type[Grader] | None = None,
    grader_config: str | GraderConfig | None = None,
) -> dict[str, Any]:
    """Find the workflow class, its config, the grader class and its config in ``module``.

    Returns ``{"workflow", "workflow_name", "workflow_config", "grader", "grader_config"}`` (absent ones are
    ``None``; ``workflow_name`` is the lexicographically smallest binding of the workflow class). ``grader`` /
    ``grader_config`` override discovery (objects or ``"module:attr"``). Raises :class:`DiscoveryError` (a
    ``ValueError``) for zero or several workflow classes, several configs or graders, or a bad explicit grader.
    """
    namespace = module if isinstance(module, dict) else vars(module)
    where = namespace.get("__name__", "the entrypoint")
    workflows = _group(namespace, _is_workflow_class)
    if not workflows:
        raise DiscoveryError(f"No AgentWorkflow subclass found in {where}")
    if len(workflows) > 1:
        names = sorted(n for _, _, bindings in workflows for n in bindings)
        raise DiscoveryError(
            f"Multiple AgentWorkflow subclasses found in {where}: {', '.join(names)}. "
            "The entrypoint must define exactly one (abstract helpers and imported workflow classes count too)."
        )
    workflow_name, workflow_cls, _ = workflows[0]
    workflow_config = _at_most_one(
        _group(namespace, lambda v: isinstance(v, AgentWorkflowConfig)), "AgentWorkflowConfig instances", where
    )
    if grader is not None:
        grader_cls = resolve_object(grader)
        if not _is_grader_class(grader_cls) or getattr(grader_cls, "__abstractmethods__", None):
            raise DiscoveryError(f"grader {grader!r} is not a concrete Grader subclass")
    else:
        grader_cls = _at_most_one(_group(namespace, _is_grader_class), "Grader subclasses", where)
    if grader_config is not None:
        grader_cfg = resolve_object(grader_config)
        if not isinstance(grader_cfg, GraderConfig):
            raise DiscoveryError(f"grader config {grader_config!r} is not a GraderConfig instance")
    else:
        grader_cfg = _at_most_one(
            _group(namespace, lambda v: isinstance(v, GraderConfig)), "GraderConfig instances", where
        )
    return {
        "workflow": workflow_cls,
        "workflow_name": workflow_name,
        "workflow_config": workflow_config,
        "grader": grader_cls,
        "grader_config": grader_cfg,
    }


def load_entrypoint(path: str | Path) -> ModuleType:
    """Import the ``.py`` file at ``path`` as a module of a synthetic package
    ``_osmosis_rollout_<sha256(dir)[:16]>`` (its directory is put on ``sys.path``), as upstream preflight did:
    module-level code runs, ``if __name__ == "__main__":`` blocks do not."""
    file = Path(path).resolve()
    if file.suffix != ".py" or not file.is_file():
        raise FileNotFoundError(f"entrypoint {path} is not a .py file")
    directory = str(file.parent)
    package = "_osmosis_rollout_" + hashlib.sha256(directory.encode("utf-8")).hexdigest()[:16]
    if directory not in sys.path:
        sys.path.insert(0, directory)
    if package not in sys.modules:
        package_module = ModuleType(package)
        package_module.__path__ = [directory]
        sys.modules[package] = package_module
    name = f"{package}.{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def discover_entrypoint(
    path: str | Path,
    *,
    grader: str | type[Grader] | None = None,
    grader_config: str | GraderConfig | None = None,
) -> dict[str, Any]:
    """:func:`load_entrypoint` then :func:`discover`; also returns the loaded ``"module"``."""
    module = load_entrypoint(path)
    found = discover(module, grader=grader, grader_config=grader_config)
    found["module"] = module
    return found
