"""osmosis dataset validate FILE: check a dataset file locally, as osmosis-ai 0.3.8 does (same rules, messages
and exit codes; --json prints 0.3.8's JSON envelope). The other dataset verbs (upload, list, info, preview,
download) talk to the Osmosis Platform and are not part of osmosis-compat."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "validate a dataset file locally (0.3.8's `osmosis dataset validate`)"
DESCRIPTION = __doc__

_PLATFORM_VERBS = ("upload", "list", "info", "logs", "preview", "download")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dataset_command", metavar="COMMAND")
    validate = sub.add_parser("validate", help="check a .jsonl, .csv or .parquet dataset file")
    validate.add_argument("file", help="the dataset file")
    validate.add_argument("--json", action="store_true", help="print 0.3.8's JSON result instead of text")
    for verb in _PLATFORM_VERBS:
        stub = sub.add_parser(verb, help="not available: needs the Osmosis Platform", add_help=False)
        stub.add_argument("rest", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    """0 when the file is valid, 1 otherwise (the errors listed), as 0.3.8."""
    command = getattr(args, "dataset_command", None)
    if command is None:
        print("Error: `osmosis dataset` needs a command: validate FILE", file=sys.stderr)
        return 1
    if command != "validate":
        print(f"Error: `osmosis dataset {command}` needs the Osmosis Platform, which osmosis-compat never contacts; "
              "`osmosis dataset validate FILE` checks a file locally.", file=sys.stderr)
        return 1
    from osmosis_compat.evaluation.dataset_check import DatasetCheckError, check_dataset, format_size
    from osmosis_compat.shim.names import _version

    def fail(message: str) -> int:
        if args.json:
            print(json.dumps({"schema_version": 1, "command": "dataset validate", "cli_version": _version(),
                              "error": {"code": "VALIDATION", "message": message, "details": {}}}), file=sys.stderr)
        else:
            print(f"Error: {message}", file=sys.stderr)
        return 1

    try:
        check = check_dataset(args.file)
    except DatasetCheckError as exc:
        return fail(str(exc))
    if check.errors:
        return fail("Validation failed:\n" + "\n".join(f"  - {e}" for e in check.errors))
    if args.json:
        print(json.dumps({"schema_version": 1, "data": {
            "valid": True, "file": str(check.file), "file_name": check.file.name, "extension": check.extension,
            "file_size": check.file_size, "errors": [], "warnings": check.warnings}}))
        return 0
    print("Dataset Validation")
    print(f"  File     {check.file.name}")
    print(f"  Size     {format_size(check.file_size)}")
    print(f"  Status   Valid {check.extension} file")
    for warning in check.warnings:
        print(f"  Warning  {warning}")
    return 0
