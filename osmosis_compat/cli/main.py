"""``osmosis-compat``: serve, validate, eval and demo agents of either API.

Each subcommand lives in its own module and registers its arguments here; modules are imported only when their
subcommand runs, so ``osmosis-compat --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from osmosis_compat import __version__

__all__ = ["build_parser", "main"]

_COMMANDS = {
    "serve": "osmosis_compat.cli.serve",
    "validate": "osmosis_compat.cli.validate",
    "eval": "osmosis_compat.cli.eval",
    "demo": "osmosis_compat.cli.demo",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="osmosis-compat",
        description="Run legacy RolloutAgentLoop agents and AgentWorkflow/Grader agents on one runtime.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"osmosis-compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in _COMMANDS.items():
        module = importlib.import_module(module_name)
        command_parser = sub.add_parser(name, help=module.HELP, description=module.DESCRIPTION,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 failure, 2 usage error)."""
    # Python's default warning filters apply: users see their own warnings (upstream's CLI silenced every warning;
    # we fix the causes of library warnings instead — see tests/cli/test_warnings.py).
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
