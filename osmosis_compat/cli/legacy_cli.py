"""``osmosis``: the legacy osmosis-ai command-line verbs that users' scripts call, on osmosis-compat.

``osmosis serve``, ``osmosis validate``, ``osmosis test`` and ``osmosis eval`` take upstream's flags
(spec/legacy-protocol.md §2.17) and run on osmosis-compat (``serve``/``validate`` are ``osmosis-compat
serve``/``validate``, which accept upstream's flags and more). Upstream's platform verbs (``login``, ``logout``,
``whoami``, ``workspace``, ``preview``, ``eval-rubric``) exit 1 saying why they are not here. As upstream: no subcommand prints the
help and exits 1; ``-V`` prints ``osmosis-ai <version>``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .main import add_subcommands, closed_stdout, parse_command_line

__all__ = ["build_parser", "main"]

_COMMANDS = {
    "serve": "osmosis_compat.cli.serve",
    "validate": "osmosis_compat.cli.validate",
    "test": "osmosis_compat.cli.legacy_test",
    "eval": "osmosis_compat.cli.legacy_eval",
    "dataset": "osmosis_compat.cli.dataset",
}

_NOT_HERE = {
    "login": "Osmosis Platform login is not part of osmosis-compat, which never contacts the platform",
    "logout": "Osmosis Platform login is not part of osmosis-compat, which never contacts the platform",
    "whoami": "Osmosis Platform login is not part of osmosis-compat, which never contacts the platform",
    "workspace": "Osmosis Platform workspaces are not part of osmosis-compat, which never contacts the platform",
    "preview": "dataset preview on the Osmosis Platform is not part of osmosis-compat",
    "eval-rubric": "0.2.17's rubric-scoring command is not part of osmosis-compat (its flags are not documented "
                   "anywhere obtainable): call evaluate_rubric from Python, which is supported",
}


def build_parser() -> argparse.ArgumentParser:
    """The ``osmosis`` parser (subcommand parsers in ``parser.subcommands``)."""
    from osmosis_compat.shim.names import _version

    parser = argparse.ArgumentParser(
        prog="osmosis",
        description="The legacy osmosis-ai command line on osmosis-compat: serve, validate, test and evaluate agent "
                    "loops.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"osmosis-ai {_version()}")
    sub = add_subcommands(parser, _COMMANDS)
    for name, reason in _NOT_HERE.items():
        stub = sub.add_parser(name, help=f"not available: {reason.split(':')[0]}", add_help=False)
        stub.accepts_any_arguments = True  # type: ignore[attr-defined]  # whatever flags a script passes: say why
        stub.set_defaults(_run=_not_here(name, reason))
        parser.subcommands[name] = stub  # type: ignore[attr-defined]
    return parser


def _not_here(name: str, reason: str):  # type: ignore[no-untyped-def]
    def run(args: argparse.Namespace) -> int:
        print(f"Error: `osmosis {name}`: {reason}.", file=sys.stderr)
        return 1

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``osmosis`` (also ``osmosis-ai`` / ``osmosis_ai``, as upstream's scripts were named)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--json"] and argv[1:3] == ["dataset", "validate"]:
        argv = [*argv[1:], "--json"]  # 0.3.8's global --json, for the one command that has it here
    if argv[:1] == ["eval"] and argv[1:2] in (["run"], ["rubric"]):
        from .eval_run import main as eval_run_main  # 0.3.8's `osmosis eval run|rubric`; `osmosis eval -m` is 0.2.17's

        try:
            return eval_run_main(argv[1:])
        except KeyboardInterrupt:
            return 130
    args = parse_command_line(parser, argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
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
