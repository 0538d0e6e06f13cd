"""``osmosis-compat validate -m module:attr`` — check an agent before serving it."""

from __future__ import annotations

import argparse
import sys

HELP = "validate an agent loop or a workflow entrypoint"
DESCRIPTION = """Validate a target without serving it.

  -m module:agent_loop       a RolloutAgentLoop instance or subclass (legacy `osmosis validate` checks)
  -m path/to/entrypoint.py   a workflow entrypoint: exactly one AgentWorkflow subclass, at most one config
                             instance, grader discovery, then validate_backend

Exit 0 when valid, 1 otherwise (or when the target cannot be loaded)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--module", required=True, help="module:attribute, or a workflow entrypoint module/file")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list warnings")


def run(args: argparse.Namespace) -> int:
    from osmosis_compat.legacy.exceptions import CLIError

    from .targets import TargetError, load_target

    try:
        target = load_target(args.module)
    except (CLIError, TargetError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0 if target.validate(verbose=args.verbose) else 1
