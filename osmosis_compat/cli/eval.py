"""``osmosis-compat eval`` — run a dataset through an agent locally and summarise rewards, failures and latency."""

from __future__ import annotations

import argparse
import contextlib
import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

HELP = "run a dataset through an agent (legacy loop or workflow) and summarise the rewards"
DESCRIPTION = """Run a JSONL or CSV dataset through any agent, locally, on the real protocol path.

The agent is served on 127.0.0.1 with the real rollout app and driven by the fake controller of its protocol;
every model call goes to the controller, which answers with the built-in deterministic policy (default) or
forwards to an OpenAI-compatible endpoint (--base-url / --model).

Dataset columns: system_prompt, user_prompt, ground_truth (required), metadata (optional JSON object; a JSON
string in CSV). Unusable rows are reported per row and never stop the run.

With no arguments: examples/legacy/calculator_agent.py:agent_loop on examples/legacy/data/calculator.jsonl
with the built-in policy.

Exit status: 0 when the run completed (whatever the rows did; use --strict to fail on failed or invalid rows),
1 on a setup error (target, dataset, endpoint)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--module", help="the agent: module:attr or a workflow entrypoint (default: the example)")
    parser.add_argument("--mcp", metavar="DIR", help="a FastMCP server directory (DIR/main.py) run as upstream's "
                                                    "MCPAgentLoop, instead of -m (needs osmosis-compat[mcp])")
    parser.add_argument("-d", "--dataset", type=Path, help="a .jsonl or .csv file (default: the example's, without -m)")
    parser.add_argument("--via", choices=("native", "legacy", "workflow", "polling"), default="native",
                        help="protocol to run the agent on: its own (native), the other one through the adapter, "
                             "or today's 0.3.8 polling controller (any agent, natively)")
    model = parser.add_argument_group("model (default: the built-in deterministic policy)")
    model.add_argument("--base-url", help="an OpenAI-compatible base URL (…/v1); implies a real model")
    model.add_argument("--model", help="model name for --base-url (required with it; alone it means the OpenAI API)")
    model.add_argument("--api-key-env", metavar="NAME",
                       help="environment variable holding the endpoint's key (default: OSMOSIS_EVAL_API_KEY, then "
                            "OPENAI_API_KEY)")
    model.add_argument("--temperature", type=float, help="sampling temperature sent with every model call")
    model.add_argument("--max-tokens", type=int, help="max_tokens sent with every model call")
    model.add_argument("--no-preflight", action="store_true", help="skip the one-token check of the endpoint")
    run = parser.add_argument_group("run")
    run.add_argument("--concurrency", type=int, default=4, help="rollouts in flight at once (default 4)")
    run.add_argument("--limit", type=int, help="at most this many rows")
    run.add_argument("--offset", type=int, default=0, help="skip this many rows first (default 0)")
    run.add_argument("--max-turns", type=int, default=10, help="max_turns of legacy rollout requests (default 10)")
    run.add_argument("--timeout", type=float, default=300.0, help="seconds one row may take (default 300)")
    run.add_argument("--pass-threshold", type=float, default=None,
                     help="a row passes when reward >= this (default 1.0)")
    run.add_argument("--rows", help='only these rows, by index in the file, e.g. "3,7,10-20" (0.3.8\'s --rows)')
    named = parser.add_argument_group("named runs (osmosis-ai 0.3.8's local eval: repeated runs, pass@k, resume)")
    named.add_argument("--config", type=Path, metavar="TOML",
                       help="0.3.8's eval config: its entrypoint (without -m), n, limit, batch_size, pass_threshold")
    named.add_argument("--n", type=int, help="runs per row (pass@k over them); implies a named run")
    named.add_argument("--name", help="run name: a previous run's name resumes it (default: a generated one)")
    named.add_argument("--runs-dir", type=Path, help="where named runs live (default .osmosis/evals)")
    named.add_argument("--fresh", action="store_true", help="archive the named run's results and start clean")
    named.add_argument("--retry-failed", action="store_true", help="also re-run the named run's failed attempts")
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--output", type=Path, help="write one JSON object per row to this .jsonl file")
    out.add_argument("-q", "--quiet", action="store_true", help="no progress output, only the summary")
    out.add_argument("-v", "--verbose", action="store_true", help="show server and agent logs")
    out.add_argument("--strict", action="store_true", help="exit 1 when any row failed or was invalid")


def run(args: argparse.Namespace) -> int:
    try:
        setup = _prepare(args)
    except _SetupError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    # stdout carries the summary table (and only it, so `| head`/`> file` get it whole): whatever the agent prints
    # while the run goes goes to stderr with the progress, instead of landing in the middle of the table.
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        if _named(args):
            return asyncio.run(_run_named(args, *setup, out=out))
        return asyncio.run(_run(args, *setup, out=out))


class _SetupError(Exception):
    pass


def _named(args: argparse.Namespace) -> bool:
    return bool(args.name or args.config or args.n or args.fresh or args.retry_failed or args.runs_dir)


async def _run_named(args: argparse.Namespace, agent: Any, items: list[Any], policy: Any, protocol: str,
                     graded: bool = True, out: Any = None) -> int:
    """A named run (0.3.8's layout, see osmosis_compat.evaluation.local_run) with this command's agent, protocol
    and model (the built-in policy by default)."""
    from osmosis_compat.evaluation.dataset import RowError
    from osmosis_compat.evaluation.drivers import RequestOptions
    from osmosis_compat.evaluation.local_run import DEFAULT_ROOT, LocalRunError, RunSettings, run_named

    from .eval_run import print_run

    bad = [item for item in items if isinstance(item, RowError)]
    if bad:  # a named run's row indexes must mean the same rows on every resume: no silently dropped row
        print(f"Error: row {bad[0].index}: {bad[0].message}", file=sys.stderr)
        return 1
    config = getattr(args, "_config", None)
    n = args.n or (config.number("n", 1, int) if config else 1)
    settings = RunSettings(
        name=args.name, root=args.runs_dir or DEFAULT_ROOT, n=n, pass_threshold=args.pass_threshold,
        concurrency=args.concurrency, fresh=args.fresh, retry_failed=args.retry_failed,
        inputs={"agent": agent.name, "protocol": protocol, "dataset": str(Path(args.dataset).resolve()),
                "model": getattr(policy, "model", "builtin")},
        identity={"dataset_name": Path(args.dataset).name, "model_name": getattr(policy, "model", "builtin"),
                  "rollout_name": agent.name},
    )
    options = RequestOptions(max_turns=args.max_turns, timeout_s=args.timeout, graded=graded)

    def on_attempt(record: Any) -> None:
        if not args.quiet:
            reward = "" if record.reward is None else f" reward={record.reward:g}"
            error = f" [{record.error_type}]" if record.error_type else ""
            print(f"row {record.source_row_index} run {record.run_index}: {record.status}{reward}{error}",
                  file=sys.stderr, flush=True)

    try:
        if hasattr(policy, "preflight") and not args.no_preflight:
            await policy.preflight()
        outcome = await run_named(agent, items, protocol=protocol, policy=policy, options=options,
                                  settings=settings, total_dataset_rows=args._total_rows, on_attempt=on_attempt)
    except LocalRunError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    finally:
        if hasattr(policy, "aclose"):
            await policy.aclose()
    with contextlib.redirect_stdout(out or sys.stdout):
        print_run(outcome)
    if args.strict and outcome.summary["passed"] < outcome.summary["total_samples"]:
        return 1
    return 0


def _prepare(args: argparse.Namespace) -> tuple[Any, list[Any], Any, str, bool]:
    """Load the target, the dataset and the policy; raise :class:`_SetupError` with a readable reason.

    Returns ``(agent, rows, policy, protocol, graded)``; ``graded`` is False for a workflow without a grader.
    """
    from osmosis_compat.evaluation.dataset import DatasetError, read_dataset
    from osmosis_compat.legacy.exceptions import CLIError
    from osmosis_compat.server.agents import AgentSpec, AgentSpecError, url_safe_name

    from .targets import load_mcp_target, load_target

    _configure_logging(args.verbose)
    mcp = getattr(args, "mcp", None)
    if mcp is not None and args.module is not None:
        raise _SetupError("-m/--module and --mcp are mutually exclusive: pass one agent")
    if args.concurrency < 1:
        raise _SetupError("--concurrency must be at least 1")
    if args.offset < 0 or (args.limit is not None and args.limit < 0):
        raise _SetupError("--offset and --limit must be >= 0")
    if args.timeout <= 0:
        raise _SetupError("--timeout must be > 0")
    module, dataset = args.module, args.dataset
    args._config = None
    if args.config is not None:
        from osmosis_compat.evaluation.eval_config import EvalConfigError, load_eval_config

        try:
            args._config = load_eval_config(args.config)
            if args.limit is None:
                args.limit = args._config.number("limit", None, int)
            if args.pass_threshold is None:
                args.pass_threshold = args._config.number("pass_threshold", None, float)
        except EvalConfigError as exc:
            raise _SetupError(str(exc)) from exc
        if module is None and mcp is None:
            module = str(args._config.entrypoint_path())
    if args.pass_threshold is None:
        args.pass_threshold = 1.0
    if args.rows is not None and (args.offset or args.limit is not None) and args.config is None:
        raise _SetupError("--rows selects rows itself: drop --offset/--limit")
    if mcp is not None:
        if dataset is None:
            raise _SetupError("-d/--dataset is required with --mcp")
    elif module is None:
        from .demo import EXAMPLES_DIR

        module = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
        dataset = dataset or EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl"
        if not (EXAMPLES_DIR / "legacy").is_dir():
            raise _SetupError(f"the built-in example is not at {EXAMPLES_DIR}; run from a checkout or pass -m and -d")
    elif dataset is None:
        raise _SetupError("-d/--dataset is required with -m")
    if args.output is not None:
        _check_output(args.output)  # before the run, not after it
    try:
        target = load_mcp_target(mcp) if mcp is not None else load_target(module)
        graded = not (target.kind == "workflow" and target.grader is None)
        if not graded:
            from osmosis_compat.evaluation.transcripts import TranscriptRecorder

            print(f"Note: {target.name} has no grader: every row runs and its transcript is recorded, but no row "
                  "is scored (add a Grader subclass to the entrypoint to get rewards).", file=sys.stderr)
            target.grader = TranscriptRecorder
        agent = AgentSpec.from_target(target, name=url_safe_name(target.name))  # the name is only a label here
    except (CLIError, AgentSpecError) as exc:
        raise _SetupError(str(exc)) from exc
    protocol = agent.kind if args.via == "native" else args.via
    try:
        items = read_dataset(dataset, offset=0 if args.rows else args.offset,
                             limit=None if args.rows else args.limit)
        args._total_rows = len(read_dataset(dataset)) if not args.rows else len(items)
    except DatasetError as exc:
        raise _SetupError(f"dataset {exc}") from exc
    args.dataset = dataset
    if args.rows is not None:
        from osmosis_compat.evaluation.local_run import LocalRunError, parse_row_selector

        try:
            wanted = parse_row_selector(args.rows)
        except LocalRunError as exc:
            raise _SetupError(str(exc)) from exc
        out_of_range = [i for i in wanted if i >= len(items)]
        if out_of_range:
            raise _SetupError(f"--rows selects {out_of_range} but {Path(dataset).name} has {len(items)} rows "
                              f"(valid indices are 0-{max(len(items) - 1, 0)})")
        items = [item for item in items if item.index in set(wanted)]
    return agent, items, _policy(args), protocol, graded


def _check_output(output: Path) -> None:
    """``-o`` must be writable before any row runs (a missing directory used to surface after the whole run)."""
    import os

    if output.is_dir():
        raise _SetupError(f"-o {output}: is a directory; name a .jsonl file")
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise _SetupError(f"-o {output}: directory {parent} does not exist (create it first)")
    if not os.access(parent, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        raise _SetupError(f"-o {output}: not writable")


def _policy(args: argparse.Namespace) -> Any:
    from osmosis_compat.evaluation.policies import DEFAULT_BASE_URL, ForwardingPolicy, resolve_api_key

    if args.base_url is None and args.model is None:
        if args.api_key_env:
            raise _SetupError("--api-key-env needs --base-url/--model (the built-in policy takes no key)")
        from osmosis_compat.testing import ScriptedPolicy

        return ScriptedPolicy()
    if args.base_url is not None and not args.model:
        raise _SetupError("--model is required with --base-url")
    base_url = args.base_url or DEFAULT_BASE_URL
    if not base_url.startswith(("http://", "https://")):
        raise _SetupError(f"--base-url must be an http(s) URL, got {base_url!r}")
    if base_url.rstrip("/").endswith("/chat/completions"):
        raise _SetupError(f"--base-url is the API base, not the endpoint: did you mean "
                          f"{base_url.rstrip('/')[: -len('/chat/completions')]}?")
    try:
        key, _ = resolve_api_key(args.api_key_env)
    except ValueError as exc:
        raise _SetupError(str(exc)) from exc
    if key is None and args.base_url is None:
        raise _SetupError("no API key for the OpenAI API: set OSMOSIS_EVAL_API_KEY or OPENAI_API_KEY, or use --api-key-env")
    params = {}
    if args.temperature is not None:
        params["temperature"] = args.temperature
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    return ForwardingPolicy(base_url, args.model, api_key=key, params=params, timeout_s=args.timeout)


def base_url_hint(base_url: str) -> str:
    """`` (did you mean <base_url>/v1?)`` when the URL has no ``/v1`` path, the usual cause of a 404; else ``""``."""
    from urllib.parse import urlsplit

    path = urlsplit(base_url).path.rstrip("/")
    if path.endswith("/v1") or "/v1/" in path + "/":
        return ""
    return f" (did you mean {base_url.rstrip('/')}/v1? OpenAI-compatible servers usually serve the API under /v1)"


async def _run(args: argparse.Namespace, agent: Any, items: list[Any], policy: Any, protocol: str,
               graded: bool = True, out: Any = None) -> int:
    from osmosis_compat.evaluation.drivers import RequestOptions
    from osmosis_compat.evaluation.policies import RemotePolicyError
    from osmosis_compat.evaluation.progress import Progress, heartbeat_interval
    from osmosis_compat.evaluation.report import format_summary, summarize, write_results
    from osmosis_compat.evaluation.runner import run_evaluation
    from osmosis_compat.server.agents import AgentSpecError
    from osmosis_compat.testing import ServerStartError

    completion_params = {}
    if args.temperature is not None:
        completion_params["temperature"] = args.temperature
    if args.max_tokens is not None:
        completion_params["max_tokens"] = args.max_tokens
    options = RequestOptions(max_turns=args.max_turns, completion_params=completion_params, timeout_s=args.timeout,
                             graded=graded)
    how = f"{agent.kind} agent {agent.name!r}" + (
        "" if protocol == agent.kind
        else " via the 0.3.8 polling protocol" if protocol == "polling"
        else f" via the {protocol} protocol (adapter)"
    )
    model = "built-in scripted policy" if not hasattr(policy, "preflight") else f"{policy.model} at {policy.url}"
    if not args.quiet:
        print(f"Evaluating {how} on {len(items)} row(s) with the {model}", file=sys.stderr)
    progress = Progress(len(items), quiet=args.quiet, pass_threshold=args.pass_threshold)
    finished: list[Any] = []

    def on_result(result: Any) -> None:
        finished.append(result)
        progress.update(result)

    out = out if out is not None else sys.stdout
    interval = heartbeat_interval()

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(interval / 4)
            progress.heartbeat(interval)

    beating = asyncio.ensure_future(heartbeat())
    started = time.perf_counter()
    try:
        if hasattr(policy, "preflight") and not args.no_preflight:
            await policy.preflight()
        outcome = await run_evaluation(
            agent,
            items,
            protocol=protocol,
            policy=policy,
            options=options,
            concurrency=args.concurrency,
            pass_threshold=args.pass_threshold,
            on_result=on_result,
        )
    except RemotePolicyError as exc:
        hint = base_url_hint(args.base_url) if args.base_url and " 404" in str(exc) else ""
        print(f"Error: the model endpoint failed the preflight call: {exc}{hint}", file=sys.stderr)
        return 1
    except asyncio.CancelledError:
        # Ctrl-C: keep what finished — the summary and the JSONL of the rows done so far.
        progress.close()
        done = sorted(finished, key=lambda r: r.row_index)
        print(f"Interrupted: {len(done)} of {len(items)} row(s) finished.", file=sys.stderr)
        summary = summarize(done, pass_threshold=args.pass_threshold, wall_time_s=time.perf_counter() - started,
                            graded=graded)
        print(format_summary(summary, title=f"Evaluation of {agent.name} ({protocol} protocol), interrupted"),
              file=out)
        if not progress.shows_rows:
            _print_errors(done, out)
        if args.output is not None:
            write_results(done, args.output)
            print(f"Per-row results (finished rows): {args.output}", file=out)
        return 130
    except (AgentSpecError, ServerStartError, ImportError) as exc:
        progress.close()
        print(f"Error: cannot serve {agent.name!r} on the {protocol} protocol: {exc}", file=sys.stderr)
        return 1
    finally:
        beating.cancel()
        if hasattr(policy, "aclose"):
            await policy.aclose()
    progress.close()
    print(format_summary(outcome.summary, title=f"Evaluation of {agent.name} ({protocol} protocol)"), file=out)
    if not progress.shows_rows:  # a terminal (or -q) saw no per-row lines: say why rows failed
        _print_errors(outcome.results, out)
    if args.output is not None:
        try:
            write_results(outcome.results, args.output)
        except OSError as exc:
            print(f"Error: cannot write {args.output}: {exc}", file=sys.stderr)
            return 1
        print(f"Per-row results: {args.output}", file=out)
    if args.strict and outcome.summary.completed < outcome.summary.total:
        return 1
    return 0


def _print_errors(results: list[Any], out: Any = None) -> None:
    from osmosis_compat.evaluation.report import format_first_errors

    errors = format_first_errors(results)
    if errors:
        print(errors, file=out if out is not None else sys.stdout)


def _configure_logging(verbose: bool) -> None:
    # Agent failures are reported per row; their tracebacks in the log would drown the progress output.
    logging.basicConfig(level=logging.INFO if verbose else logging.CRITICAL,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
