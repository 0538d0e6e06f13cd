"""HTTP faces over the runtime engine: one class per wire protocol (peers), and the app factories that compose them.

- :mod:`.protocol` — :class:`~.protocol.RolloutProtocol`, what the peers share (admission errors, the 409 for an id
  another protocol holds, the controller-host allow-list, observability), and ``POST /rollout``'s dispatch;
- the peers: :mod:`.legacy_protocol` (``LegacyCallbacks``: ``/v1/rollout/init``), :mod:`.workflow_protocol`
  (``WorkflowCallbacks``: 0.2.x ``/rollout`` with callbacks), :mod:`.polling` (``PollingProtocol``: 0.3.8);
- the factories: :mod:`.legacy_app` — ``create_app(agent_loop, …)`` (legacy + polling);
  :mod:`.workflow_app` — ``create_rollout_server(backend=…)`` (0.2.x callbacks + polling);
- :mod:`.agents` — one agent (loop or workflow) built for either protocol, natively or through the adapters;
- :mod:`.mixed_app` — ``create_mixed_app(agents)``: several agents of both kinds in one server
  (``/agents/<name>/…`` plus the root paths for the default agent); :mod:`.lifespans` runs their lifespans.
"""
