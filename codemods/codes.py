"""The one registry of the codes ``osmosis-migrate`` emits: every edit (``OMx0y``) and TODO (``OMx9y``) a rule
records is declared here once, with the rule that owns it and what it means.

Rules import the constants (``codes.STRANDS.not_migrated``, ``codes.LEGACY_NOT_REWRITTEN``) instead of building
code strings; ``docs/migrate.md``'s code table is checked against :data:`REGISTRY` by the tests, so the docs, the
report and the markers can never disagree on what a code means.

Families: the hundreds digit is the rule (``OM1xx`` strands-agent, ``OM2xx`` openai-agent, ``OM3xx`` legacy-loop,
``OM4xx`` imports, ``OM5xx`` workflow-0.3); within a family ``x0y``/``x1y`` are edits and ``x9y`` TODOs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["edit", "todo"]


@dataclass(frozen=True)
class Code:
    """One code: ``code`` (``"OM190"``), the ``rule`` name that emits it, ``kind`` (edit or TODO), a one-line
    ``title`` (what it means; the docs' table repeats it)."""

    code: str
    rule: str
    kind: Kind
    title: str

    def __str__(self) -> str:
        return self.code


REGISTRY: dict[str, Code] = {}


def _code(code: str, rule: str, kind: Kind, title: str) -> Code:
    if code in REGISTRY:
        raise ValueError(f"code {code} declared twice")
    family = {"1": "strands-agent", "2": "openai-agent", "3": "legacy-loop", "4": "imports", "5": "workflow-0.3"}
    if family.get(code[2]) != rule:
        raise ValueError(f"code {code} is outside the family of rule {rule}")
    entry = Code(code, rule, kind, title)
    REGISTRY[code] = entry
    return entry


def lookup(code: str) -> Code:
    """The registered :class:`Code` for ``code`` (``KeyError`` for a code nobody declared)."""
    return REGISTRY[code]


@dataclass(frozen=True)
class FrameworkCodes:
    """The codes of one plain-framework rule (strands-agent / openai-agent share the emitter; each has its family)."""

    rule: str
    base: Code
    model: Code
    agent: Code
    wrap: Code
    imports: Code
    run: Code
    session: Code | None
    serve: Code
    not_migrated: Code
    agent_left: Code
    several_workflows: Code
    no_grader: Code
    shared_state: Code


def _framework(digit: str, rule: str, label: str, osmosis_agent: str, sessions: bool) -> FrameworkCodes:
    c = f"OM{digit}"
    return FrameworkCodes(
        rule=rule,
        base=_code(f"{c}00", rule, "edit", f"the {rule} rule (plain {label} code → {osmosis_agent} in an AgentWorkflow)"),
        model=_code(f"{c}01", rule, "edit", "a model becomes the rollout placeholder (sampling settings carried over)"),
        agent=_code(f"{c}02", rule, "edit", f"the agent class becomes {osmosis_agent}"),
        wrap=_code(f"{c}03", rule, "edit", "a driver (function, script, __main__ block), helper, class or factory "
                   "rewritten to run in AgentWorkflow.run()"),
        imports=_code(f"{c}04", rule, "edit", "imports added or removed"),
        run=_code(f"{c}05", rule, "edit", "a run site rewritten (awaited, fed the rollout prompt)"),
        session=_code(f"{c}06", rule, "edit", "OsmosisMemorySession created for a run") if sessions else None,
        serve=_code(f"{c}07", rule, "edit", "the __main__ block serves the workflow; module-level calls removed"),
        not_migrated=_code(f"{c}90", rule, "todo", "a driver that is not migrated, and why"),
        agent_left=_code(f"{c}91", rule, "todo", f"a plain {label} agent that stays, and why"),
        several_workflows=_code(f"{c}94", rule, "todo", "the module now defines several workflows"),
        no_grader=_code(f"{c}95", rule, "todo", "no Grader in the module: what one could read"),
        shared_state=_code(f"{c}96", rule, "todo", "module-level state the workflow's tools change: shared by "
                           "every rollout"),
    )


STRANDS = _framework("1", "strands-agent", "Strands", "OsmosisStrandsAgent", sessions=False)
OPENAI = _framework("2", "openai-agent", "OpenAI Agents", "OsmosisAgent", sessions=True)

LEGACY = _code("OM300", "legacy-loop", "edit", "the legacy-loop rule (RolloutAgentLoop → AgentWorkflow + Grader)")
LEGACY_REWRITTEN = _code("OM301", "legacy-loop", "edit", "a RolloutAgentLoop rewritten as an AgentWorkflow + Grader")
LEGACY_WRAPPED = _code("OM302", "legacy-loop", "edit", "a RolloutAgentLoop wrapped with loop_as_workflow "
                       "(--strategy wrap; runs on osmosis-compat)")
LEGACY_SERVING = _code("OM303", "legacy-loop", "edit", "agent_loop / create_app serving lines → LocalBackend / "
                       "create_rollout_server")
LEGACY_IMPORTS = _code("OM304", "legacy-loop", "edit", "legacy imports replaced; legacy SDK helpers written into "
                       "the file")
LEGACY_TOOLS = _code("OM305", "legacy-loop", "edit", "the loop's tool schemas and calls carried over")
LEGACY_NOT_REWRITTEN = _code("OM390", "legacy-loop", "todo", "a loop that is not rewritten, and the precise reason")
LEGACY_APP_ARGS = _code("OM391", "legacy-loop", "todo", "create_app arguments with no equivalent")
LEGACY_PLACEMENT = _code("OM392", "legacy-loop", "todo", "a loop class inside a function, or several workflows "
                         "in one module")
LEGACY_REWARD_MIXED = _code("OM393", "legacy-loop", "todo", "some exits passed no reward (the marker names them): "
                            "the grader gives them the reward the other exits passed, or the starting rule when "
                            "run() hands those over")
LEGACY_NO_REWARD = _code("OM394", "legacy-loop", "todo", "the loop passed no reward: the generated grader's rule "
                         "is a starting point")
LEGACY_WRAP_NOTE = _code("OM395", "legacy-loop", "todo", "an explicit wrap: the file runs on osmosis-compat, not "
                         "osmosis-ai alone")
LEGACY_LEFTOVER = _code("OM396", "legacy-loop", "todo", "legacy SDK names the file still imports (osmosis-ai 0.3 has "
                        "none of them)")
LEGACY_SERVE = _code("OM397", "legacy-loop", "todo", "a rewritten loop whose __init__ takes arguments: how to serve "
                     "it (LocalBackend builds cls(config))")

IMPORTS = _code("OM400", "imports", "edit", "the imports rule (osmosis_ai import paths that moved)")
IMPORT_MOVED = _code("OM401", "imports", "edit", "an osmosis_ai import moved to its current path")
IMPORT_UNUSED = _code("OM402", "imports", "edit", "an import a rewrite left unused (or repeated) removed")
IMPORT_HELPERS = _code("OM403", "imports", "edit", "legacy SDK tool helpers written into a module that calls them")
IMPORT_REMOVED = _code("OM490", "imports", "todo", "a name osmosis-ai removed")

WORKFLOW03 = _code("OM500", "workflow-0.3", "edit", "the workflow-0.3 rule (0.2 workflows and graders → 0.3)")
W03_GRADER = _code("OM501", "workflow-0.3", "edit", "a grader's samples loop → ctx.sample + ctx.set_reward")
W03_SOURCE = _code("OM502", "workflow-0.3", "edit", "register_sample_source(name, src) → set_sample_source(src)")
W03_SESSION = _code("OM503", "workflow-0.3", "edit", "OsmosisMemorySession(name=…) → OsmosisMemorySession()")
W03_SERVER = _code("OM504", "workflow-0.3", "edit", "create_rollout_server imported from osmosis_ai.rollout.server")
W03_TODO = _code("OM590", "workflow-0.3", "todo", "0.2 API uses that cannot move to 0.3 (several sample sources, "
                 "other uses of ctx.samples)")
