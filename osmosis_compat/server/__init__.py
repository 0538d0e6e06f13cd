"""HTTP faces over the runtime engine: one router per wire protocol, and the app factories.

- :mod:`.legacy_app` — ``create_app(agent_loop, …)``: ``POST /v1/rollout/init``, ``GET /health``,
  ``GET /platform/health`` (the RolloutAgentLoop protocol);
- :mod:`.workflow_app` — ``create_rollout_server(backend=…)``: ``POST /rollout``, ``GET /health``;
- :mod:`.agents` — one agent (loop or workflow) built for either protocol, natively or through the adapters;
- :mod:`.mixed_app` — ``create_mixed_app(agents)``: several agents of both kinds in one server
  (``/agents/<name>/…`` plus the root paths for the default agent); :mod:`.lifespans` runs their lifespans.
"""
