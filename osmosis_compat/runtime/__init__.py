"""The shared runtime: what every rollout needs, whichever API the agent is written against.

It knows neither the legacy ``RolloutAgentLoop`` API nor the ``AgentWorkflow`` API; both stand on it:

- :mod:`.engine` — admission (idempotency records with TTL, concurrency limit), life cycle, graceful shutdown;
- :mod:`.policy` — model calls to a controller's chat endpoint, in its dialect (legacy or workflow);
- :mod:`.callbacks` — the one callback sender (retry/backoff, at most one delivery per callback);
- :mod:`.delivery` / :mod:`.retry` / :mod:`.http` — the one POST-with-retry loop, backoff, and HTTP client pool;
- :mod:`.messages`, :mod:`.sse`, :mod:`.jsonwire` — reply → message, SSE synthesis, strict JSON encoding;
- :mod:`.limiter`, :mod:`.auth` — concurrency slots and bearer-token checks.

Modules are imported on use; nothing here imports fastapi or any agent framework.
"""
