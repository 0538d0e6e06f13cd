"""Static checks of a workflow backend before serving it (upstream ``validator.py``, spec §2.11)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

# One ValidationError/ValidationResult for both APIs (the legacy dataclasses are the superset).
from osmosis_compat.runtime.validation import ValidationError, ValidationResult
from osmosis_compat.workflow.agent_workflow import AgentWorkflow
from osmosis_compat.workflow.grader import Grader

__all__ = ["ValidationError", "ValidationResult", "resolved_agent_name", "validate_backend"]

MAX_AGENT_NAME_LENGTH = 256


def _is_async(method: Any) -> bool:
    return asyncio.iscoroutinefunction(method) or inspect.iscoroutinefunction(method)


def resolved_agent_name(workflow_cls: Any, workflow_config: Any = None) -> str:
    """``workflow_config.name`` stripped, else the class name."""
    name = str(getattr(workflow_config, "name", "") or "").strip() if workflow_config is not None else ""
    return name or getattr(workflow_cls, "__name__", str(workflow_cls))


def validate_backend(
    workflow_cls: Any,
    workflow_config: Any,
    grader_cls: Any = None,
    grader_config: Any = None,
    *,
    require_grader: bool = False,
) -> ValidationResult:
    """Check the workflow (and grader) classes can be served; collect every error.

    Codes: ``INVALID_WORKFLOW_CLASS``, ``WORKFLOW_RUN_NOT_ASYNC``, ``WORKFLOW_INIT_FAILED``,
    ``INVALID_AGENT_NAME`` (resolved name not 1–256 characters), ``MISSING_GRADER`` (only with
    ``require_grader=True``), ``INVALID_GRADER_CLASS``, ``GRADER_GRADE_NOT_ASYNC``, ``GRADER_INIT_FAILED``.
    """
    errors: list[ValidationError] = []
    if not isinstance(workflow_cls, type) or not issubclass(workflow_cls, AgentWorkflow) or workflow_cls is AgentWorkflow:
        errors.append(
            ValidationError(
                "INVALID_WORKFLOW_CLASS",
                f"{workflow_cls!r} is not a subclass of AgentWorkflow",
                "workflow",
            )
        )
    else:
        if not _is_async(getattr(workflow_cls, "run", None)):
            errors.append(
                ValidationError("WORKFLOW_RUN_NOT_ASYNC", f"{workflow_cls.__name__}.run must be 'async def'", "workflow.run")
            )
        try:
            workflow_cls(workflow_config)
        except Exception as exc:
            errors.append(
                ValidationError(
                    "WORKFLOW_INIT_FAILED",
                    f"{workflow_cls.__name__}(workflow_config) raised {type(exc).__name__}: {exc}",
                    "workflow",
                )
            )
        name = resolved_agent_name(workflow_cls, workflow_config)
        if not 1 <= len(name) <= MAX_AGENT_NAME_LENGTH:
            errors.append(
                ValidationError(
                    "INVALID_AGENT_NAME",
                    f"agent name must be 1-{MAX_AGENT_NAME_LENGTH} characters, got {len(name)}",
                    "workflow_config.name",
                )
            )
    if grader_cls is None:
        if require_grader:
            errors.append(ValidationError("MISSING_GRADER", "a Grader subclass is required", "grader"))
    elif not isinstance(grader_cls, type) or not issubclass(grader_cls, Grader) or grader_cls is Grader:
        errors.append(ValidationError("INVALID_GRADER_CLASS", f"{grader_cls!r} is not a subclass of Grader", "grader"))
    else:
        if not _is_async(getattr(grader_cls, "grade", None)):
            errors.append(
                ValidationError("GRADER_GRADE_NOT_ASYNC", f"{grader_cls.__name__}.grade must be 'async def'", "grader.grade")
            )
        try:
            grader_cls(grader_config)
        except Exception as exc:
            errors.append(
                ValidationError(
                    "GRADER_INIT_FAILED",
                    f"{grader_cls.__name__}(grader_config) raised {type(exc).__name__}: {exc}",
                    "grader",
                )
            )
    return ValidationResult(valid=not errors, errors=errors)
