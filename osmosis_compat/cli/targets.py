"""What a command-line ``-m`` points at: a legacy agent loop or a workflow (+ grader), loaded and checked.

``load_target`` accepts:

- ``module:attr`` naming a ``RolloutAgentLoop`` instance or subclass → a legacy target;
- ``module:attr`` naming a ``LocalBackend`` instance, or an ``AgentWorkflow`` subclass (its grader and configs
  are discovered in the same module; other workflow classes there are ignored, so a file may define several
  and ``-m file.py:BWorkflow`` picks one) → a workflow target;
- a module name or ``.py`` path without ``:attr`` → workflow entrypoint discovery (exactly one ``AgentWorkflow``
  subclass, at most one config instance); a module with no workflow but exactly one ``RolloutAgentLoop``
  instance is taken as a legacy target.

Serving, validation and local evaluation all start from a :class:`Target`, so every command accepts the same
target syntax.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

from osmosis_compat.legacy.exceptions import CLIError

from .loading import _import_file, import_target

__all__ = ["Target", "TargetError", "load_mcp_target", "load_target"]


class TargetError(CLIError):
    """A target could not be loaded or is not an agent."""


@dataclass
class Target:
    """A loaded agent of either API."""

    spec: str
    kind: str  # "legacy" | "workflow"
    name: str
    loop: Any = None
    workflow: Any = None
    workflow_config: Any = None
    grader: Any = None
    grader_config: Any = None

    def validate(self, *, verbose: bool = False) -> bool:
        """Print a validation report for this target; return whether it is valid."""
        if self.kind == "legacy":
            from osmosis_compat.legacy.serve import validate_and_report

            return bool(validate_and_report(self.loop, verbose=verbose))
        from osmosis_compat.workflow.validator import validate_backend

        # A workflow without a grader can be served and evaluated (its grader callback reports failure, eval
        # records transcripts), so the CLI does not make upstream's MISSING_GRADER an error: it notes it.
        result = validate_backend(self.workflow, self.workflow_config, self.grader, self.grader_config,
                                  require_grader=False)
        if result.valid:
            print(f"Workflow '{self.name}' validated successfully.")
            print(f"  - Workflow: {self.workflow.__name__}")
            print(f"  - Grader: {self.grader.__name__ if self.grader else '(none: rollouts are not scored)'}")
        else:
            import sys

            print(f"Workflow validation failed with {len(result.errors)} error(s):", file=sys.stderr)
            for error in result.errors:
                print(f"  - {error}", file=sys.stderr)
        if verbose:
            for warning in result.warnings:
                print(f"  - (warning) {warning}")
        return bool(result.valid)

    def backend(self) -> Any:
        """A ``LocalBackend`` for a workflow target (``TargetError`` for a legacy one)."""
        if self.kind != "workflow":
            raise TargetError(f"{self.spec} is a legacy agent loop, not a workflow")
        from osmosis_compat.workflow.backend.local import LocalBackend

        return LocalBackend(
            workflow=self.workflow,
            workflow_config=self.workflow_config,
            grader=self.grader,
            grader_config=self.grader_config,
        )


def load_target(spec: str) -> Target:
    """Load ``spec`` (see module docstring); raise :class:`CLIError`/:class:`TargetError` with a readable reason."""
    if ":" in spec and not _looks_like_windows_path(spec):
        module, attr, value = import_target(spec)
        return _from_value(spec, module, attr, value)
    module = _import_module(spec)
    return _discover(spec, module)


def load_mcp_target(directory: str) -> Target:
    """``--mcp DIR``: the FastMCP server of ``DIR/main.py`` as an ``MCPAgentLoop`` (a legacy target named
    ``mcp_agent``, as upstream). Raises :class:`TargetError` with the loader's reason (no directory, no
    ``main.py``, fastmcp missing, an import error, no ``FastMCP`` instance)."""
    from osmosis_compat.legacy.exceptions import MCPLoadError

    try:
        from osmosis_compat.legacy.mcp import load_mcp_agent_loop

        loop = load_mcp_agent_loop(directory)
    except MCPLoadError as exc:
        raise TargetError(f"--mcp {directory}: {exc}") from exc
    return Target(spec=f"--mcp {directory}", kind="legacy", name=str(loop.name), loop=loop)


def _looks_like_windows_path(spec: str) -> bool:
    return len(spec) > 1 and spec[1] == ":" and spec[0].isalpha() and spec.count(":") == 1


def _import_module(spec: str) -> Any:
    import sys

    try:
        if spec.endswith(".py") or os.sep in spec:
            return _import_file(spec)
        cwd = os.getcwd()
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        return importlib.import_module(spec)
    except CLIError:
        raise
    except ImportError as exc:
        raise TargetError(f"Cannot import module '{spec}': {exc}") from exc
    except Exception as exc:
        raise TargetError(f"Error while importing module '{spec}': {type(exc).__name__}: {exc}") from exc


def _from_value(spec: str, module: Any, attr: str, value: Any) -> Target:
    from osmosis_compat.legacy.base import RolloutAgentLoop

    if isinstance(value, RolloutAgentLoop) or (isinstance(value, type) and issubclass(value, RolloutAgentLoop)):
        from .loading import load_agent_loop

        loop = load_agent_loop(spec)
        return Target(spec=spec, kind="legacy", name=str(loop.name), loop=loop)
    workflow_api = _workflow_api()
    if workflow_api is not None:
        LocalBackend, AgentWorkflow = workflow_api
        if isinstance(value, LocalBackend):
            return _workflow_target(spec, value.workflow_cls, value.workflow_config, value.grader_cls, value.grader_config)
        if isinstance(value, type) and issubclass(value, AgentWorkflow):
            found = _discover_for(spec, module, value)
            return _workflow_target(spec, value, found.get("workflow_config"), found.get("grader"), found.get("grader_config"))
    raise TargetError(
        f"'{attr}' is neither a RolloutAgentLoop nor a workflow (LocalBackend instance or AgentWorkflow subclass); "
        f"got {type(value).__name__}"
    )


def _discover_for(spec: str, module: Any, workflow_cls: type) -> dict[str, Any]:
    """Config and grader discovery for a workflow class chosen by name: other workflow classes in the module are
    not candidates (the file may define several); several configs or graders are still ambiguous."""
    from osmosis_compat.workflow.discovery import DiscoveryError

    namespace = {
        name: value for name, value in vars(module).items()
        if not (isinstance(value, type) and _is_other_workflow(value, workflow_cls))
    }
    try:
        return _discover_in(namespace)
    except DiscoveryError as exc:
        raise TargetError(
            f"{spec}: {exc} Which ones belong to {workflow_cls.__name__} cannot be guessed: bind a "
            f"LocalBackend(workflow=..., grader=..., workflow_config=...) in the file and point -m at it."
        ) from exc


def _is_other_workflow(value: type, chosen: type) -> bool:
    from osmosis_compat.workflow.agent_workflow import AgentWorkflow

    return issubclass(value, AgentWorkflow) and value is not chosen


def _workflow_api() -> tuple[Any, Any] | None:
    try:
        from osmosis_compat.workflow.agent_workflow import AgentWorkflow
        from osmosis_compat.workflow.backend.local import LocalBackend
    except ImportError:  # pragma: no cover - the workflow API is part of the package
        return None
    return LocalBackend, AgentWorkflow


def _discover_in(module: Any) -> dict[str, Any]:
    from osmosis_compat.workflow import discovery

    return discovery.discover(module)


def _discover(spec: str, module: Any) -> Target:
    from osmosis_compat.legacy.base import RolloutAgentLoop

    try:
        found = _discover_in(module)
    except (ValueError, LookupError) as exc:
        loops = {id(v): v for v in vars(module).values() if isinstance(v, RolloutAgentLoop)}
        if len(loops) == 1:
            loop = next(iter(loops.values()))
            return Target(spec=spec, kind="legacy", name=str(loop.name), loop=loop)
        raise TargetError(f"{spec}: {exc}{_selection_hint(spec, module)}") from exc
    return _workflow_target(spec, found["workflow"], found.get("workflow_config"), found.get("grader"), found.get("grader_config"))


def _selection_hint(spec: str, module: Any) -> str:
    """With several workflow classes, how to pick one: ``-m file.py:ClassName``."""
    from osmosis_compat.workflow.agent_workflow import AgentWorkflow

    names = sorted(
        name for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, AgentWorkflow) and value is not AgentWorkflow
        and getattr(value, "__module__", None) == module.__name__
    )
    if len(names) < 2:
        return ""
    return f" Select one by class: -m {spec}:{names[0]} (or {', '.join(names[1:])})."


def _workflow_target(spec: str, workflow: Any, workflow_config: Any, grader: Any, grader_config: Any) -> Target:
    from osmosis_compat.workflow.validator import resolved_agent_name

    return Target(
        spec=spec,
        kind="workflow",
        name=resolved_agent_name(workflow, workflow_config),
        workflow=workflow,
        workflow_config=workflow_config,
        grader=grader,
        grader_config=grader_config,
    )
