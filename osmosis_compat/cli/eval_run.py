"""osmosis eval run CONFIG.toml: osmosis-ai 0.3.8's local evaluation of a rollout, on osmosis-compat.

Reads 0.3.8's eval config (rollouts/<rollout>/<entrypoint>, model_path, [evaluation] limit / n / batch_size /
pass_threshold / agent_workflow_timeout_s), serves the entrypoint on 127.0.0.1 and drives every selected row n
times through the 0.3.8 polling protocol, with the model reached through LiteLLM (model_path, or --model; --model
builtin is the built-in deterministic policy, no key, no network). The run is named (--name, else generated) and
written to <-o ROOT, default .osmosis/evals>/<name>/ in 0.3.8's layout; an interrupted run resumes with the same
--name (--retry-failed also re-runs failed attempts, --fresh archives it and starts again).

The dataset is --dataset-file (experiment.dataset names a platform dataset, which osmosis-compat never fetches).
--rows "3,7,10-20" selects rows by their index in the file (overrides limit). Exit 0 when the run finished, 1 on
a setup error. --upload, --tunnel, --secrets-file need the Osmosis Platform or the internet and are refused.

osmosis eval rubric -d DATA.jsonl -r RUBRIC --model MODEL scores conversations with evaluate_rubric (0.3.8).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]


class _RunError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    """``osmosis eval run|rubric`` (0.3.8's subcommands)."""
    from .main import plain_text

    parser = argparse.ArgumentParser(prog="osmosis eval", description=plain_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="eval_command", metavar="COMMAND")
    run = sub.add_parser("run", help="run an evaluation locally (0.3.8)")
    run.add_argument("config", type=Path, help="the evaluation config TOML")
    run.add_argument("--name", help="run name: a previous run's name resumes it")
    run.add_argument("-o", "--output", type=Path, help="run output root (default .osmosis/evals/)")
    run.add_argument("--dataset-file", type=Path, help="the local dataset file (.jsonl, .csv or .parquet)")
    run.add_argument("--rows", help='dataset rows to run, e.g. "3,7,10-20" (overrides limit)')
    run.add_argument("--fresh", action="store_true", help="archive this run name's results and start clean")
    run.add_argument("--retry-failed", action="store_true", help="also re-run failed and skipped work items")
    run.add_argument("--max-in-flight", type=int, help="concurrent rollouts (default evaluation.batch_size, then 1)")
    run.add_argument("-y", "--yes", action="store_true", help="accepted (no confirmation is asked)")
    run.add_argument("--model", help="override model_path: a LiteLLM id, or 'builtin' (offline)")
    run.add_argument("--base-url", help="an OpenAI-compatible base URL for the model (…/v1)")
    run.add_argument("--api-key", help="the model provider's key (default: its variable)")
    run.add_argument("--verbose", action="store_true", help="show server and agent logs")
    for refused in ("--upload", "--tunnel", "--secrets-file", "--advertise-url"):
        run.add_argument(refused, nargs="?", const=True, default=None, help=argparse.SUPPRESS)
    run.add_argument("--rollout-port", type=int, help=argparse.SUPPRESS)
    run.add_argument("--listener-port", type=int, help=argparse.SUPPRESS)
    rubric = sub.add_parser("rubric", help="score conversations against a rubric with an LLM judge (0.3.8)")
    rubric.add_argument("-d", "--data", required=True, type=Path, help="JSONL file with conversations")
    rubric.add_argument("-r", "--rubric", required=True, help="rubric text, or @file.txt")
    rubric.add_argument("--model", required=True, help="judge model (LiteLLM format, e.g. openai/gpt-5.4)")
    rubric.add_argument("-n", "--number", type=int, default=1, help="evaluation runs per record")
    rubric.add_argument("-o", "--output", type=Path, help="write the results as JSON to this file")
    rubric.add_argument("--api-key", help="the judge's key (deprecated upstream; prefer the provider variable)")
    rubric.add_argument("--base-url", help="an OpenAI-compatible base URL for the judge (osmosis-compat)")
    rubric.add_argument("--timeout", type=float, help="request timeout in seconds")
    rubric.add_argument("--score-min", type=float, default=0.0)
    rubric.add_argument("--score-max", type=float, default=1.0)
    return parser


def main(argv: list[str]) -> int:
    """``osmosis eval run …`` / ``osmosis eval rubric …``."""
    args = build_parser().parse_args(argv)
    try:
        if args.eval_command == "rubric":
            return _rubric(args)
        return _run(args)
    except _RunError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def select_rows(dataset: Path, *, rows: str | None, limit: int | None) -> tuple[list[Any], int]:
    """0.3.8's row selection: ``--rows`` (source indices), else the first ``limit`` rows, else all; every selected
    row must satisfy the dataset contract. Returns ``(rows, total rows in the file)``."""
    from osmosis_compat.evaluation.dataset import DatasetError, RowError, read_dataset
    from osmosis_compat.evaluation.local_run import LocalRunError, parse_row_selector

    try:
        items = read_dataset(dataset)
    except DatasetError as exc:
        raise _RunError(f"dataset {exc}") from exc
    total = len(items)
    if rows is not None:
        try:
            wanted = parse_row_selector(rows)
        except LocalRunError as exc:
            raise _RunError(str(exc)) from exc
        out_of_range = [i for i in wanted if i >= total]
        if out_of_range:
            raise _RunError(f"--rows selects {out_of_range} but {dataset.name} has {total} rows "
                            f"(valid indices are 0-{max(total - 1, 0)})")
        items = [item for item in items if item.index in set(wanted)]
    elif limit is not None and limit > 0:
        items = items[:limit]
    bad = [item for item in items if isinstance(item, RowError)]
    if bad:
        raise _RunError(f"row {bad[0].index}: {bad[0].message}")
    if not items:
        raise _RunError(f"{dataset} selected no rows")
    return items, total


def _run(args: argparse.Namespace) -> int:
    from osmosis_compat.evaluation.drivers import RequestOptions
    from osmosis_compat.evaluation.eval_config import EvalConfigError, load_eval_config
    from osmosis_compat.evaluation.local_run import DEFAULT_ROOT, LocalRunError, RunSettings, run_named
    from osmosis_compat.legacy.exceptions import CLIError
    from osmosis_compat.server.agents import AgentSpec, AgentSpecError, url_safe_name

    from .eval import _configure_logging
    from .legacy_test import model_policy
    from .targets import load_target

    for refused in ("upload", "tunnel", "secrets_file", "advertise_url"):
        if getattr(args, refused) is not None:
            raise _RunError(f"--{refused.replace('_', '-')} needs the Osmosis Platform or the internet, which "
                            "osmosis-compat never contacts")
    _configure_logging(args.verbose)
    try:
        config = load_eval_config(args.config)
        n = config.number("n", 1, int)
        limit = config.number("limit", None, int)
        batch_size = config.number("batch_size", 1, int)
        pass_threshold = config.number("pass_threshold", 1.0, float)
        timeout = config.number("agent_workflow_timeout_s", 450.0, float)
    except EvalConfigError as exc:
        raise _RunError(str(exc)) from exc
    if args.dataset_file is None:
        raise _RunError(f"--dataset-file is required: experiment.dataset ({config.experiment.dataset!r}) names a "
                        "platform dataset, which osmosis-compat never downloads")
    if n < 1:
        raise _RunError("[evaluation].n must be >= 1")
    entrypoint = config.entrypoint_path()
    if not entrypoint.is_file():
        raise _RunError(f"entrypoint not found: {entrypoint} (rollouts/<rollout>/<entrypoint> of the workspace)")
    try:
        target = load_target(str(entrypoint))
        agent = AgentSpec.from_target(target, name=url_safe_name(target.name))
    except (CLIError, AgentSpecError) as exc:
        raise _RunError(str(exc)) from exc
    rows, total = select_rows(args.dataset_file, rows=args.rows, limit=limit)
    model = args.model or config.experiment.model_path
    policy = model_policy(model, api_key=args.api_key, base_url=args.base_url, temperature=None, max_tokens=None,
                          error=_RunError)
    settings = RunSettings(
        name=args.name, root=args.output or DEFAULT_ROOT, n=n, pass_threshold=pass_threshold,
        concurrency=args.max_in_flight or batch_size, fresh=args.fresh, retry_failed=args.retry_failed,
        inputs={"entrypoint": str(entrypoint), "dataset": str(args.dataset_file.resolve()), "model": model},
        identity={"dataset_name": args.dataset_file.name, "model_name": model,
                  "rollout_name": config.experiment.rollout},
    )
    options = RequestOptions(timeout_s=timeout, graded=target.kind != "workflow" or target.grader is not None)
    try:
        outcome = asyncio.run(_execute(agent, rows, policy, options, settings, total))
    except LocalRunError as exc:
        raise _RunError(str(exc)) from exc
    print_run(outcome)
    return 0


async def _execute(agent: Any, rows: list[Any], policy: Any, options: Any, settings: Any, total: int) -> Any:
    from osmosis_compat.evaluation.local_run import run_named

    def on_attempt(record: Any) -> None:
        reward = "" if record.reward is None else f" reward={record.reward:g}"
        error = f" [{record.error_type}]" if record.error_type else ""
        print(f"row {record.row_index} run {record.run_index}: {record.status}{reward}{error}", file=sys.stderr,
              flush=True)

    try:
        if hasattr(policy, "preflight"):
            await policy.preflight()
        return await run_named(agent, rows, protocol="polling", policy=policy, options=options, settings=settings,
                               total_dataset_rows=total, on_attempt=on_attempt)
    finally:
        if hasattr(policy, "aclose"):
            await policy.aclose()


def print_run(outcome: Any) -> None:
    """The summary of a named run (stdout)."""
    summary = outcome.summary
    print(f"Run {outcome.name}: {outcome.ran} attempt(s) run, {outcome.resumed} kept from before")
    print(f"  passed {summary['passed']} of {summary['completed_samples']} (pass rate {summary['pass_rate']:.3f}, "
          f"threshold {summary['pass_threshold']:g}); failed {summary['failed']}")
    stats = summary.get("reward_stats")
    if stats:
        print(f"  reward mean {stats['mean']:.3f}  min {stats['min']:.3f}  max {stats['max']:.3f}")
    for point in summary.get("pass_at_k", []):
        print(f"  pass@{point['k']}: {point['value']:.3f}")
    if outcome.archived is not None:
        print(f"  previous results archived to {outcome.archived}")
    print(f"  results: {outcome.directory}")


def _rubric(args: argparse.Namespace) -> int:
    """0.3.8's ``osmosis eval rubric``: each JSONL record's last assistant message scored ``--number`` times."""
    from osmosis_compat.legacy.exceptions import MissingAPIKeyError, ProviderRequestError
    from osmosis_compat.legacy.rubric import evaluate_rubric

    rubric = args.rubric
    if rubric.startswith("@"):
        try:
            rubric = Path(rubric[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise _RunError(f"cannot read rubric file {rubric[1:]}: {exc}") from exc
    records = []
    try:
        lines = args.data.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise _RunError(f"cannot read {args.data}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _RunError(f"{args.data}:{number}: invalid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise _RunError(f"{args.data}:{number}: each line must be a JSON object")
        records.append(record)

    def candidate(record: dict[str, Any]) -> str:
        if isinstance(record.get("solution_str"), str):
            return record["solution_str"]
        for message in reversed(record.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
                return str(content or "")
        return ""

    async def score_all() -> list[dict[str, Any]]:
        results = []
        for index, record in enumerate(records):
            scores, errors = [], []
            for _ in range(max(1, args.number)):
                try:
                    result = await evaluate_rubric(
                        solution_str=candidate(record) or " ", rubric=rubric, model=args.model,
                        ground_truth=record.get("ground_truth"), original_input=record.get("original_input"),
                        metadata=record.get("metadata"), score_min=args.score_min, score_max=args.score_max,
                        api_key=args.api_key, timeout=args.timeout, base_url=args.base_url)
                    scores.append(result.score)
                except (ProviderRequestError, MissingAPIKeyError, TypeError, ValueError) as exc:
                    errors.append(str(exc))
            results.append({"index": index, "scores": scores, "errors": errors,
                            "average": sum(scores) / len(scores) if scores else None})
        return results

    results = asyncio.run(score_all())
    averages = [r["average"] for r in results if r["average"] is not None]
    for result in results:
        shown = "error: " + result["errors"][0] if result["average"] is None else f"{result['average']:.3f}"
        print(f"record {result['index']}: {shown}")
    overall = sum(averages) / len(averages) if averages else None
    print(f"average score: {overall:.3f} over {len(averages)} record(s)" if overall is not None
          else "no record was scored")
    if args.output is not None:
        args.output.write_text(json.dumps({"model": args.model, "rubric": rubric, "results": results,
                                           "average": overall}, indent=2) + "\n")
    return 0 if averages or not records else 1
