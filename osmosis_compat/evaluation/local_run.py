"""Named local evaluation runs in osmosis-ai 0.3.8's layout: repeated runs, pass@k, a journal to resume from.

``osmosis eval run CONFIG.toml`` (and ``osmosis-compat eval --name NAME`` / ``--config``) write a run directory
``<root>/<name>/`` (root default ``.osmosis/evals``), as 0.3.8's local eval does:

- ``events.jsonl`` — the journal, the resume authority: one line per finished attempt of one work item
  ``(row_index, run_index)``, ``{"duration_ms", "error_type"?, "reward"?, "rollout_id", "row_index", "run_index",
  "source_row_index", "status"}`` with ``status`` ``success`` / ``failed`` / ``skipped``; the last line of a key
  wins, a torn last line (a crash mid-write) is dropped;
- ``manifest.json`` — the run's resolved inputs, written once; resuming with other inputs is refused by name;
- ``index.jsonl`` (= ``summary.jsonl``), ``progress.json``, ``metrics.json`` (``{"eval_run": {...}, "summary":
  {total_samples, completed_samples, graded, passed, failed, skipped, pass_rate, pass_threshold, tokens_used,
  reward_stats?, n_runs?, pass_at_k?}}``, pass@k at powers of two for ``n >= 2``) and
  ``trajectories/row_<r>_run_<k>.json`` — projections rebuilt from the journal after every attempt.

Resuming a name runs only the work items without a terminal record; ``retry_failed`` also re-runs failed and
skipped ones (successes are kept); ``fresh`` archives the old directory (``<name>.archive-<UTC stamp>``) first.
``row_index`` is the position in the selected rows and ``source_row_index`` the row's index in the file, as 0.3.8.

Differences from 0.3.8, deliberate: the trajectory files hold the rollout's messages and reward (0.3.8 writes its
ATIF trajectory document), there is no per-run lock file (a second runner on the same name is not detected) and
no platform upload (``--upload`` needs the Osmosis Platform).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .dataset import DatasetRow
from .drivers import RequestOptions, driver_for
from .report import COMPLETED, RowResult

__all__ = ["LocalRunError", "NamedRun", "RunSettings", "TerminalRecord", "aggregate_metrics", "generate_run_name",
           "pass_at_k", "parse_row_selector", "run_named"]

JOURNAL = "events.jsonl"
MANIFEST = "manifest.json"
DEFAULT_ROOT = Path(".osmosis") / "evals"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_ROWS = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


class LocalRunError(RuntimeError):
    """The run cannot start or resume (bad name, changed inputs, damaged journal, bad --rows)."""


def parse_row_selector(value: str) -> tuple[int, ...]:
    """``"3,7,10-20"`` → sorted unique source-row indices (0.3.8's ``--rows``)."""
    text = value.strip()
    if not _ROWS.fullmatch(text):
        raise LocalRunError(f"--rows must be comma-separated indices or ranges, for example '3,7,10-20': "
                            f"got {value!r}")
    selected: set[int] = set()
    for part in text.split(","):
        start, _, end = part.partition("-")
        first, last = int(start), int(end or start)
        if first > last:
            raise LocalRunError(f"--rows range {part!r} is inverted; write it as {last}-{first}")
        selected.update(range(first, last + 1))
    return tuple(sorted(selected))


def generate_run_name() -> str:
    """A fresh run name (adjective-animal-number, as 0.3.8 names runs)."""
    adjectives = ("amber", "brisk", "calm", "daring", "eager", "fuzzy", "gentle", "hasty", "jolly", "keen")
    animals = ("otter", "lynx", "heron", "badger", "falcon", "gecko", "ibis", "koala", "marten", "wolf")
    return f"{secrets.choice(adjectives)}-{secrets.choice(animals)}-{secrets.randbelow(100)}"


def validate_run_name(name: str) -> str:
    """A run name is one path segment: a letter or digit first, then letters, digits, ``.``, ``_``, ``-``."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise LocalRunError("run name must start with a letter or digit and use only letters, digits, '.', '_', "
                            f"or '-' (at most 96 characters): {name!r}")
    return name


@dataclass(frozen=True)
class TerminalRecord:
    """One finished attempt of one work item (0.3.8's journal record)."""

    row_index: int
    run_index: int
    rollout_id: str
    status: str
    source_row_index: int | None = None
    reward: float | None = None
    tokens: int | None = None
    duration_ms: float = 0.0
    error_type: str | None = None

    def payload(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def pass_at_k(*, attempts: int, passes: int, k: int) -> float:
    """Unbiased pass@k for one row (Chen et al.), as 0.3.8 computes it."""
    if k > attempts:
        raise ValueError("k must not exceed the attempt count")
    if attempts - passes < k:
        return 1.0
    value = 1.0
    for index in range(k):
        value *= (attempts - passes - index) / (attempts - index)
    return 1.0 - value


def aggregate_metrics(rows: Sequence[dict[str, Any]], *, pass_threshold: float) -> dict[str, Any]:
    """0.3.8's ``metrics.json`` summary of ``index.jsonl`` rows (a failed attempt is a non-pass; skipped rows are
    left out of the denominator; pass@k at powers of two when a row ran at least twice)."""
    passes: dict[int, int] = {}
    attempts: dict[int, int] = {}
    rewards: list[float] = []
    passed = graded = skipped = failed = tokens = 0
    max_run = -1
    for row in rows:
        max_run = max(max_run, row["run_index"])
        if isinstance(row.get("tokens"), int):
            tokens += row["tokens"]
        if row["status"] == "skipped":
            skipped += 1
            continue
        failed += row["status"] == "failed"
        reward = row.get("reward")
        is_pass = False
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            graded += 1
            rewards.append(float(reward))
            is_pass = float(reward) >= pass_threshold
            passed += is_pass
        attempts[row["row_index"]] = attempts.get(row["row_index"], 0) + 1
        passes[row["row_index"]] = passes.get(row["row_index"], 0) + int(is_pass)
    scored = len(rows) - skipped
    summary: dict[str, Any] = {
        "total_samples": len(rows), "completed_samples": scored, "graded": graded, "passed": passed,
        "failed": failed, "skipped": skipped, "pass_rate": (passed / scored) if scored else 0,
        "pass_threshold": pass_threshold, "tokens_used": tokens,
    }
    if rewards:
        summary["reward_stats"] = {
            "mean": statistics.fmean(rewards), "median": statistics.median(rewards),
            "std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0, "min": min(rewards), "max": max(rewards),
        }
    n_runs = max_run + 1
    if n_runs >= 2:
        summary["n_runs"] = n_runs
        points = []
        k = 1
        while k <= n_runs:
            eligible = [pass_at_k(attempts=attempts[r], passes=passes[r], k=k) for r in sorted(attempts)
                        if attempts[r] >= k]
            if eligible:
                points.append({"k": k, "value": statistics.fmean(eligible)})
            k *= 2
        if len(points) >= 2:
            summary["pass_at_k"] = points
    return summary


@dataclass
class RunSettings:
    """What a named run is made of (the manifest's ``inputs`` are built from these)."""

    name: str | None
    root: Path
    n: int = 1
    pass_threshold: float = 1.0
    concurrency: int = 1
    fresh: bool = False
    retry_failed: bool = False
    inputs: dict[str, Any] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)


@dataclass
class NamedRun:
    """The outcome: the run directory, its index rows and summary, and how many attempts ran now."""

    directory: Path
    name: str
    index: list[dict[str, Any]]
    summary: dict[str, Any]
    ran: int
    resumed: int
    archived: Path | None = None


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)  # readers never see half a file


def _replay(journal: Path) -> dict[tuple[int, int], TerminalRecord]:
    latest: dict[tuple[int, int], TerminalRecord] = {}
    if not journal.exists():
        return latest
    data = journal.read_bytes()
    complete, _, _torn = data.rpartition(b"\n")  # a line without its newline never committed
    if complete:
        lines = complete.split(b"\n")
        for number, line in enumerate(lines, 1):
            try:
                payload = json.loads(line)
                record = TerminalRecord(**{k: payload[k] for k in payload if k in TerminalRecord.__dataclass_fields__})
            except (ValueError, TypeError, KeyError) as exc:
                raise LocalRunError(f"{journal}:{number}: damaged journal record ({exc}); rerun with --fresh") from exc
            if record.status not in ("success", "failed", "skipped"):
                raise LocalRunError(f"{journal}:{number}: unknown status {record.status!r}; rerun with --fresh")
            latest[(record.row_index, record.run_index)] = record
        with journal.open("r+b") as handle:
            handle.truncate(len(complete) + 1)
    elif data:
        journal.write_bytes(b"")
    return latest


def _record(result: RowResult, row_index: int, run_index: int, source: int, rollout_id: str) -> TerminalRecord:
    ok = result.status == COMPLETED or result.category == "no_reward"
    return TerminalRecord(
        row_index=row_index, run_index=run_index, rollout_id=rollout_id, status="success" if ok else "failed",
        source_row_index=source, reward=result.reward if ok else None, duration_ms=result.latency_ms or 0.0,
        error_type=None if ok else (result.category or "agent_error"),
    )


async def run_named(
    agent: Any,
    rows: Sequence[DatasetRow],
    *,
    protocol: str,
    policy: Any,
    options: RequestOptions,
    settings: RunSettings,
    total_dataset_rows: int,
    on_attempt: Callable[[TerminalRecord], None] | None = None,
) -> NamedRun:
    """Run every ``(row, run)`` work item of ``rows`` × ``settings.n`` that the run's journal does not hold yet
    (see the module docstring), appending each finished attempt to the journal and refreshing the projections."""
    name = validate_run_name(settings.name or generate_run_name())
    directory = settings.root / name
    archived = None
    if settings.fresh and directory.exists():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        archived = directory.with_name(f"{name}.archive-{stamp}")
        suffix = 1
        while archived.exists():
            archived = directory.with_name(f"{name}.archive-{stamp}-{suffix}")
            suffix += 1
        os.replace(directory, archived)
    directory.mkdir(parents=True, exist_ok=True)
    manifest_path = directory / MANIFEST
    inputs = {**settings.inputs, "n": settings.n, "pass_threshold": settings.pass_threshold,
              "source_rows": [row.index for row in rows]}
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        changed = sorted(k for k in set(inputs) | set(manifest.get("inputs", {}))
                         if manifest.get("inputs", {}).get(k) != inputs.get(k))
        if changed:
            raise LocalRunError(f"run {name!r} was started with other inputs ({', '.join(changed)} changed): resume "
                                "it with the same ones, or pass --fresh to archive it and start again")
        local_run_id = manifest["local_run_id"]
        started_at = manifest["created_at"]
    else:
        local_run_id, started_at = uuid.uuid4().hex, _utc_now()
        _write_json(manifest_path, {"schema_version": 1, "local_run_id": local_run_id, "run_name": name,
                                    "created_at": started_at, "inputs": inputs, "provenance": {}})
    journal = directory / JOURNAL
    latest = _replay(journal)
    keep = {"success"} if settings.retry_failed else {"success", "failed", "skipped"}
    carried = {key for key, record in latest.items() if record.status in keep}
    work = [(position, row, k) for position, row in enumerate(rows) for k in range(settings.n)
            if (position, k) not in carried]
    messages: dict[tuple[int, int], dict[str, Any]] = {}
    identity = {"id": local_run_id, "name": name, "started_at": started_at, **settings.identity}

    def refresh(status: str) -> list[dict[str, Any]]:
        index = []
        for key in sorted(latest):
            record = latest[key]
            line = {**record.payload(), "resumed": True} if key in carried else record.payload()
            line.pop("source_row_index", None)
            if (directory / "trajectories" / f"row_{key[0]}_run_{key[1]}.json").exists():
                line["trajectory_filename"] = "trajectory.json"
            index.append(line)
        text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in index)
        for filename in ("index.jsonl", "summary.jsonl"):
            (directory / filename).write_text(text, encoding="utf-8")
        _write_json(directory / "progress.json", {"total_runs": len(rows) * settings.n, "sampled_rows": len(rows),
                                                  "total_dataset_rows": total_dataset_rows})
        _write_json(directory / "metrics.json", {
            "eval_run": {**identity, "status": status},
            "summary": aggregate_metrics(index, pass_threshold=settings.pass_threshold)})
        return index

    lock = asyncio.Lock()
    app = agent.build_app(agent.kind if protocol == "polling" else protocol, drain_timeout_seconds=0.5)
    driver = driver_for(protocol, app, policy, options)
    slots = asyncio.Semaphore(max(1, settings.concurrency))

    async def attempt(position: int, row: DatasetRow, run_index: int) -> None:
        rollout_id = uuid.uuid4().hex
        async with slots:
            try:
                result = await driver.run(row, rollout_id=rollout_id)
            except Exception as exc:  # one attempt's failure is its record, never the run's end
                result = RowResult(row.index, "failed", rollout_id, category="runner_error",
                                   error=f"{type(exc).__name__}: {exc}")
        record = _record(result, position, run_index, row.index, rollout_id)
        async with lock:
            with journal.open("ab") as handle:
                handle.write((json.dumps(record.payload(), sort_keys=True, separators=(",", ":")) + "\n").encode())
                handle.flush()
                os.fsync(handle.fileno())
            latest[(position, run_index)] = record
            carried.discard((position, run_index))
            _write_json(directory / "trajectories" / f"row_{position}_run_{run_index}.json",
                        {"rollout_id": rollout_id, "row_index": position, "run_index": run_index,
                         "source_row_index": row.index, "status": record.status, "reward": record.reward,
                         "error": result.error, "messages": result.messages})
            refresh("running")
        if on_attempt is not None:
            on_attempt(record)

    if work:
        async with driver.serving():
            await asyncio.gather(*(attempt(position, row, k) for position, row, k in work))
    index = refresh("completed")
    return NamedRun(directory=directory, name=name, index=index,
                    summary=aggregate_metrics(index, pass_threshold=settings.pass_threshold), ran=len(work),
                    resumed=len(carried), archived=archived)
