"""Wall time and RSS of the workflow API surface in fresh interpreters, before any framework is used.

``from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend, create_rollout_server`` must not import
strands, agents or litellm (they load only when an integration module is imported, and litellm only when a
litellm-only option is used). Target (issue 3, item 9): ≤ 1 s; upstream 0.2.31: ~5.5 s and 201 MB (it imports
everything eagerly). The integration modules are shown too, for reference.
Run: ``python bench/import_workflow.py``
"""

from __future__ import annotations

import subprocess
import sys

from _common import ENV, child_import_cost

SURFACE = "from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend, create_rollout_server"
CASES = {
    "python (baseline)": "pass",
    "import osmosis_ai.rollout": "import osmosis_ai.rollout",
    "workflow surface (shim)": SURFACE,
    "workflow surface (osmosis_compat)": (
        "from osmosis_compat.workflow import AgentWorkflow, Grader, LocalBackend, create_rollout_server"
    ),
    "+ integrations.agents.strands": f"{SURFACE}; import osmosis_ai.rollout.integrations.agents.strands",
    "+ integrations.agents.openai_agents": f"{SURFACE}; import osmosis_ai.rollout.integrations.agents.openai_agents",
}
UPSTREAM_S, UPSTREAM_MB, TARGET_S = 5.5, 201.0, 1.0


def heavy_modules_loaded(statement: str) -> list[str]:
    code = f"import sys; {statement}; print(' '.join(m for m in ('strands', 'agents', 'litellm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
    return out.stdout.split()


def main() -> None:
    print(f"{'case':38} {'wall s':>8} {'RSS MB':>8}  frameworks loaded")
    results = {}
    for label, statement in CASES.items():
        wall, rss = child_import_cost(statement)
        results[label] = wall
        print(f"{label:38} {wall:8.3f} {rss:8.1f}  {' '.join(heavy_modules_loaded(statement)) or '-'}")
    wall = results["workflow surface (shim)"]
    print(f"workflow surface: {wall:.3f} s = {UPSTREAM_S / wall:.0f}x faster than upstream 0.2.31 (~{UPSTREAM_S} s, "
          f"{UPSTREAM_MB:.0f} MB); target <= {TARGET_S} s -> {'met' if wall <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
