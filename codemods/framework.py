"""What a plain-framework rule tells the migration engine about its framework.

A :class:`Framework` is the one interface between the engine (analysis → plan → emit) and a rule
(``strands-agent``, ``openai-agent``): recognisers the analysis asks (is this call an agent constructor, a run site,
a model, a session?), planning hooks the planner asks (how this agent's model and this run are rewritten, whether
the samples fit the target) and writers the emitter calls. Per module it also carries the emission state that the
writers accumulate: imports needed, names whose imports may go, helpers to generate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods.analysis.body import RunShape, RunSite
from codemods.base import ImportTable, RuleContext
from codemods.codes import FrameworkCodes
from codemods.osmosis_api import CTX_PROMPT
from codemods.syntax import with_kwarg
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.plan.model import CtorPlan, RunPlan, SessionPlan
    from codemods.plan.planner import DriverPlanner


class _RunSiteCollector(cst.CSTVisitor):
    """Tracks the names that get agents; sets ``found`` at the first run site (for Framework.has_run_site)."""

    def __init__(self, fw: "Framework", agents: set[str], producers: Sequence[str]) -> None:
        super().__init__()
        self.fw = fw
        self.agents = agents
        self.producers = producers
        self.found = False

    def visit_Assign(self, n: cst.Assign) -> None:
        value = n.value.expression if isinstance(n.value, cst.Await) else n.value  # `await make_agent()`
        if isinstance(value, cst.Call) and (self.fw.is_agent_ctor(value) or (
            isinstance(value.func, cst.Name) and value.func.value in self.producers
        )):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    self.agents.add(t.target.value)
                elif isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) \
                        and t.target.value.value == "self":
                    self.agents.add(f"self.{t.target.attr.value}")  # kept on the object

    def visit_Call(self, n: cst.Call) -> bool:
        if self.fw.run_shape(n, self.agents) is not None:
            self.found = True
        return not self.found


class Framework(ABC):
    """What a rule tells the engine about its framework (recognisers for the analysis, writers for the emitter)."""

    code: str  # the rule's base code, e.g. "OM100"
    codes: FrameworkCodes  # every code the rule emits (codemods.codes)
    agent_ctors: tuple[str, ...]  # qualified names of the plain agent class
    osmosis_agent: tuple[str, str]  # (module, name) of the replacement class
    label: str  # "Strands" / "OpenAI Agents"
    tool_decorators: tuple[str, ...] = ()
    # each Osmosis agent registers itself as the rollout's sample source (Strands); else a session does (OpenAI)
    agent_is_sample_source: bool = False
    # agent constructor arguments that hold per-conversation state the agent writes into (Strands appends to
    # ``messages`` in place; a conversation manager trims it): a module-level object there is built per rollout
    state_kwargs: tuple[str, ...] = ()
    # how a program runs an agent it holds on one input, as code (``{agent}`` / ``{input}``): the synthetic run of a
    # library module's agent factory (find_drivers); None where that needs names the module may not import
    direct_run: Optional[str] = None
    direct_run_import: Optional[tuple[str, str]] = None  # (module, name) ``direct_run`` needs, imported if missing

    def __init__(self, table: ImportTable, ctx: RuleContext) -> None:
        self.table = table
        self.ctx = ctx
        self.target: str = ctx.target
        self.needed: list[tuple[str, str]] = []
        self.replaced: set[str] = set()  # local names whose references a rewrite removed (import candidates)
        self.prompt_text_needed = False  # the `_prompt_text` helper must be generated into the module
        self.rollout_model_needed = False  # the `_rollout_model` helper must be generated into the module
        self.append_guard: Optional[cst.If] = None  # a `__main__` block to add (the callers were module-level)
        self.where: Optional[cst.CSTNode] = None  # the input statement being converted (line of edits)
        self.needs_asyncio = False  # `import asyncio` must be there (asyncio.to_thread was written)
        self.import_aliases: set[tuple[str, str]] = set()  # (imported name, rollout name to import beside it)
        self.imported_names: set[str] = set()  # names imported from other files of the run (repo facts)
        # names each top-level statement of the written module uses (the import clean-up reads them; None: count)
        self.body_counts: Optional[list[dict[str, int]]] = None
        self._run_sites: dict[tuple, bool] = {}  # has_run_site answers, per (node, agents, producers)

    # -- recognisers (the analysis asks these)
    def ctor_heads(self) -> set[str]:
        """Local names through which this framework's agent class can be reached (``Agent``, ``s`` of
        ``s.Agent``, any name when a star import could bind it)."""
        heads: set[str] = set()
        for q in self.agent_ctors:
            heads.update(self.table.local_names_for(q))
            mod, _, name = q.rpartition(".")
            if mod in self.table.stars:
                heads.add(name)
        for local, mod in self.table.modules.items():
            if any(q.startswith(mod + ".") for q in self.agent_ctors):
                heads.add(local)
        return heads

    def run_heads(self) -> set[str]:
        """Local names a run site may start with (besides agent variables)."""
        return set()

    def is_agent_ctor(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Subscript):  # Agent[Ctx](...)
            func = func.value
        return self.table.matches(func, self.agent_ctors) is not None

    def is_group_ctor(self, call: cst.Call) -> bool:
        return False

    def is_osmosis_agent_ctor(self, call: cst.Call) -> bool:
        """``call`` builds the framework's Osmosis agent class (code a migration already wrote)."""
        func = call.func.value if isinstance(call.func, cst.Subscript) else call.func
        mod, name = self.osmosis_agent
        return self.table.matches(func, (f"{mod}.{name}",)) is not None or (
            isinstance(func, cst.Name) and func.value == name)

    def is_session_ctor(self, call: cst.Call) -> bool:
        return False

    def model_kind(self, call: cst.Call) -> Optional[str]:
        return None

    def is_tool_decorator(self, func: cst.FunctionDef) -> bool:
        for dec in func.decorators:
            d = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            if self.table.matches(d, self.tool_decorators) is not None:
                return True
        return False

    def takes_prompt_already(self, run: RunSite) -> bool:
        """The run is already written the way a migration gives it the rollout prompt (nothing to change)."""
        return False

    @abstractmethod
    def run_shape(self, call: cst.Call, agents: set[str]) -> Optional[RunShape]:
        """How ``call`` runs an agent, if it is a run site (``agents``: names known to hold agents)."""

    def has_run_site(self, node: cst.CSTNode, module_agents: set[str], producers: Sequence[str] = (),
                     cache: bool = True) -> bool:
        """Whether ``node`` contains a run site (agents built in it, or got from a ``producers`` factory, count).
        ``cache=False`` for a node made for the question (its id may be reused by another node once it is gone)."""
        key = (id(node), frozenset(module_agents), tuple(producers))
        if not cache:
            collect = _RunSiteCollector(self, set(module_agents), producers)
            fast_visit(node, collect)
            return collect.found
        if key not in self._run_sites:
            collect = _RunSiteCollector(self, set(module_agents), producers)
            fast_visit(node, collect)  # one pass: assignments are seen before the calls that follow them
            self._run_sites[key] = collect.found
        return self._run_sites[key]

    # -- planning hooks (the planner asks these)
    @abstractmethod
    def plan_model(self, ctor: cst.Call, planner: "DriverPlanner", nested: Optional[str]) -> tuple[CtorPlan, str, list]:
        """(plan, problem or "", argument values the new model drops) for one agent constructor."""

    def plan_plain_model(self, ctor: cst.Call, planner: "DriverPlanner") -> Optional[CtorPlan]:
        """For an agent that stays the framework's own class (not the rollout's sample): its model on the rollout's
        endpoint, or None to keep its own. Frameworks whose every Osmosis agent is a sample source implement it."""
        return None

    @abstractmethod
    def plan_run(self, run: RunSite, rp: RunPlan, planner: "DriverPlanner") -> Optional[str]:
        """Fill ``rp`` for one run (sessions, await, method); return a problem or None."""

    @abstractmethod
    def plan_samples(self, planner: "DriverPlanner") -> Optional[str]:
        """Check the samples the workflow will register (names unique, once per rollout; one for 0.3)."""

    # -- writers
    def note_replaced(self, func: cst.BaseExpression) -> None:
        head = func
        while isinstance(head, (cst.Attribute, cst.Subscript)):
            head = head.value
        if isinstance(head, cst.Name):
            self.replaced.add(head.value)

    def need(self, mod: str, name: str) -> None:
        if (mod, name) not in self.needed:
            self.needed.append((mod, name))

    @abstractmethod
    def write_run(self, call: cst.Call, run: RunSite, rp: RunPlan, text: Optional[str]) -> cst.BaseExpression:
        """The rewritten run (``text``: the code of the expression that replaces a handler access, if any)."""

    def write_ctor(self, call: cst.Call, plan: CtorPlan) -> cst.Call:
        """``Agent(...)`` → the Osmosis class with the plan's model (and ``messages=ctx.prompt``)."""
        if plan.plain:
            new = call  # the framework's own agent class: only its model changes
            self.rollout_model_needed = True
        else:
            self.note_replaced(call.func)
            self.need(*self.osmosis_agent)
            # the Osmosis classes are not generic (`OsmosisAgent[Ctx](...)` raises TypeError): the type parameter
            # only annotated the plain class
            new = call.with_changes(func=cst.Name(self.osmosis_agent[1]))
        if plan.model is not None:
            positional_model = self.positional_model(new)
            if positional_model is not None:
                args = list(new.args)
                args[positional_model] = args[positional_model].with_changes(value=plan.model)
                new = new.with_changes(args=args)
            else:
                new = with_kwarg(new, "model", plan.model)
        if plan.messages_prompt:
            new = with_kwarg(new, "messages", CTX_PROMPT)
        return new

    def positional_model(self, call: cst.Call) -> Optional[int]:
        return None

    def session_stmt(self, sp: SessionPlan) -> cst.SimpleStatementLine:
        """``var = OsmosisMemorySession(name="…")`` (0.2) / ``OsmosisMemorySession()`` (0.3): the one place
        sessions are written."""
        raise NotImplementedError

    def session_ctor(self, sp: SessionPlan) -> cst.Call:
        raise NotImplementedError
