"""The local runner (``osmosis-compat eval``): a dataset through any agent, on the real protocol path.

- :mod:`.dataset` — JSONL/CSV rows, bad rows as per-row errors;
- :mod:`.drivers` — one row as a legacy or workflow rollout against the fake controllers;
- :mod:`.policies` — the model: the built-in scripted policy or an OpenAI-compatible endpoint;
- :mod:`.runner` — concurrency and collection; :mod:`.report` — results, summary, JSONL; :mod:`.progress`.

See ``docs/eval.md``.
"""
