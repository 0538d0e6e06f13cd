"""Loading ``module.path:attribute`` targets, with the legacy CLI's error messages (spec §2.17.1).

Also importable as ``osmosis_ai.rollout.cli_utils`` (``CLIError``, ``load_agent_loop``).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from osmosis_compat.legacy.exceptions import CLIError

__all__ = ["CLIError", "import_target", "load_agent_loop", "split_target"]


def split_target(module_path: str) -> tuple[str, str]:
    """Split ``"pkg.module:attr"`` on the last colon; :class:`CLIError` if there is none."""
    if ":" not in module_path:
        raise CLIError(
            f"Invalid module path '{module_path}'. Expected format: 'module.path:attribute_name' "
            "(e.g., 'my_agent:agent_loop')"
        )
    module_name, _, attr = module_path.rpartition(":")
    if not module_name or not attr:
        raise CLIError(
            f"Invalid module path '{module_path}'. Expected format: 'module.path:attribute_name' "
            "(e.g., 'my_agent:agent_loop')"
        )
    return module_name, attr


def import_target(module_path: str) -> tuple[Any, str, Any]:
    """Import the module of ``module_path`` (cwd on ``sys.path``) and return ``(module, attr_name, value)``.

    A module given as a file path (``examples/legacy/agent.py:agent_loop``) is loaded from that file.
    Raises :class:`CLIError` for an unimportable module or a missing attribute (listing what is there).
    """
    module_name, attr = split_target(module_path)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            module = _import_file(module_name)
        else:
            module = importlib.import_module(module_name)
    except CLIError:
        raise
    except ImportError as exc:
        raise CLIError(f"Cannot import module '{module_name}': {exc}") from exc
    except Exception as exc:
        raise CLIError(f"Error while importing module '{module_name}': {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        public = sorted(name for name in vars(module) if not name.startswith("_"))
        raise CLIError(f"Module '{module_name}' has no attribute '{attr}'. Available attributes: {public}")
    return module, attr, getattr(module, attr)


def _import_file(path: str) -> Any:
    import importlib.util

    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise CLIError(f"Cannot import module '{path}': no such file")
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"Cannot import module '{path}'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_agent_loop(module_path: str) -> Any:
    """Load a ``RolloutAgentLoop`` instance (a subclass is instantiated with no arguments)."""
    from osmosis_compat.legacy.base import RolloutAgentLoop

    _, attr, value = import_target(module_path)
    if isinstance(value, type):
        if not issubclass(value, RolloutAgentLoop):
            raise CLIError(f"'{attr}' is a class but not a RolloutAgentLoop subclass")
        try:
            value = value()
        except Exception as exc:
            raise CLIError(f"Cannot instantiate '{attr}': {exc}") from exc
    if not isinstance(value, RolloutAgentLoop):
        raise CLIError(f"'{attr}' must be a RolloutAgentLoop instance or subclass, got {type(value).__name__}")
    return value
