"""osmosis eval: upstream's agent evaluation with eval functions and pass@k (spec/legacy-protocol.md §2.17.4).

Every dataset row runs --n times as a legacy rollout through the real rollout app on 127.0.0.1 and the fake
TrainGate (as osmosis test does); the model is reached through LiteLLM (--model: a LiteLLM id or a bare OpenAI
name; --base-url: any OpenAI-compatible endpoint; --model builtin: the built-in deterministic policy). Each run's
transcript is scored by every --eval-fn MODULE:FN:

- a function whose first parameter is solution_str ("simple") gets solution_str (the last assistant message's
  text), ground_truth and extra_info (the dataset row as a dict);
- one whose first parameter is messages ("full") gets messages (the whole transcript), ground_truth and metadata
  (the dataset row as a dict).

Sync functions run in a thread; the result must be a number (an int becomes a float); an exception or any other
result scores 0.0. The agent's own reward is ignored. A run passes an eval function when its score reaches
--pass-threshold; pass@k is the unbiased estimator 1 - C(n-c, k) / C(n, k) over a row's n runs, averaged over rows.
--baseline-model runs every row again with another model (rollout ids end in -baseline) and reports it beside.

The 0.3.8 subcommands are here too: osmosis eval run (0.3.8's local evaluation of a workflow entrypoint) and
osmosis eval rubric (0.3.8's rubric scoring of a dataset).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

from osmosis_compat.evaluation.drivers import LegacyDriver, RequestOptions

HELP = "score an agent loop with eval functions and pass@k (upstream `osmosis eval`); `eval run` / `eval rubric`"
DESCRIPTION = __doc__

__all__ = ["EvalFunction", "load_eval_function", "pass_at_k"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--module", "--agent", dest="module", metavar="MODULE:ATTR", help="the agent loop")
    parser.add_argument("--mcp", metavar="DIR", help="a FastMCP server directory run as MCPAgentLoop")
    parser.add_argument("-d", "--dataset", type=Path, help="a .jsonl, .csv or .parquet dataset")
    parser.add_argument("--model", help="LiteLLM model id, a bare OpenAI name, or 'builtin'")
    parser.add_argument("--eval-fn", action="append", default=[], metavar="MODULE:FN",
                        help="an eval function (repeatable, at least one)")
    parser.add_argument("--n", type=int, default=1, help="runs per row (default 1)")
    parser.add_argument("--pass-threshold", type=float, default=1.0, help="a run passes when score >= this (1.0)")
    parser.add_argument("--max-turns", type=int, default=10, help="max_turns of each rollout (default 10)")
    parser.add_argument("--temperature", type=float, help="temperature sent with every model call")
    parser.add_argument("--max-tokens", type=int, help="max_tokens sent with every model call")
    parser.add_argument("--api-key", help="the model provider's key (default: its variable)")
    parser.add_argument("--base-url", help="an OpenAI-compatible base URL (…/v1)")
    parser.add_argument("--baseline-model", help="also run every row with this model, for comparison")
    parser.add_argument("--baseline-base-url", help="--base-url of the baseline model")
    parser.add_argument("--baseline-api-key", help="--api-key of the baseline model")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the report as JSON to FILE")
    parser.add_argument("--debug", action="store_true", help="write the agents' debug traces to ./eval_debug/")
    parser.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    parser.add_argument("--limit", type=int, help="at most this many rows")
    parser.add_argument("--offset", type=int, default=0, help="skip this many rows first")
    parser.add_argument("--batch-size", type=int, default=1, help="rollouts in flight at once (default 1)")


class _EvalError(Exception):
    pass


@dataclasses.dataclass
class EvalFunction:
    """A loaded eval function: ``mode`` is ``"simple"`` (first parameter ``solution_str``) or ``"full"``
    (first parameter ``messages``)."""

    name: str
    func: Callable[..., Any]
    mode: str

    async def score(self, messages: list[dict[str, Any]], ground_truth: str, row: dict[str, Any]) -> float:
        """The function's score for one transcript; 0.0 when it raises or returns a non-number."""
        from osmosis_compat.evaluation.report import last_assistant_text

        if self.mode == "simple":
            kwargs = {"solution_str": last_assistant_text(messages) or "", "ground_truth": ground_truth,
                      "extra_info": row}
        else:
            kwargs = {"messages": messages, "ground_truth": ground_truth, "metadata": row}
        try:
            if inspect.iscoroutinefunction(self.func):
                value = await self.func(**kwargs)
            else:
                value = await asyncio.to_thread(self.func, **kwargs)
        except Exception:  # upstream: a failing eval function scores the run 0.0
            return 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            return 0.0
        return float(value)


def load_eval_function(spec: str) -> EvalFunction:
    """``MODULE:FN`` (or ``path.py:FN``) → :class:`EvalFunction`; ``CLIError`` with the reason otherwise."""
    from osmosis_compat.legacy.exceptions import CLIError

    from .loading import import_target

    if ":" not in spec:
        raise CLIError(f"--eval-fn {spec!r}: expected MODULE:FUNCTION")
    _module, attr, func = import_target(spec)
    if not callable(func):
        raise CLIError(f"--eval-fn {spec}: '{attr}' is not callable")
    params = list(inspect.signature(func).parameters)
    if params[:1] == ["solution_str"]:
        mode = "simple"
    elif params[:1] == ["messages"]:
        mode = "full"
    else:
        raise CLIError(f"--eval-fn {spec}: the first parameter must be 'solution_str' (called with solution_str, "
                       f"ground_truth, extra_info) or 'messages' (called with messages, ground_truth, metadata); "
                       f"got {params[:1] or 'none'}")
    return EvalFunction(name=attr, func=func, mode=mode)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator ``1 - C(n-c, k) / C(n, k)`` (``n`` runs, ``c`` of them passed)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def run(args: argparse.Namespace) -> int:
    """``osmosis eval``: 0 when the run completed, 1 on a setup error (or when no run at all succeeded)."""
    try:
        agent, rows, functions, policies = _prepare(args)
    except _EvalError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return asyncio.run(_run(args, agent, rows, functions, policies))


def _prepare(args: argparse.Namespace) -> tuple[Any, list[Any], list[EvalFunction], dict[str, Any]]:
    from osmosis_compat.evaluation.dataset import DatasetError, DatasetRow, read_dataset
    from osmosis_compat.legacy.exceptions import CLIError
    from osmosis_compat.server.agents import AgentSpec, AgentSpecError, url_safe_name

    from .legacy_test import model_policy
    from .targets import load_mcp_target, load_target

    if bool(args.module) == bool(args.mcp):
        raise _EvalError("pass exactly one agent: -m/--module or --mcp")
    if args.dataset is None:
        raise _EvalError("-d/--dataset is required")
    if not args.model:
        raise _EvalError("--model is required (a LiteLLM model id, or 'builtin' for the built-in policy)")
    if not args.eval_fn:
        raise _EvalError("at least one --eval-fn MODULE:FN is required")
    if args.n < 1 or args.batch_size < 1:
        raise _EvalError("--n and --batch-size must be >= 1")
    if args.offset < 0 or (args.limit is not None and args.limit < 0):
        raise _EvalError("--offset and --limit must be >= 0")
    if args.output is not None and not (args.output.parent if str(args.output.parent) else Path(".")).is_dir():
        raise _EvalError(f"-o {args.output}: directory {args.output.parent} does not exist")
    try:
        functions = [load_eval_function(spec) for spec in args.eval_fn]
        target = load_mcp_target(args.mcp) if args.mcp else load_target(args.module)
        agent = AgentSpec.from_target(target, name=url_safe_name(target.name))
    except (CLIError, AgentSpecError) as exc:
        raise _EvalError(str(exc)) from exc
    if agent.kind != "legacy":
        raise _EvalError(f"{target.spec} is a workflow: `osmosis eval` runs legacy agent loops; evaluate a "
                         "workflow with `osmosis eval run` or `osmosis-compat eval`")
    try:
        items = read_dataset(args.dataset, offset=args.offset, limit=args.limit)
    except DatasetError as exc:
        raise _EvalError(f"dataset {exc}") from exc
    bad = [item for item in items if not isinstance(item, DatasetRow)]
    if bad:
        raise _EvalError(f"dataset row {bad[0].index}: {bad[0].message}")
    policies = {"primary": model_policy(args.model, api_key=args.api_key, base_url=args.base_url,
                                        temperature=args.temperature, max_tokens=args.max_tokens, error=_EvalError)}
    if args.baseline_model:
        policies["baseline"] = model_policy(args.baseline_model, api_key=args.baseline_api_key,
                                            base_url=args.baseline_base_url, temperature=args.temperature,
                                            max_tokens=args.max_tokens, error=_EvalError)
    return agent, items, functions, policies


class _EvalDriver(LegacyDriver):
    """The legacy driver with upstream eval's rollout ids (``eval-<row>-run-<k>[-<tag>]``) and metadata
    (``execution_mode: "eval"``, ``run_index``, ``model_tag: "baseline"`` for the baseline)."""

    def __init__(self, *args: Any, tag: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tag = tag

    def metadata(self, row: Any) -> dict[str, Any]:
        data = {**LegacyDriver.metadata(row), "execution_mode": "eval"}
        data.pop("test_mode", None)
        if self.tag:
            data["model_tag"] = self.tag
        return data

    async def run_index(self, row: Any, index: int) -> Any:
        run_row = dataclasses.replace(row, extra={**row.extra, "run_index": index})
        suffix = f"-{self.tag}" if self.tag else ""
        return await self.run(run_row, rollout_id=f"eval-{row.index}-run-{index}{suffix}")


def _row_dict(row: Any) -> dict[str, Any]:
    return {"system_prompt": row.system_prompt, "user_prompt": row.user_prompt, "ground_truth": row.ground_truth,
            **({"metadata": row.metadata} if row.metadata is not None else {}), **row.extra}


async def _evaluate(args: argparse.Namespace, agent: Any, rows: list[Any], functions: list[EvalFunction],
                    policy: Any, tag: str | None) -> dict[str, Any]:
    options = RequestOptions(max_turns=args.max_turns, completion_params=_params(args), rollout_id_prefix="eval",
                             timeout_s=600.0)
    debug_dir = None
    if args.debug:
        debug_dir = str(Path("eval_debug").resolve())
        Path(debug_dir).mkdir(parents=True, exist_ok=True)
    app = agent.build_app("legacy", debug_dir=debug_dir, drain_timeout_seconds=0.5)
    driver = _EvalDriver(app, policy, options, tag=tag)
    semaphore = asyncio.Semaphore(args.batch_size)
    label = tag or "model"
    results: list[dict[str, Any]] = []
    if hasattr(policy, "preflight"):
        await policy.preflight()

    async def one(row: Any, index: int) -> dict[str, Any]:
        async with semaphore:
            outcome = await driver.run_index(row, index)
        scores = {}
        for function in functions:
            scores[function.name] = await function.score(outcome.messages, row.ground_truth, _row_dict(row))
        record = {"row_index": row.index, "run_index": index, "rollout_id": outcome.rollout_id,
                  "success": outcome.status == "completed" or outcome.category == "no_reward",
                  "error": outcome.error if outcome.category not in (None, "no_reward") else None,
                  "duration_ms": outcome.latency_ms, "finish_reason": outcome.finish_reason, "scores": scores}
        if not args.quiet:
            shown = ", ".join(f"{name}={value:g}" for name, value in scores.items())
            verdict = "ok" if record["success"] else f"FAIL: {record['error']}"
            print(f"[{label}] row {row.index} run {index}: {verdict}; {shown}", flush=True)
        return record

    async with driver.serving():
        results = await asyncio.gather(*(one(row, k) for row in rows for k in range(args.n)))
    return {"results": sorted(results, key=lambda r: (r["row_index"], r["run_index"])),
            "summary": _summary(results, functions, args.n, args.pass_threshold)}


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.temperature is not None:
        params["temperature"] = args.temperature
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    return params


def _summary(results: list[dict[str, Any]], functions: list[EvalFunction], n: int,
             threshold: float) -> dict[str, Any]:
    by_row: dict[int, list[dict[str, Any]]] = {}
    for record in results:
        by_row.setdefault(record["row_index"], []).append(record)
    ks = [k for k in (1, 3, 5, 10) if k <= n]
    if n not in ks:
        ks.append(n)
    per_function: dict[str, Any] = {}
    for function in functions:
        scores = [r["scores"][function.name] for r in results]
        pass_rates = {}
        for k in ks:
            values = [pass_at_k(len(runs), sum(r["scores"][function.name] >= threshold for r in runs), k)
                      for runs in by_row.values()]
            pass_rates[f"pass@{k}"] = sum(values) / len(values) if values else 0.0
        per_function[function.name] = {
            "mean": sum(scores) / len(scores) if scores else 0.0,
            "min": min(scores, default=0.0),
            "max": max(scores, default=0.0),
            **pass_rates,
        }
    return {"rows": len(by_row), "runs": len(results), "n": n, "pass_threshold": threshold,
            "failed_runs": sum(not r["success"] for r in results), "eval_fns": per_function}


async def _run(args: argparse.Namespace, agent: Any, rows: list[Any], functions: list[EvalFunction],
               policies: dict[str, Any]) -> int:
    from osmosis_compat.evaluation.policies import RemotePolicyError

    started = time.perf_counter()
    report: dict[str, Any] = {"model": args.model}
    try:
        report["primary"] = await _evaluate(args, agent, rows, functions, policies["primary"], None)
        if "baseline" in policies:
            report["baseline_model"] = args.baseline_model
            report["baseline"] = await _evaluate(args, agent, rows, functions, policies["baseline"], "baseline")
    except RemotePolicyError as exc:
        print(f"Error: the model endpoint failed the preflight call: {exc}", file=sys.stderr)
        return 1
    finally:
        for policy in policies.values():
            if hasattr(policy, "aclose"):
                await policy.aclose()
    report["total_duration_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
    _print_summary(report)
    if args.output is not None:
        args.output.write_text(json.dumps(report, indent=2) + "\n")
        print(f"Results: {args.output}")
    return 0


def _print_summary(report: dict[str, Any]) -> None:
    for key, label in (("primary", report["model"]), ("baseline", report.get("baseline_model"))):
        if key not in report:
            continue
        summary = report[key]["summary"]
        print(f"\n{label}: {summary['rows']} rows x {summary['n']} runs, {summary['failed_runs']} failed runs")
        for name, figures in summary["eval_fns"].items():
            rates = "  ".join(f"{k}={v:.3f}" for k, v in figures.items() if k.startswith("pass@"))
            print(f"  {name}: mean={figures['mean']:.3f}  {rates}")
