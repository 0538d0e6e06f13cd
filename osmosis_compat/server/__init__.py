"""HTTP faces over the runtime engine: one router per wire protocol, and the app factories.

- :mod:`.legacy_app` — ``create_app(agent_loop, …)``: ``POST /v1/rollout/init``, ``GET /health``,
  ``GET /platform/health`` (the RolloutAgentLoop protocol);
- :mod:`.workflow_app` — ``create_rollout_server(backend=…)``: ``POST /rollout``, ``GET /health``.
"""
