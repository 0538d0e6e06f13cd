"""Prometheus metrics of the rollout servers (``prometheus-client``), served at ``GET /metrics`` by every app.

Every name starts with ``osmosis_``; labels are few and bounded (``protocol``, ``agent``, ``outcome``, ``kind``,
``reason``, ``store``): never a rollout id.

=====================================================  =========  ==============================================
metric                                                 type       labels
=====================================================  =========  ==============================================
``osmosis_rollouts_admitted_total``                    counter    protocol, agent
``osmosis_rollouts_running``                           gauge      protocol, agent
``osmosis_rollouts_finished_total``                    counter    protocol, agent, outcome
``osmosis_rollout_duration_seconds``                   histogram  protocol, agent, outcome
``osmosis_admissions_refused_total``                   counter    protocol, agent, reason
``osmosis_model_call_duration_seconds``                histogram  protocol, agent, outcome
``osmosis_callback_attempts_total``                    counter    kind, outcome
``osmosis_lease_expiries_total``                       counter    agent
``osmosis_cancels_total``                              counter    agent
``osmosis_long_polls_waiting``                         gauge      agent
``osmosis_store_round_trip_seconds``                   histogram  store (``_count``: the round trips)
``osmosis_store_errors_total``                         counter    store
=====================================================  =========  ==============================================

Several processes (``serve --workers N``, or ``uvicorn --workers`` with ``PROMETHEUS_MULTIPROC_DIR`` set): the
figures are **aggregated across the processes** with prometheus-client's multiprocess mode — any process's
``/metrics`` answers for all of them (counters and histograms summed, gauges summed over live processes). A
scrape through the load-balanced port reaches one process at random; per-process series would make every scrape
show a different process and the counters jump, so they are summed instead. ``serve --workers`` sets
``PROMETHEUS_MULTIPROC_DIR`` to a fresh directory itself unless you set one.

The metrics are created on first use (an app's start-up), so importing an agent or building an app never loads
``prometheus_client``.
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = [
    "CONTENT_TYPE",
    "MULTIPROC_ENV",
    "Metrics",
    "get",
    "render",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Rollouts last seconds to minutes; model calls milliseconds to a minute.
_ROLLOUT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5)


class Metrics:
    """The metric objects (module docstring). One per process: :func:`get`."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.multiprocess = _multiprocess()
        live = {"multiprocess_mode": "livesum"} if self.multiprocess else {}
        self.admitted = Counter("osmosis_rollouts_admitted", "Rollouts admitted", ["protocol", "agent"])
        self.running = Gauge("osmosis_rollouts_running", "Rollouts running in this server", ["protocol", "agent"], **live)
        self.finished = Counter(
            "osmosis_rollouts_finished", "Rollouts finished, by outcome", ["protocol", "agent", "outcome"]
        )
        self.duration = Histogram(
            "osmosis_rollout_duration_seconds",
            "Rollout duration from admission to its end",
            ["protocol", "agent", "outcome"],
            buckets=_ROLLOUT_BUCKETS,
        )
        self.refused = Counter(
            "osmosis_admissions_refused",
            "Admissions refused (conflict, duplicate, full, shutting_down, store_unavailable)",
            ["protocol", "agent", "reason"],
        )
        self.model_calls = Histogram(
            "osmosis_model_call_duration_seconds",
            "Model calls to the controller's chat endpoint (until the reply is read)",
            ["protocol", "agent", "outcome"],
            buckets=_CALL_BUCKETS,
        )
        self.callbacks = Counter(
            "osmosis_callback_attempts", "Callback POSTs to the controller, by outcome of each attempt", ["kind", "outcome"]
        )
        self.lease_expiries = Counter("osmosis_lease_expiries", "Polling leases that expired", ["agent"])
        self.cancels = Counter("osmosis_cancels", "Rollouts cancelled by the controller", ["agent"])
        self.long_polls = Gauge("osmosis_long_polls_waiting", "Result long-polls waiting", ["agent"], **live)
        self.store_errors = Counter("osmosis_store_errors", "Rollout store calls that failed (unreachable, timeout)", ["store"])
        self.store_seconds = Histogram(
            "osmosis_store_round_trip_seconds", "Rollout store round trips (the count is the number of trips)",
            ["store"], buckets=_STORE_BUCKETS,
        )
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    # -- the hooks (cheap: a dict lookup for the labelled child, then one update) ---------------------------

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, cached: prometheus-client's ``labels()`` takes a lock and costs as much as
        the update itself, on every rollout's hot path."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def store_round_trip(self, store: str, started: float, ok: bool) -> None:
        """One store exchange that began at ``started`` (``time.perf_counter()``)."""
        self.child(self.store_seconds, store).observe(time.perf_counter() - started)
        if not ok:
            self.child(self.store_errors, store).inc()


_metrics: Metrics | None = None


def _multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower()))


def get() -> Metrics:
    """The process's metrics (created, and ``prometheus_client`` imported, on the first call)."""
    global _metrics
    if _metrics is None:
        _metrics = Metrics()
    return _metrics


def peek() -> Metrics | None:
    """The metrics if some app already created them, else ``None`` (for hooks on hot paths that must not be the
    ones to import ``prometheus_client``)."""
    return _metrics


def render() -> tuple[bytes, str]:
    """The exposition (``/metrics`` body) and its content type: this process's registry, or — in multiprocess
    mode — every process's figures, aggregated."""
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

    get()
    if _multiprocess():
        from prometheus_client import multiprocess

        registry: Any = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry), CONTENT_TYPE


def mark_process_dead(pid: int) -> None:
    """Multiprocess mode: drop a finished worker's live gauges (called by the process manager's parent)."""
    if _multiprocess():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
