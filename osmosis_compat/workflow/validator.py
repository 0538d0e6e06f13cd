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
    require_grader: bool = True,
) -> ValidationResult:
    """Check the workflow (and grader) classes can be served; collect every error — upstream's codes, messages
    and fields (tests/workflow/test_upstream_oracle.py compares them with the real 0.2.31).

    Codes: ``INVALID_WORKFLOW_CLASS``, ``WORKFLOW_RUN_NOT_ASYNC``, ``WORKFLOW_INIT_FAILED``,
    ``INVALID_AGENT_NAME`` (resolved name not 1–256 characters), ``MISSING_GRADER`` (no grader: upstream's
    verdict, since its preflight required one), ``INVALID_GRADER_CLASS``, ``GRADER_GRADE_NOT_ASYNC``,
    ``GRADER_INIT_FAILED``. ``require_grader=False`` (osmosis-compat's CLI, which serves and evaluates
    graderless workflows) leaves out ``MISSING_GRADER``.
    """
    errors: list[ValidationError] = []
    workflow_ok = isinstance(workflow_cls, type) and issubclass(workflow_cls, AgentWorkflow) \
        and workflow_cls is not AgentWorkflow
    if not workflow_ok:
        errors.append(ValidationError("INVALID_WORKFLOW_CLASS", "workflow_cls must be a concrete subclass of AgentWorkflow",
                                      "workflow_cls"))
    else:
        if not _is_async(getattr(workflow_cls, "run", None)):
            errors.append(ValidationError("WORKFLOW_RUN_NOT_ASYNC", "AgentWorkflow.run must be an async method",
                                          "workflow_cls.run"))
        try:
            workflow_cls(workflow_config)
        except Exception as exc:
            errors.append(ValidationError("WORKFLOW_INIT_FAILED", f"Failed to instantiate workflow: {exc}",
                                          "workflow_cls"))
    if isinstance(workflow_cls, type):
        name = resolved_agent_name(workflow_cls, workflow_config)
        if not 1 <= len(name) <= MAX_AGENT_NAME_LENGTH:
            errors.append(ValidationError(
                "INVALID_AGENT_NAME",
                f"Resolved agent name must be between 1 and {MAX_AGENT_NAME_LENGTH} characters", "name"))
    if grader_cls is None:
        if require_grader:
            errors.append(ValidationError("MISSING_GRADER", "grader_cls is required for LocalBackend validation",
                                          "grader_cls"))
    elif not isinstance(grader_cls, type) or not issubclass(grader_cls, Grader) or grader_cls is Grader:
        errors.append(ValidationError("INVALID_GRADER_CLASS", "grader_cls must be a concrete subclass of Grader",
                                      "grader_cls"))
    else:
        if not _is_async(getattr(grader_cls, "grade", None)):
            errors.append(ValidationError("GRADER_GRADE_NOT_ASYNC", "Grader.grade must be an async method",
                                          "grader_cls.grade"))
        try:
            grader_cls(grader_config)
        except Exception as exc:
            errors.append(ValidationError("GRADER_INIT_FAILED", f"Failed to instantiate grader: {exc}", "grader_cls"))
    return ValidationResult(valid=not errors, errors=errors)
