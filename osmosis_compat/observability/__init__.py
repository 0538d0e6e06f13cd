"""What an operator sees of a running server: metrics, structured logs, traces — one module per kind.

- :mod:`.context` — the rollout a piece of work belongs to (id, protocol, agent), carried in a context variable so
  logs, metrics and spans of a rollout's task know it without being told;
- :mod:`.metrics` — Prometheus metrics (``prometheus-client``), served at ``/metrics`` by every app;
- :mod:`.logs` — ``--log-format json`` (one JSON object per line) and the redaction of keys and bearer tokens;
- :mod:`.otel` — the one OpenTelemetry setup of the process (standard ``OTEL_*`` variables, the
  ``opentelemetry`` extra), shared by everything that exports to OpenTelemetry;
- :mod:`.tracing` — the spans of a rollout (rollout, model calls, tool calls, callbacks and polls);
- :mod:`.ownership` — osmosis-ai 0.3.8's OTLP "rollout.ownership" log records (``OSMOSIS_ROLLOUT_OTLP_ENDPOINT``).

Nothing here imports the server, the runtime or an agent API: they call in (arrows point down).
"""
