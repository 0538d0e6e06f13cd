"""Keep an agent framework's import-time heap out of the cyclic garbage collector's way.

Why: importing OpenAI Agents (with openai and their pydantic models) leaves ~190,000 long-lived container objects
in the oldest GC generation. CPython runs a full (generation-2) collection whenever the objects surviving into it
grew by 25 % since the last one, and a full collection walks *every* tracked object: on a rollout server under
load that was a 100–200 ms pause of the event loop every few dozen rollouts, seen by the controller as p99 gaps
of 120–170 ms between a rollout's model calls at concurrency 20 (issue 12; ``bench/workflow_integrations.py``).

How: once the framework is imported, collect what the import left as garbage, then ``gc.freeze()`` — every object
alive at that moment moves to the permanent generation, which collections skip. Those objects are module-level
state that lives as long as the process anyway; later full collections only walk what rollouts allocate (a few
milliseconds). Set ``OSMOSIS_COMPAT_GC_FREEZE=0`` to leave the collector alone.
"""

from __future__ import annotations

import gc
import logging
import os
import time

__all__ = ["GC_FREEZE_ENV", "freeze_import_heap"]

GC_FREEZE_ENV = "OSMOSIS_COMPAT_GC_FREEZE"

logger = logging.getLogger("osmosis_compat.workflow.integrations")


def freeze_import_heap(reason: str) -> int:
    """Collect, then freeze every object alive now (see the module docstring); return how many were frozen.

    Does nothing (returns 0) when ``OSMOSIS_COMPAT_GC_FREEZE`` is ``0``/``false``/``no``/``off`` or the
    collector is disabled (whoever disabled it manages collections themselves).
    """
    if os.environ.get(GC_FREEZE_ENV, "").strip().lower() in {"0", "false", "no", "off"} or not gc.isenabled():
        return 0
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("%s: froze %d import-time objects out of GC in %.1f ms", reason, frozen,
                 (time.perf_counter() - started) * 1000)
    return frozen
