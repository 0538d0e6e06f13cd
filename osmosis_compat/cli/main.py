"""``osmosis-compat``: serve, validate, eval and demo agents of either API.

Each subcommand lives in its own module and registers its arguments here; modules are imported only when their
subcommand runs, so ``osmosis-compat --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from osmosis_compat import __version__

__all__ = ["build_parser", "closed_stdout", "main", "parse_command_line", "plain_text"]

_COMMANDS = {
    "serve": "osmosis_compat.cli.serve",
    "validate": "osmosis_compat.cli.validate",
    "eval": "osmosis_compat.cli.eval",
    "demo": "osmosis_compat.cli.demo",
}


def build_parser() -> argparse.ArgumentParser:
    """The ``osmosis-compat`` parser; each subcommand parser is also in ``parser.subcommands[name]``."""
    parser = argparse.ArgumentParser(
        prog="osmosis-compat",
        description="Run legacy RolloutAgentLoop agents and AgentWorkflow/Grader agents on one runtime.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"osmosis-compat {__version__}")
    add_subcommands(parser, _COMMANDS)
    return parser


def add_subcommands(parser: argparse.ArgumentParser, commands: dict[str, str]) -> Any:
    """One subparser per ``{name: module}``; a module has ``HELP``, ``DESCRIPTION``, ``add_arguments`` and
    ``run``. The subparsers are kept in ``parser.subcommands`` (see :func:`parse_command_line`); returns the
    subparsers action, for more subcommands."""
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subcommands: dict[str, argparse.ArgumentParser] = {}
    for name, module_name in commands.items():
        module = importlib.import_module(module_name)
        command_parser = sub.add_parser(name, help=module.HELP, description=plain_text(module.DESCRIPTION),
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
        subcommands[name] = command_parser
    parser.subcommands = subcommands  # type: ignore[attr-defined]
    return sub


def plain_text(doc: str | None) -> str | None:
    """A module docstring as ``--help`` shows it: reStructuredText literals (````x````) and roles
    (``:class:`x```) become plain text, bold markers go."""
    if doc is None:
        return None
    import re

    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", doc)
    text = text.replace("``", "").replace("**", "")
    return text


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, except that an unknown flag after a subcommand is reported with *that subcommand's*
    usage (argparse reports it with the top-level usage, which does not list the subcommand's flags)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        command_parser = getattr(parser, "subcommands", {}).get(getattr(args, "command", None), parser)
        if getattr(command_parser, "accepts_any_arguments", False):
            args.rest = list(extras)
            return args
        command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def closed_stdout() -> int:
    """The reader of stdout went away (``osmosis-compat eval | head``): no traceback, and none at exit either
    (Python flushes stdout once more at exit: point it at /dev/null). Returns 141, a shell's code for SIGPIPE."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 failure, 2 usage error)."""
    # Python's default warning filters apply: users see their own warnings (upstream's CLI silenced every warning;
    # we fix the causes of library warnings instead — see tests/cli/test_warnings.py).
    parser = build_parser()
    args = parse_command_line(parser, argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return closed_stdout()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
