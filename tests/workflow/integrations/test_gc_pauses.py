"""The framework integrations keep their import heap out of full GC passes (issue 12: p99 stalls).

A full (generation-2) collection walks every tracked object; with the framework's ~190k import-time objects in the
oldest generation each one paused a rollout server's event loop for 100-200 ms. After the import they are frozen,
so a full pass walks only what the program allocated since.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import gc, json, time
    import osmosis_compat.workflow.integrations.{module}  # the framework and its models are loaded now
    gc.collect()
    started = time.perf_counter()
    gc.collect()
    print(json.dumps({{"frozen": gc.get_freeze_count(), "walked": len(gc.get_objects()),
                      "full_pass_ms": (time.perf_counter() - started) * 1000}}))
    """
)


def _probe(module: str, **env: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["openai_agents", "strands"])
def test_import_heap_is_frozen_out_of_full_collections(module):
    frozen = _probe(module)
    assert frozen["frozen"] > 100_000  # the framework's objects: skipped by every later collection
    assert frozen["walked"] < 20_000  # what a full pass still walks


def test_opt_out_leaves_the_collector_alone():
    untouched = _probe("openai_agents", OSMOSIS_COMPAT_GC_FREEZE="0")
    assert untouched["frozen"] == 0
    assert untouched["walked"] > 100_000


def test_trace_provider_is_built_at_import_not_in_the_first_rollout():
    """The SDK's default trace exporter makes an httpx client (an SSL context) when first needed: at import, not
    as a 40-60 ms event-loop stall inside the first Runner.run (also with OPENAI_AGENTS_DISABLE_TRACING=1)."""
    code = ("import agents.tracing.setup as s; import osmosis_compat.workflow.integrations.openai_agents; "
            "print(s.GLOBAL_TRACE_PROVIDER is not None)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
