"""``osmosis test``: upstream's agent test mode (spec/legacy-protocol.md §2.17.3) on osmosis-compat's runner.

Each dataset row runs as one legacy rollout, **sequentially**, through the real rollout app on 127.0.0.1 and the
fake TrainGate (as ``osmosis-compat eval`` does), whose model calls go through LiteLLM as upstream's did:

- ``--model`` is a LiteLLM id (``anthropic/claude-sonnet-4-5``) or a bare OpenAI name (``gpt-5-mini`` →
  ``openai/gpt-5-mini``); the provider's key variable must be set (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` …)
  unless ``--api-key``, ``--base-url`` or ``LITELLM_API_KEY`` is given;
- ``--base-url URL``: any OpenAI-compatible endpoint (LiteLLM's ``openai/`` provider with that base);
- ``--model builtin`` (osmosis-compat only): the built-in deterministic policy — no key, no network.

One call of one token checks model, key and URL before the first row. ``--mcp DIR`` runs a FastMCP server
directory as upstream's ``MCPAgentLoop``.

A row succeeds when the rollout ends ``COMPLETED`` (the reward is shown, not judged); exit 1 if any row failed.
``-i/--interactive`` steps through each rollout model call by model call (``--row N``: only row ``N``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from osmosis_compat.evaluation.drivers import LegacyDriver, RequestOptions

HELP = "run a dataset through an agent loop, row by row, against a model (upstream `osmosis test`)"
DESCRIPTION = __doc__

DEFAULT_MODEL = "gpt-5-mini"
BUILTIN_MODEL = "builtin"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--module", "--agent", dest="module", metavar="MODULE:ATTR",
                        help="the agent loop (module:attr or path.py:attr)")
    parser.add_argument("--mcp", metavar="DIR",
                        help="a FastMCP server directory (DIR/main.py) run as MCPAgentLoop (needs osmosis-compat[mcp])")
    parser.add_argument("-d", "--dataset", type=Path, required=True, help="a .jsonl or .csv dataset")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"model (default {DEFAULT_MODEL}); '{BUILTIN_MODEL}' = the built-in deterministic policy")
    parser.add_argument("--limit", type=int, help="at most this many rows")
    parser.add_argument("--offset", type=int, default=0, help="skip this many rows first")
    parser.add_argument("--api-key", help="the model provider's key (default: its variable, e.g. OPENAI_API_KEY)")
    parser.add_argument("--base-url", help="an OpenAI-compatible base URL (…/v1)")
    parser.add_argument("--max-turns", type=int, default=10, help="max_turns of each rollout request (default 10)")
    parser.add_argument("--max-tokens", type=int, help="max_tokens sent with every model call")
    parser.add_argument("--temperature", type=float, help="temperature sent with every model call")
    parser.add_argument("--debug", action="store_true", help="write the agents' debug traces to ./test_debug/")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    parser.add_argument("-i", "--interactive", action="store_true",
                        help="step through each rollout model call by model call")
    parser.add_argument("--row", type=int, help="with --interactive: only this row (its index in the dataset)")


class _TestError(Exception):
    pass


def run(args: argparse.Namespace) -> int:
    """``osmosis test``: exit 0 when every row completed, 1 otherwise or on a setup error."""
    try:
        agent, rows, policy = _prepare(args)
    except _TestError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return asyncio.run(_run(args, agent, rows, policy))


def _prepare(args: argparse.Namespace) -> tuple[Any, list[Any], Any]:
    from osmosis_compat.evaluation.dataset import DatasetError, DatasetRow, read_dataset
    from osmosis_compat.legacy.exceptions import CLIError
    from osmosis_compat.server.agents import AgentSpec, AgentSpecError, url_safe_name

    from .targets import load_mcp_target, load_target

    if args.mcp and args.module:
        raise _TestError("-m/--module and --mcp are mutually exclusive: pass one agent")
    if not args.module and not args.mcp:
        raise _TestError("one of -m/--module or --mcp is required")
    if args.row is not None and not args.interactive:
        raise _TestError("--row requires --interactive")
    if args.offset < 0 or (args.limit is not None and args.limit < 0):
        raise _TestError("--offset and --limit must be >= 0")
    if args.output is not None and not (args.output.parent if str(args.output.parent) else Path(".")).is_dir():
        raise _TestError(f"-o {args.output}: directory {args.output.parent} does not exist")
    policy = _policy(args)
    try:
        target = load_mcp_target(args.mcp) if args.mcp else load_target(args.module)
        agent = AgentSpec.from_target(target, name=url_safe_name(target.name))
    except (CLIError, AgentSpecError) as exc:
        raise _TestError(str(exc)) from exc
    try:
        items = read_dataset(args.dataset, offset=args.offset, limit=args.limit)
    except DatasetError as exc:
        raise _TestError(f"dataset {exc}") from exc
    if args.row is not None:
        items = [item for item in items if item.index == args.row]
        if not items:
            raise _TestError(f"--row {args.row}: no such row in {args.dataset}")
    bad = [item for item in items if not isinstance(item, DatasetRow)]
    if bad:
        raise _TestError(f"dataset row {bad[0].index}: {bad[0].message}")
    return agent, items, policy


def _policy(args: argparse.Namespace) -> Any:
    return model_policy(args.model, api_key=args.api_key, base_url=args.base_url, temperature=args.temperature,
                        max_tokens=args.max_tokens, error=_TestError)


def model_policy(model: str, *, api_key: str | None, base_url: str | None, temperature: float | None,
                 max_tokens: int | None, error: type[Exception]) -> Any:
    """The policy of ``--model`` (shared by ``osmosis test`` and ``osmosis eval``): ``builtin`` → the built-in
    deterministic policy; anything else → LiteLLM with upstream's model id, key check and overrides. Raises
    ``error`` with a readable message for a bad URL or a missing key."""
    from osmosis_compat.evaluation.policies import LiteLLMPolicy, litellm_model_id, missing_api_key

    if model == BUILTIN_MODEL and base_url is None:
        from osmosis_compat.testing import ScriptedPolicy

        return ScriptedPolicy()
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise error(f"--base-url must be an http(s) URL, got {base_url!r}")
    model_id = litellm_model_id(model, base_url)
    variable = missing_api_key(model_id, api_key=api_key, base_url=base_url)
    if variable is not None:
        raise error(f"no API key for {model_id}: set {variable} or pass --api-key "
                    f"(or --model {BUILTIN_MODEL} for the built-in deterministic policy)")
    overrides: dict[str, Any] = {}
    if temperature is not None:
        overrides["temperature"] = temperature
    if max_tokens is not None:
        overrides["max_tokens"] = max_tokens
    return LiteLLMPolicy(model_id, api_key=api_key, base_url=base_url, overrides=overrides)


class InteractivePolicy:
    """Wraps the run's policy: before each model call, waits for a command on ``stdin``.

    Commands: ``n`` (next: make this call, show the reply, stop before the next one), ``c`` (continue: run the rest
    of this row without stopping), ``m`` (show the messages), ``t`` (show the tools), ``q`` (quit: this call fails,
    the run stops after this row). End of input means ``c`` for every later call.
    """

    PROMPT = "[n]ext [c]ontinue [m]essages [t]ools [q]uit > "

    def __init__(self, inner: Any, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.inner = inner
        self.accepts_request_params = getattr(inner, "accepts_request_params", False)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.row: int | None = None
        self.calls = 0
        self.stepping = True
        self.quit = False
        self._eof = False

    def start_row(self, row: int) -> None:
        """A new rollout: number its calls from 1 and stop before the first one again."""
        self.row, self.calls, self.stepping = row, 0, not self._eof

    async def areply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     **kwargs: Any) -> dict[str, Any]:
        """Ask the user, then the wrapped policy; show the reply while stepping."""
        from .demo import format_message

        self.calls += 1
        if self.quit:
            return self._quit_reply()
        if self.stepping:
            self._say(f"\n--- row {self.row}, model call {self.calls}: {len(messages)} message(s), "
                      f"{len(tools or [])} tool(s); last: {format_message(messages[-1]).strip() if messages else '-'}")
            while True:
                command = await self._ask()
                if command in ("n", "next", ""):
                    break
                if command in ("c", "continue"):
                    self.stepping = False
                    break
                if command in ("m", "messages"):
                    for message in messages:
                        self._say("   " + format_message(message))
                elif command in ("t", "tools"):
                    for tool in tools or []:
                        function = tool.get("function", {})
                        self._say(f"   {function.get('name')}: {function.get('description', '')}  "
                                  f"{json.dumps(function.get('parameters', {}))}")
                    if not tools:
                        self._say("   (no tools)")
                elif command in ("q", "quit"):
                    self.quit = True
                    return self._quit_reply()
                else:
                    self._say(f"   unknown command {command!r}")
        reply = await self.inner.areply(messages, tools, **kwargs)
        if self.stepping:
            message = (reply.get("choices") or [{}])[0].get("message", {})
            self._say("   reply: " + format_message(message).strip())
        return reply

    @staticmethod
    def _quit_reply() -> dict[str, Any]:
        """What the agent gets after ``q``: a final answer without tool calls, so the rollout ends at once.

        (Failing the call instead made the agent's client retry a 500 with its backoff — ~7 s — and then die
        with a traceback.) The row is reported as quit, not as passed, whatever the agent does with it.
        """
        return {"id": "chatcmpl-quit", "object": "chat.completion", "created": 0, "model": "quit",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "(quit by the user)"}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    async def _ask(self) -> str:
        if self._eof:
            return "c"
        self.stdout.write(self.PROMPT)
        self.stdout.flush()
        line = await asyncio.to_thread(self.stdin.readline)
        if not line:
            self._eof = True
            self._say("")
            return "c"
        return line.strip().lower()

    def _say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    async def preflight(self) -> None:
        """The wrapped policy's preflight, if it has one."""
        if hasattr(self.inner, "preflight"):
            await self.inner.preflight()

    async def aclose(self) -> None:
        """Close the wrapped policy, if it holds resources."""
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()


async def _run(args: argparse.Namespace, agent: Any, rows: list[Any], policy: Any) -> int:
    from osmosis_compat.evaluation.policies import RemotePolicyError
    from osmosis_compat.evaluation.report import COMPLETED

    if args.interactive:
        policy = InteractivePolicy(policy)
    params: dict[str, Any] = {}
    if args.temperature is not None:
        params["temperature"] = args.temperature
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    options = RequestOptions(max_turns=args.max_turns, completion_params=params, rollout_id_prefix="test",
                           timeout_s=600.0)
    debug_dir = None
    if args.debug:
        debug_dir = str(Path("test_debug").resolve())
        Path(debug_dir).mkdir(parents=True, exist_ok=True)
    app = agent.build_app("legacy", debug_dir=debug_dir, drain_timeout_seconds=0.5)
    driver = _MetricsDriver(app, policy, options)
    outcomes: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        if hasattr(policy, "preflight"):
            await policy.preflight()
        async with driver.serving():
            for row in rows:  # sequentially, as upstream
                if args.interactive:
                    policy.start_row(row.index)
                result = await driver.run(row)
                success = result.status == COMPLETED or (result.category == "no_reward")  # reward is not judged
                error = None if success else result.error
                if args.interactive and policy.quit:
                    success, error = False, "quit by the user"
                usage = driver.usage.get(row.index, {})
                outcomes.append({
                    "row_index": row.index,
                    "success": success,
                    "error": error,
                    "duration_ms": result.latency_ms,
                    "token_usage": usage,
                    "reward": result.reward,
                    "finish_reason": result.finish_reason,
                })
                if not args.quiet:
                    verdict = "PASS" if success else f"FAIL: {error}"
                    reward = "" if result.reward is None else f" reward={result.reward:g}"
                    print(f"[{len(outcomes)}/{len(rows)}] row {row.index}: {verdict}{reward} "
                          f"({result.latency_ms or 0:.0f} ms)")
                if args.interactive and policy.quit:
                    break
    except RemotePolicyError as exc:
        print(f"Error: the model endpoint failed the preflight call: {exc}", file=sys.stderr)
        return 1
    finally:
        if hasattr(policy, "aclose"):
            await policy.aclose()
    passed = sum(o["success"] for o in outcomes)
    summary = {
        "total": len(outcomes),
        "passed": passed,
        "failed": len(outcomes) - passed,
        "total_duration_ms": round((time.perf_counter() - started) * 1000.0, 3),
        "total_tokens": sum(o["token_usage"].get("total_tokens", 0) for o in outcomes),
    }
    quit_early = args.interactive and policy.quit
    print(f"\n{'Quit: ' if quit_early else ''}{passed} passed, {summary['failed']} failed"
          f" ({summary['total']} of {len(rows)} rows, {summary['total_duration_ms'] / 1000:.2f} s, "
          f"{summary['total_tokens']} tokens)")
    if args.output is not None:
        args.output.write_text(json.dumps({"summary": summary, "results": outcomes}, indent=2) + "\n")
        print(f"Results: {args.output}")
    return 0 if passed == len(rows) and not quit_early else 1


class _MetricsDriver(LegacyDriver):
    """The eval's legacy driver, also keeping each rollout's token usage (for ``-o``) from its callback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.usage: dict[int, dict[str, int]] = {}

    def result(self, row: Any, rollout_id: str, record: Any, latency_ms: float) -> Any:
        metrics = (record.callback or {}).get("metrics") or {}
        prompt, completion = int(metrics.get("prompt_tokens", 0)), int(metrics.get("response_tokens", 0))
        self.usage[row.index] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        return super().result(row, rollout_id, record, latency_ms)
