"""What the planner decides, as plain dataclasses: per driver a :class:`Plan` (its runs, constructors, sessions,
statements dropped, helpers and classes migrated with it — or its ``problems``), per run a :class:`RunPlan`, per
agent constructor a :class:`CtorPlan`, per session a :class:`SessionPlan`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods.analysis.body import BodyFacts
from codemods.analysis.drivers import Driver


@dataclass
class RunPlan:
    """How one run site is rewritten."""

    input: str = "keep"  # "keep" | "prompt" (ctx.prompt) | "text" (the prompt's user text) | "drop" | "sub"
    session: Optional[str] = None  # the session variable to pass (OpenAI Agents)
    await_it: bool = False  # wrap the new call in ``await``
    method: Optional[str] = None  # new method name (``invoke_async`` for a sync Strands call, ``run`` for run_sync)
    drop_run_config_model: bool = False

    @property
    def changes(self) -> bool:
        """Whether writing this plan changes the run (a run already migrated plans to no change)."""
        return bool(self.method or self.await_it or self.input != "keep" or self.session or self.drop_run_config_model)


@dataclass
class SessionPlan:
    """A session the workflow creates: ``var = OsmosisMemorySession(name=…)`` before ``before``."""

    var: str
    name: Optional[str]  # the sample name (0.2), None = unnamed (a fresh one each time the statement runs)
    before: Optional[cst.CSTNode]  # the statement it goes before (None: replaces a user session constructor)
    replaces: Optional[cst.Call] = None  # a user session constructor it replaces (``SQLiteSession("x")``)


@dataclass
class CtorPlan:
    """How one agent constructor is rewritten."""

    model: Optional[cst.BaseExpression] = None  # the new ``model=`` value (None: keep what is there)
    messages_prompt: bool = False  # add ``messages=ctx.prompt`` (Strands: the run that takes the prompt)
    model_note: str = ""
    plain: bool = False  # the agent class stays the framework's own (0.3: not the sample); only its model changes
    module_var: Optional[str] = None  # ``model=VAR``, VAR module-level: ``model`` is its placeholder (the safe
    fallback: Optional[cst.BaseExpression] = None  # default) unless VAR itself becomes the placeholder in place


@dataclass
class Plan:
    """What to write for one driver, or why not (``problems``)."""

    driver: Driver
    facts: BodyFacts
    mode: str = "inplace"  # "inplace" | "beside"
    problems: list[str] = field(default_factory=list)
    cls_name: str = ""
    deps: list[str] = field(default_factory=list)  # module-level agents/groups built in run(), module order
    state: list[str] = field(default_factory=list)  # module-level state objects copied into run(), module order
    entry_desc: str = ""
    bind: Optional[str] = None  # variable bound to the prompt's user text at the top of run()
    bind_at: Optional[cst.CSTNode] = None  # …or at this statement (an interactive read replaced)
    subst: Optional[str] = None  # code of an input expression replaced by the prompt text (handler access)
    subst_map: dict[str, cst.BaseExpression] = field(default_factory=dict)  # code → value (CLI option defaults)
    text_nodes: set[int] = field(default_factory=set)  # id(expression) replaced by the prompt's text
    thread_calls: set[int] = field(default_factory=set)  # id(call) of sync code that runs agents: in a thread
    defaults: list[tuple[str, cst.BaseExpression]] = field(default_factory=list)  # params bound to their defaults
    runs: dict[int, RunPlan] = field(default_factory=dict)  # id(call) → plan
    ctors: dict[int, CtorPlan] = field(default_factory=dict)  # id(call) → plan
    model_assigns: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(model call) → placeholder
    sessions: list[SessionPlan] = field(default_factory=list)
    drop: set[int] = field(default_factory=set)  # id(statement) removed (feeds only the replaced input)
    exits: set[int] = field(default_factory=set)  # id(call) of ``exit(0)`` that becomes ``return``
    # id(statement) → (generator call, async): the line that handed a generator to a response iterates it instead
    consume: dict[int, tuple[cst.Call, bool]] = field(default_factory=dict)
    sleeps: set[int] = field(default_factory=set)  # id(call) of ``time.sleep(s)`` that becomes ``await asyncio.sleep(s)``
    answers: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(confirmation) → its declared default
    # module functions only this driver calls whose confirmations get their declared defaults: name → answers
    helper_answers: dict[str, list[tuple[cst.Call, cst.BaseExpression]]] = field(default_factory=dict)
    callers: list[int] = field(default_factory=list)  # top-level statements that call the driver (migrated)
    notes: list[str] = field(default_factory=list)  # extra words for the edit message
    prompt_text: bool = False  # the helper that extracts the prompt's user text is needed
    factories: dict[str, str] = field(default_factory=dict)  # factory called → name of the rollout version
    factory_plans: dict[str, "Plan"] = field(default_factory=dict)  # factories whose agents the driver runs
    helper_plans: dict[str, "Plan"] = field(default_factory=dict)  # helpers (functions that run agents) it uses
    class_plans: dict[str, list["Plan"]] = field(default_factory=dict)  # classes whose methods run agents: per method
    renames: dict[str, str] = field(default_factory=dict)  # module-level name → its rollout version
    agent_calls: dict[str, str] = field(default_factory=dict)  # imported agent → the factory call replacing it
    # osmosis-ai 0.3: the agent whose run is the rollout's one sample (None: not chosen, or not a plain name)
    sample_agent: Optional[str] = None
    # agents that stay plain because another agent is the sample (Strands): id(constructor) → (agent name, constructor)
    plain_agents: dict[int, tuple[str, cst.Call]] = field(default_factory=dict)
    # RunConfig(...) objects whose `model=` / `model_provider=` go (they would override the placeholder): in the
    # driver (ids of the calls), or bound at module level (name → the call)
    local_configs: set[int] = field(default_factory=set)
    module_configs: dict[str, cst.Call] = field(default_factory=dict)
    # model expressions the rollout's placeholder replaces (what they read may now be read by nothing)
    replaced: list[cst.CSTNode] = field(default_factory=list)
    # TODOs the emitter puts above statements of the driver: id(statement) → (code, reason)
    notes_at: dict[int, tuple[str, str]] = field(default_factory=dict)
    # comments of the driver's trailing statements that were dropped: they end the written block (set by the emitter)
    tail: list[cst.EmptyLine] = field(default_factory=list)


# input kinds
ENTRY = "entry"


TEMPLATE = "template"


KEEP = "keep"


@dataclass
class Entry:
    """The program's external input, as the planner found it (the one thing that becomes the rollout prompt)."""

    kind: str = ""  # "" (none) | "var" | "expr" | "literal" | "indirect"
    var: Optional[str] = None  # a variable holding it (read with input(), or a parameter)
    expr: Optional[str] = None  # the code of an expression that is it (``args.q``, ``event["prompt"]``, ``ctx.prompt``)
    site: Optional[object] = None  # the run site whose literal input it is (kind "literal"; a RunSite)
    param: Optional[str] = None  # the parameter it comes through
    read_stmt: Optional[cst.CSTNode] = None  # the statement that reads it interactively (``q = input()``)
    read_node: Optional[cst.CSTNode] = None  # the read that is a run's input itself (``Runner.run(a, input())``)
