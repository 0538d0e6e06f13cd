"""osmosis-compat: legacy RolloutAgentLoop and AgentWorkflow/Grader agents on one runtime.

Importing this package is cheap: every API lives in a subpackage (``legacy``, ``workflow``,
``adapters``, ``server``, ``testing``) and is imported only when used.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
