"""A name → agent-loop registry (spec/legacy-protocol.md §2.12). A convenience only: neither the server nor
the CLI consult it."""

from __future__ import annotations

import threading
from typing import Optional

from .base import RolloutAgentLoop
from .exceptions import AgentLoopNotFoundError

__all__ = [
    "AgentLoopRegistry",
    "get_agent_loop",
    "list_agent_loops",
    "register_agent_loop",
    "unregister_agent_loop",
]


class AgentLoopRegistry:
    """Thread-safe map of agent-loop instances by their ``name`` (insertion-ordered)."""

    def __init__(self) -> None:
        self._loops: dict[str, RolloutAgentLoop] = {}
        self._lock = threading.Lock()

    def register(self, agent_loop: RolloutAgentLoop) -> None:
        """Add ``agent_loop`` under ``agent_loop.name``; a taken name raises ``ValueError``."""
        with self._lock:
            name = agent_loop.name
            if name in self._loops:
                raise ValueError(
                    f"Agent loop '{name}' is already registered. "
                    "Use a different name or unregister the existing one first."
                )
            self._loops[name] = agent_loop

    def unregister(self, name: str) -> bool:
        """Remove the loop called ``name``; ``False`` if there was none."""
        with self._lock:
            return self._loops.pop(name, None) is not None

    def get(self, name: str) -> Optional[RolloutAgentLoop]:
        """The loop called ``name`` or ``None``."""
        with self._lock:
            return self._loops.get(name)

    def list_names(self) -> list[str]:
        """Registered names in registration order."""
        with self._lock:
            return list(self._loops)

    def clear(self) -> None:
        """Remove every loop."""
        with self._lock:
            self._loops.clear()


_registry = AgentLoopRegistry()
"""The process-wide registry behind the module-level functions."""


def register_agent_loop(agent_loop: RolloutAgentLoop) -> None:
    """Register ``agent_loop`` in the global registry (``ValueError`` on a duplicate name)."""
    _registry.register(agent_loop)


def unregister_agent_loop(name: str) -> bool:
    """Remove ``name`` from the global registry; ``False`` if it was not there."""
    return _registry.unregister(name)


def get_agent_loop(name: str) -> RolloutAgentLoop:
    """The registered loop called ``name``; ``AgentLoopNotFoundError`` (listing what exists) otherwise."""
    loop = _registry.get(name)
    if loop is None:
        raise AgentLoopNotFoundError(name, _registry.list_names())
    return loop


def list_agent_loops() -> list[str]:
    """Names in the global registry, in registration order."""
    return _registry.list_names()
