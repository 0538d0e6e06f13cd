"""Validation findings shared by both APIs' validators (legacy ``validate_agent_loop``, workflow
``validate_backend``): one ``ValidationError`` class, one ``ValidationResult`` shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["AgentValidationError", "ValidationError", "ValidationResult"]


class AgentValidationError(Exception):
    """Raised by :meth:`ValidationResult.raise_if_invalid`; ``errors`` holds the findings."""

    def __init__(self, message: str, errors: Optional[list["ValidationError"]] = None) -> None:
        super().__init__(message)
        self.errors = errors or []


@dataclass
class ValidationError:
    """One finding: a stable ``code``, a readable ``message``, the ``field`` it concerns and optional details.

    ``str()`` is ``[CODE] field: message`` (or ``[CODE] message`` without a field).
    """

    code: str
    message: str
    field: Optional[str] = None
    details: Optional[dict[str, Any]] = None

    def __str__(self) -> str:
        if self.field:
            return f"[{self.code}] {self.field}: {self.message}"
        return f"[{self.code}] {self.message}"


@dataclass
class ValidationResult:
    """Outcome of a validation: truthy when ``valid``; ``raise_if_invalid()`` turns errors into an exception."""

    valid: bool
    errors: list[ValidationError] = field(default_factory=list)
    warnings: list[ValidationError] = field(default_factory=list)
    agent_name: Optional[str] = None
    tool_count: int = 0

    def __bool__(self) -> bool:
        return self.valid

    def failure_message(self, subject: str = "Agent") -> str:
        lines = "\n".join(f"  - {error}" for error in self.errors)
        return f"{subject} validation failed with {len(self.errors)} error(s):\n{lines}"

    def raise_if_invalid(self) -> None:
        """Raise :class:`AgentValidationError` listing every error when the result is not valid."""
        if not self.valid:
            raise AgentValidationError(self.failure_message(), errors=list(self.errors))
