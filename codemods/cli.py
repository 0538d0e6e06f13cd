"""``osmosis-migrate``: the command line (conventions of ruff/black). See ``osmosis-migrate --help``.

Kept import-light: libcst and the rules are imported only once there is work to do, so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import time
from typing import Optional, Sequence

EXIT_OK = 0
EXIT_CHANGES = 1
EXIT_USAGE = 2
EXIT_FAILED = 3

EPILOG = """\
commands:
  osmosis-migrate PATH [PATH ...]   migrate files in place (write `.` for the current directory)
  osmosis-migrate rules             list the rules and their codes
  osmosis-migrate todo [PATH ...]   list the TODO(osmosis-migrate …) markers still open (exit 1 if any)
  (to migrate a directory named `rules` or `todo`, write ./rules)

exit codes:
  0  done, or nothing to do
  1  changes needed (--check / --diff), or open TODOs (todo)
  2  usage error, or refusing to write files with uncommitted changes (see --allow-dirty)
  3  finished, but some file failed to parse or a rule crashed (listed in the summary)
  with --verify: 0 every verified file behaves the same, 1 a difference was found, 3 a file failed or its
  verification errored (files it cannot run are listed as not verified; they do not change the exit code)

opting out:
  # osmosis-migrate: skip-file   anywhere in a file: the file is left alone
  # osmosis-migrate: skip        on a class/def/statement line (or the comment line above it): that node is left alone

TODO markers look like `# TODO(osmosis-migrate OM190): what to do by hand`; a re-run never duplicates them.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 on usage errors: keep that, with our prefix
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"osmosis-migrate: error: {message}\n")


def _split(values: Optional[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x for x in v.split(",") if x.strip())
    return out


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="osmosis-migrate",
        description="Migrate legacy Osmosis agent loops and plain Strands / OpenAI Agents code to the Osmosis "
        "AgentWorkflow integrations (libcst codemods). Writes files in place by default.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files or directories, migrated in place (required: write `.` for the current directory)")
    p.add_argument("--version", action="version", version=f"osmosis-migrate {_version()}")
    mode = p.add_argument_group("mode")
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing (exit 1 if anything would change)")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything would change")
    mode.add_argument("--verify", action="store_true",
                      help="write nothing; run each file that would change, original and migrated, on sample prompts "
                      "against a fake controller with the scripted policy and report any difference in reward, final "
                      "answer or model calls (exit 1 if any; needs osmosis-compat and the file's frameworks installed)")
    p.add_argument("--select", action="append", metavar="CODES", help="only these rules: codes/prefixes (OM1, OM100) or names, comma-separated")
    p.add_argument("--ignore", action="append", metavar="CODES", help="skip these rules (same syntax as --select)")
    p.add_argument("--strategy", choices=("auto", "rewrite", "wrap"), default="auto",
                   help="legacy loops: rewrite to a Strands workflow (auto, the default, and rewrite; a loop that "
                   "cannot be rewritten gets a TODO) or wrap with osmosis-compat's adapter (the file then needs "
                   "osmosis-compat)")
    p.add_argument("--target", choices=("auto", "0.2", "0.3"), default="auto",
                   help="osmosis-ai API to write: 0.2 (named sessions, ctx.samples + set_sample_reward) or 0.3 (one "
                   "sample, ctx.sample + set_reward, sessions without names); auto (default): the osmosis-ai "
                   "requirement declared in the closest pyproject.toml / requirements*.txt / setup.cfg, else 0.2")
    p.add_argument("--exclude", action="append", metavar="GLOB", default=[], help="exclude files/directories matching GLOB (repeatable)")
    p.add_argument("--no-default-excludes", action="store_true", help="do not skip .git, virtualenvs, .tox, build, dist, site-packages, node_modules, …")
    p.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="worker processes (default: number of CPU cores)")
    p.add_argument("--allow-dirty", action="store_true", help="write even to files with uncommitted git changes")
    p.add_argument("--report", metavar="FILE.json", help="write a JSON report (versioned schema) to FILE.json")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only on a terminal anyway)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary's first line")
    return p


def _version() -> str:
    """The installed osmosis-compat version (osmosis-migrate ships in it)."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("osmosis-compat")
    except (ImportError, PackageNotFoundError):  # running from a source tree that is not installed
        return "unknown"


def _progress_printer(stream):
    state = {"last": 0.0}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - state["last"] < 0.1:
            return
        state["last"] = now
        width = 30
        filled = int(width * done / total) if total else width
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        if done == total:
            stream.write("\r" + " " * (width + 30) + "\r")
        stream.flush()

    return show


def _cmd_rules() -> int:
    from codemods.driver import all_rule_classes

    for r in all_rule_classes():
        print(f"{r.code}  {r.name:<14} {r.summary}")
    return EXIT_OK


TODO_RE = re.compile(rb"#\s*TODO\(osmosis-migrate(?: (OM\d+))?\):\s*(.*)")


def _cmd_todo(argv: Sequence[str]) -> int:
    p = _Parser(prog="osmosis-migrate todo", description="List the TODO(osmosis-migrate …) markers still open.")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    args = p.parse_args(argv)
    from codemods.walk import iter_python_files

    paths = args.paths or ["."]
    missing = [x for x in paths if not os.path.exists(x)]
    if missing:
        print(f"osmosis-migrate: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    count = 0
    for path in iter_python_files(paths, exclude=args.exclude):
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        if b"TODO(osmosis-migrate" not in data:
            continue
        for lineno, line in enumerate(data.splitlines(), 1):
            m = TODO_RE.search(line)
            if m:
                count += 1
                code = (m.group(1) or b"").decode()
                print(f"{path}:{lineno}: {code} {m.group(2).decode('utf-8', 'replace').strip()}".replace(":  ", ": "))
    print(f"{count} open TODO marker{'s' if count != 1 else ''}", file=sys.stderr)
    return EXIT_CHANGES if count else EXIT_OK


def _file_encoding(data: bytes) -> str:
    """The encoding a source file declares (PEP 263 cookie or BOM), utf-8 by default."""
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except (SyntaxError, LookupError):
        return "utf-8"


def _confirm_dirty(dirty: Sequence[str]) -> bool:
    """On a terminal, ask; otherwise (CI, pipes) never prompt: refuse."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    sys.stderr.write("Write anyway? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def _verify(changed, *, failed: bool, report: Optional[str] = None, jobs: int = 2, target: str = "0.3") -> int:
    """``--verify``: run original and migrated versions of the changed files and report (codemods.verify); with
    ``report``, the verdicts are added to that report document as its ``"verify"`` list."""
    from codemods.verify import DIFFERENT, ERROR, verify_migrations

    items = []
    for r in changed:
        encoding = _file_encoding(r.old_bytes or b"")
        items.append((r.path, (r.old_bytes or b"").decode(encoding), (r.new_bytes or b"").decode(encoding), r.edits))
    try:
        verdicts = verify_migrations(items, jobs=jobs, target=target)
    except ImportError as exc:
        print(f"osmosis-migrate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    counts = {s: sum(v.status == s for v in verdicts) for s in ("same", DIFFERENT, "not-verified", ERROR)}
    print(f"osmosis-migrate --verify: {len(verdicts)} file(s) run: {counts['same']} same, {counts[DIFFERENT]} "
          f"different, {counts['not-verified']} not verified, {counts[ERROR]} errored", file=sys.stderr)
    for v in verdicts:
        print("\n".join(v.describe()), file=sys.stderr)
    if report:
        import json

        from codemods.report import write_report

        with open(report, encoding="utf-8") as fh:
            document = json.load(fh)
        document["verify"] = [v.to_json() for v in verdicts]
        write_report(report, document)
    if failed or counts[ERROR]:
        return EXIT_FAILED
    return EXIT_CHANGES if counts[DIFFERENT] else EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rules"]:
        if len(argv) > 1:
            print("osmosis-migrate: error: `rules` takes no arguments", file=sys.stderr)
            return EXIT_USAGE
        return _cmd_rules()
    if argv[:1] == ["todo"]:
        return _cmd_todo(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.paths:
        # files are rewritten in place: the tree to touch is never implied
        parser.print_usage(sys.stderr)
        print("osmosis-migrate: error: give the files or directories to migrate (they are rewritten in place); "
              "write `osmosis-migrate .` for the current directory", file=sys.stderr)
        return EXIT_USAGE
    paths = args.paths
    missing = [x for x in paths if not os.path.exists(x)]
    if missing:
        print(f"osmosis-migrate: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        print("osmosis-migrate: error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE

    from codemods.driver import STATUS_CHANGED, UsageError, run_many, select_rules, write_atomic
    from codemods.report import build_report, format_summary, relocate_lines, summarize, write_report
    from codemods.targets import TargetChoice, detect_target
    from codemods.walk import iter_python_files

    try:
        rules = select_rules(_split(args.select), _split(args.ignore))
    except UsageError as exc:
        print(f"osmosis-migrate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mode = "diff" if args.diff else "check" if args.check or args.verify else "write"
    files = list(iter_python_files(
        paths, exclude=args.exclude, use_default_excludes=not args.no_default_excludes,
        respect_gitignore=not args.no_gitignore,
    ))
    jobs = args.jobs or os.cpu_count() or 1
    progress = None
    if not args.no_progress and sys.stderr.isatty():
        progress = _progress_printer(sys.stderr)
    target = TargetChoice(args.target, "--target") if args.target != "auto" else detect_target(paths)
    results = run_many(files, rules, strategy=args.strategy, jobs=jobs, progress=progress,
                       target=target.target) if rules else []
    changed = [r for r in results if r.status == STATUS_CHANGED]
    for r in changed:
        relocate_lines(r)

    written = 0
    refused = False
    if mode == "diff":
        for r in changed:
            encoding = _file_encoding(r.old_bytes or b"")
            old = (r.old_bytes or b"").decode(encoding, "replace").splitlines(keepends=True)
            new = (r.new_bytes or b"").decode(encoding, "replace").splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(old, new, f"a/{r.path}", f"b/{r.path}"))
    elif mode == "write" and changed:
        if not args.allow_dirty:
            from codemods.gitcheck import dirty_files

            dirty = dirty_files([r.path for r in changed])
            if dirty:
                print("osmosis-migrate: these files have uncommitted changes (commit or stash them, or pass "
                      "--allow-dirty):", file=sys.stderr)
                for d in dirty:
                    print(f"  {d}", file=sys.stderr)
                refused = not _confirm_dirty(dirty)
        if not refused:
            for r in changed:
                try:
                    write_atomic(r.path, r.new_bytes or b"")
                    written += 1
                except OSError as exc:
                    r.status, r.error = "failed", f"cannot write: {exc.strerror or exc}"

    summary = summarize(results, rules, written=written)
    text = format_summary(results, summary, mode, target)
    print(text.splitlines()[0] if args.quiet else text, file=sys.stderr)
    if args.report:
        try:
            write_report(args.report, build_report(results, summary, mode=mode, strategy=args.strategy, rules=rules, target=target))
        except OSError as exc:
            print(f"osmosis-migrate: error: cannot write report {args.report}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if refused:
        print("osmosis-migrate: nothing written", file=sys.stderr)
        return EXIT_USAGE
    if args.verify:
        return _verify(changed, failed=bool(summary.failed), report=args.report, jobs=min(jobs, 2),
                       target=target.target)
    if summary.failed:
        return EXIT_FAILED
    if mode in ("diff", "check") and changed:
        return EXIT_CHANGES
    return EXIT_OK


if __name__ == "__main__":  # python -m codemods.cli
    sys.exit(main())
