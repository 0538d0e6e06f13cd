"""Wall time and RSS of ``import osmosis_ai.rollout`` (the legacy surface) in fresh interpreters.

Targets (issue 2): ≤ 0.3 s and ≤ 60 MB; upstream 0.2.17: ~3.7 s and 187 MB (it imports litellm).
Run: ``python bench/import_legacy.py``
"""

from __future__ import annotations

from _common import child_import_cost

CASES = {
    "python (baseline)": "pass",
    "import osmosis_ai.rollout": "import osmosis_ai.rollout",
    "legacy agent imports": (
        "from osmosis_ai.rollout import RolloutAgentLoop, RolloutContext, RolloutResult, RolloutRequest; "
        "from osmosis_ai.rollout.tools import execute_tool_calls, get_tool_call_info"
    ),
    "+ create_app (fastapi)": "from osmosis_ai.rollout import create_app",
}


def main() -> None:
    print(f"{'case':34} {'wall s':>8} {'RSS MB':>8}")
    for label, statement in CASES.items():
        wall, rss = child_import_cost(statement)
        print(f"{label:34} {wall:8.3f} {rss:8.1f}")
    print("targets: import osmosis_ai.rollout <= 0.300 s and <= 60 MB (upstream ~3.7 s, 187 MB)")


if __name__ == "__main__":
    main()
