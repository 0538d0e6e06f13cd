"""How a legacy loop's failures become workflow failure categories (``err_category`` on the wire).

A legacy loop fails in three ways; run through :func:`~osmosis_compat.adapters.loop_as_workflow` each surfaces
as a workflow failure (completion callback ``status: "failure"``) with this category:

========================================================  ====================  ===============================
what the loop did                                         ``err_category``      ``err_message``
========================================================  ====================  ===============================
returned ``ctx.error(msg, …)``                            ``agent_error``       ``msg``
let ``OsmosisTimeoutError`` (model call timed out) escape ``timeout``             the error text
let ``OsmosisServerError`` / ``OsmosisValidationError`` / ``http_error``          the controller's response text
``OsmosisTransportError`` (model call failed) escape
returned something that is not a ``RolloutResult``, or a  ``validation_error``    what was wrong
status other than ``COMPLETED``/``ERROR``; bad tools
raised anything else                                      as the workflow API   ``str(exc)``
                                                          categorises it:
                                                          ``TimeoutError`` →
                                                          ``timeout``;
                                                          ``ValueError``/
                                                          ``TypeError``/
                                                          ``AssertionError`` →
                                                          ``validation_error``;
                                                          else ``agent_error``
========================================================  ====================  ===============================

Each class below carries its category as ``err_category`` and also derives from the builtin the workflow
API's categoriser maps to that category, so the mapping holds whichever rule the backend applies.
"""

from __future__ import annotations

__all__ = [
    "AdaptedLoopError",
    "LoopModelCallError",
    "LoopModelTimeoutError",
    "LoopReportedError",
    "LoopResultError",
]


class AdaptedLoopError(Exception):
    """Base of the failures of a legacy loop run as a workflow; ``err_category`` is the wire category."""

    err_category: str = "agent_error"


class LoopReportedError(AdaptedLoopError, RuntimeError):
    """The loop returned ``ctx.error(message, final_messages)``; ``final_messages`` is kept for inspection."""

    err_category = "agent_error"

    def __init__(self, message: str, final_messages: list | None = None) -> None:
        super().__init__(message)
        self.final_messages = list(final_messages or [])


class LoopModelCallError(AdaptedLoopError, RuntimeError):
    """A model call of the loop failed at the HTTP level (the controller answered an error, or was unreachable)."""

    err_category = "http_error"

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class LoopModelTimeoutError(AdaptedLoopError, TimeoutError):
    """A model call of the loop timed out."""

    err_category = "timeout"


class LoopResultError(AdaptedLoopError, ValueError):
    """The loop broke its contract: a result that is not a ``RolloutResult``, an unknown status, bad tools."""

    err_category = "validation_error"
