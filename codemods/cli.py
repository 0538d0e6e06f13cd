"""``osmosis-migrate``: the command line (conventions of ruff/black). See ``osmosis-migrate --help``.

Kept import-light: libcst and the rules are imported only once there is work to do, so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from typing import Any, NamedTuple, Optional, Sequence

EXIT_OK = 0
EXIT_CHANGES = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
OUTPUT_FORMATS = ("text", "github", "json")

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

configuration: [tool.osmosis-migrate] in the closest pyproject.toml above the first PATH (select, ignore,
  exclude, extend-exclude, target, strategy, line-length); flags given on the command line override it

output formats (--output-format): text (the summary, on stderr), github (workflow annotations on stdout: a
  warning per TODO marker, an error per failed file, and with --check/--diff per file that would change),
  json (the --report document on stdout)

opting out:
  # osmosis-migrate: skip-file   anywhere in a file: the file is left alone
  # osmosis-migrate: skip        on a class/def/statement line (or the comment line above it): that node is left alone

TODO markers look like `# TODO(osmosis-migrate OM190): what to do by hand`, wrapped at the file's line length
(`#   ` continuation lines); a re-run never duplicates or rewraps them. Every TODO count (summary, report,
`todo`) counts the markers open in the files scanned.
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
    p.add_argument("--strategy", choices=("auto", "rewrite", "wrap"), default=None,
                   help="legacy loops: rewrite as an AgentWorkflow + Grader that keep the loop's own code (auto, the "
                   "default, and rewrite; a loop that cannot be rewritten gets a TODO) or wrap with osmosis-compat's "
                   "adapter (the file then needs osmosis-compat)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                   help="text (default): the summary on stderr; github: GitHub Actions annotations on stdout; json: "
                   "the report document on stdout")
    p.add_argument("--target", choices=("auto", "0.2", "0.3"), default=None,
                   help="osmosis-ai API to write: 0.2 (named sessions, ctx.samples + set_sample_reward) or 0.3 (one "
                   "sample, ctx.sample + set_reward, sessions without names); auto (default): 0.2 when the closest "
                   "pyproject.toml / setup.cfg / setup.py / requirements*.txt requires the 0.2 workflow era "
                   "(0.2.18-0.2.31), else 0.3 (today's osmosis-ai)")
    p.add_argument("--exclude", action="append", metavar="GLOB", default=None,
                   help="exclude files/directories matching GLOB (repeatable; replaces the configuration's exclude)")
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


def _load_config(paths: Sequence[str]):
    """The ``[tool.osmosis-migrate]`` configuration for ``paths``, or an error message."""
    from codemods.config import ConfigError, load_config

    try:
        return load_config(paths), None
    except ConfigError as exc:
        return None, str(exc)


def _cmd_todo(argv: Sequence[str]) -> int:
    p = _Parser(prog="osmosis-migrate todo", description="List the TODO(osmosis-migrate …) markers still open "
                "(exit 1 if any): the markers the summary of a run counts, in the same files.")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--exclude", action="append", default=None, metavar="GLOB")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    args = p.parse_args(argv)
    from codemods.markers import find_markers
    from codemods.report import todo_count_text
    from codemods.walk import iter_python_files

    paths = args.paths or ["."]
    missing = [x for x in paths if not os.path.exists(x)]
    if missing:
        print(f"osmosis-migrate: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    config, error = _load_config(paths)
    if error:
        print(f"osmosis-migrate: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    exclude = [*(args.exclude if args.exclude is not None else config.exclude or ()), *config.extend_exclude]
    found = []
    for path in iter_python_files(paths, exclude=exclude):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        found += [(path, m) for m in find_markers(data)]  # a bytes search first: most files have none
    if args.output_format == "json":
        import json

        doc = {"schema": "osmosis-migrate-todo", "version": 1, "count": len(found),
               "files": len({p for p, _ in found}),
               "markers": [{"path": p, "line": m.line, "lines": m.lines, "code": m.code, "reason": m.reason}
                           for p, m in found]}
        print(json.dumps(doc, indent=2))
    elif args.output_format == "github":
        from codemods.output import annotation

        for path, m in found:
            print(annotation("warning", m.reason, file=path, line=m.line, end_line=m.line + m.lines - 1,
                             title=m.code or "TODO"))
    else:
        for path, m in found:
            print(f"{path}:{m.line}: {m.code} {m.reason}".replace(":  ", ": "))
    files = len({p for p, _ in found})
    print(f"{todo_count_text(len(found))} in {files} file{'s' if files != 1 else ''}", file=sys.stderr)
    return EXIT_CHANGES if found else EXIT_OK


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


class _Settings(NamedTuple):
    """The run's settings: command-line flags over ``[tool.osmosis-migrate]`` over the defaults (a NamedTuple:
    ``dataclasses`` would import ``inspect`` and slow ``--help``)."""

    select: list[str]
    ignore: list[str]
    exclude: list[str]
    strategy: str
    target: Any  # codemods.targets.TargetChoice
    declared: Any  # the TargetChoice the tree's requirement gives (its requirement is reported either way)


def _settings(args: argparse.Namespace, config: Any) -> _Settings:
    from codemods.targets import TargetChoice, detect_target

    declared = detect_target(args.paths)
    if args.target not in (None, "auto"):
        target = TargetChoice(args.target, "--target")
    elif args.target is None and config.target not in (None, "auto"):
        target = TargetChoice(config.target, f"{config.path}: [tool.osmosis-migrate] target")
    else:
        target = declared
    return _Settings(
        select=_split(args.select) if args.select is not None else list(config.select or ()),
        ignore=_split(args.ignore) if args.ignore is not None else list(config.ignore or ()),
        exclude=[*(args.exclude if args.exclude is not None else config.exclude or ()), *config.extend_exclude],
        strategy=args.strategy or config.strategy or "auto",
        target=target,
        declared=declared,
    )


def _diffs(changed) -> dict[str, str]:
    """path → unified diff of each changed file (decoded with the file's encoding)."""
    out = {}
    for r in changed:
        encoding = _file_encoding(r.old_bytes or b"")
        old = (r.old_bytes or b"").decode(encoding, "replace").splitlines(keepends=True)
        new = (r.new_bytes or b"").decode(encoding, "replace").splitlines(keepends=True)
        out[r.path] = "".join(difflib.unified_diff(old, new, f"a/{r.path}", f"b/{r.path}"))
    return out


def _write(changed, allow_dirty: bool, quiet_prompt: bool) -> tuple[int, list[str]]:
    """Write the changed files unless some have uncommitted changes (then ask on a terminal, else refuse).
    Returns (files written, the dirty files when refused)."""
    from codemods.driver import write_atomic

    if not allow_dirty:
        from codemods.gitcheck import dirty_files

        dirty = dirty_files([r.path for r in changed])
        if dirty:
            print(f"osmosis-migrate: {len(dirty)} of the {len(changed)} file(s) to write "
                  f"{'has' if len(dirty) == 1 else 'have'} uncommitted changes (commit or stash them, or pass "
                  "--allow-dirty):", file=sys.stderr)
            for d in dirty:
                print(f"  {d}", file=sys.stderr)
            if quiet_prompt or not _confirm_dirty(dirty):
                return 0, dirty
    written = 0
    for r in changed:
        try:
            write_atomic(r.path, r.new_bytes or b"")
            written += 1
        except OSError as exc:
            r.status, r.error = "failed", f"cannot write: {exc.strerror or exc}"
    return written, []


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
    missing = [x for x in args.paths if not os.path.exists(x)]
    if missing:
        print(f"osmosis-migrate: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        print("osmosis-migrate: error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    config, error = _load_config(args.paths)
    if error:
        print(f"osmosis-migrate: error: {error}", file=sys.stderr)
        return EXIT_USAGE

    from codemods.config import ConfigError
    from codemods.driver import STATUS_CHANGED, UsageError, run_many, select_rules
    from codemods.needs import needs_of
    from codemods.report import build_report, format_summary, relocate_lines, report_json, summarize, write_report
    from codemods.walk import iter_python_files

    try:
        settings = _settings(args, config)
        rules = select_rules(settings.select, settings.ignore)
    except (UsageError, ConfigError) as exc:
        print(f"osmosis-migrate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    fmt = args.output_format
    mode = "diff" if args.diff else "check" if args.check or args.verify else "write"
    files = list(iter_python_files(
        args.paths, exclude=settings.exclude, use_default_excludes=not args.no_default_excludes,
        respect_gitignore=not args.no_gitignore,
    ))
    jobs = args.jobs or os.cpu_count() or 1
    progress = None
    if not args.no_progress and sys.stderr.isatty():
        progress = _progress_printer(sys.stderr)
    results = run_many(files, rules, strategy=settings.strategy, jobs=jobs, progress=progress,
                       target=settings.target.target) if rules else []
    changed = [r for r in results if r.status == STATUS_CHANGED]
    for r in changed:
        relocate_lines(r)

    diffs = _diffs(changed) if mode == "diff" else None
    if diffs is not None and fmt != "json":
        sys.stdout.write("".join(diffs.values()))
    written, dirty = _write(changed, args.allow_dirty, fmt != "text") if mode == "write" and changed else (0, [])

    summary = summarize(results, rules, written=written)
    needs = needs_of(results, settings.target.target)
    declared = settings.declared.requirement.text if settings.declared.requirement else None
    refused = {"reason": "uncommitted changes", "files": dirty} if dirty else None
    text = format_summary(results, summary, mode, settings.target, refused=bool(dirty),
                          needs_lines=needs.describe(declared))
    report = None
    if args.report or fmt == "json":
        report = build_report(results, summary, mode=mode, strategy=settings.strategy, rules=rules,
                              target=settings.target, requires=needs.as_json(declared), refused=refused, diffs=diffs)
    if fmt == "json":
        sys.stdout.write(report_json(report))
    elif fmt == "github":
        from codemods.output import github_annotations

        lines = github_annotations(results, on_disk_is_output=mode == "write" and not dirty, mode=mode, dirty=dirty)
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    if fmt != "json":
        print(text.splitlines()[0] if args.quiet else text, file=sys.stderr)
    if args.report:
        try:
            write_report(args.report, report)
        except OSError as exc:
            print(f"osmosis-migrate: error: cannot write report {args.report}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if dirty:
        print(f"osmosis-migrate: nothing written: {len(dirty)} of the {summary.changed} file(s) that would change "
              f"{'has' if len(dirty) == 1 else 'have'} uncommitted changes (commit or stash them, or pass "
              "--allow-dirty)", file=sys.stderr)
        return EXIT_USAGE
    if args.verify:
        return _verify(changed, failed=bool(summary.failed), report=args.report, jobs=min(jobs, 2),
                       target=settings.target.target)
    if summary.failed:
        return EXIT_FAILED
    if mode in ("diff", "check") and changed:
        return EXIT_CHANGES
    return EXIT_OK


if __name__ == "__main__":  # python -m codemods.cli
    sys.exit(main())
