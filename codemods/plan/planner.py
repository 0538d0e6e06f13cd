"""The plan of one driver: what may be migrated, and how — or why not.

:func:`plan_driver` decides, from the module's facts (:mod:`codemods.analysis`):

* the program's **external input** — exactly one of: an interactive read (``q = input(...)``), a command-line
  argument (``args.question``, ``sys.argv``), the parameter that reaches the agents' input (also through a handler
  argument: ``event.get("prompt")``, ``body.message``), or else the literal prompt of the first run. Only that input
  becomes the rollout's prompt: a run whose input *is* it gets ``ctx.prompt``; a template around it keeps its text
  (the variable is bound to the prompt's user text); every other input (a previous agent's output, a carried-over
  conversation, a resumed ``RunState``, the program's own follow-up prompts) is kept as written;
* the **sessions** (OpenAI Agents) — one per sample: each run gets its own, created once before it; a run in a loop
  gets a fresh unnamed one per pass (never the same name twice); a run that continues another (``RunState``) or
  shares a user session shares it; a user session object becomes an ``OsmosisMemorySession``;
* the **models** — every agent gets the rollout placeholder, also when its model comes through a local variable,
  a module-level name or a string; sampling settings carry over, or the driver is not migrated;
* what **cannot move** into ``run()``: interactive reads other than the input itself, confirmations, ``exit()``
  with a status, argparse beyond the input, ``time.sleep``, servers, REPL loops, generators;
* who **calls** it: nothing or the ``__main__`` block (then it is converted in place and the ``__main__`` block
  serves the workflow), or other code — a decorator (web route), another function, another module, a Lambda
  runtime (then the workflow is added *beside* it and the function stays).

Every refusal is a sentence naming the shape and the name (it becomes the TODO).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.body import (
    BodyFacts,
    RunSite,
    body_facts,
    code,
    contains,
    is_string,
    names_in,
)
from codemods.analysis.code_facts import (
    AgentCtorFinder,
    IndirectInputs,
    access_around,
    argparse_defaults,
    assigned_name,
    attribute_nodes,
    attributes_of,
    builds_agent,
    call_sites,
    called_once,
    calls_of,
    calls_only,
    describe_stmt,
    interactive_calls,
    interactive_function,
    is_expr_stmt_of,
    is_output_stmt,
    is_parser_stmt,
    media_key,
    self_assignments,
    generator_uses,
    stateful_uses,
    statements_reading,
    subexpr_codes,
    yield_lines,
    text_of,
)
from codemods.analysis.drivers import Driver, is_handler, returns_of
from codemods.analysis.module import ModuleModel, assigned_value, is_main_guard, module_agent_deps
from codemods.options import DEFAULT_TARGET
from codemods.plan.model import ENTRY, KEEP, TEMPLATE, Entry, Plan, RunPlan
from codemods.plan.input_choice import keep_asking_branch
from codemods.plan.one_turn import (
    OneTurn,
    holds,
    localize_lazy_singletons,
    unroll_conversation_loop,
    unwrap_error_reports,
)
from codemods.syntax import block_statements, is_import_stmt
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.framework import Framework


class DriverPlanner:
    """Plans one driver (or helper, factory, method) of a module: ``DriverPlanner(model, fw, driver, target).run()``
    returns its :class:`~codemods.plan.model.Plan`. The planner reads the module's facts and never writes code."""

    def __init__(self, model: ModuleModel, fw: "Framework", driver: Driver, target: str, *,
                 self_agents: frozenset[str] = frozenset(),
                 self_values: Optional[dict[str, list[cst.BaseExpression]]] = None,
                 sample_helper: bool = False) -> None:
        self.m = model
        self.fw = fw
        self.d = driver
        self.target = target
        self.p = Plan(driver=driver, facts=BodyFacts())  # replaced by the entry points below
        self.local_agents: set[str] = set()  # names that hold agents the migration builds
        # a method of a class: the agents its class keeps on `self`, and what each `self.x` is set to
        self.self_agents: set[str] = set(self_agents)
        self.self_values: dict[str, list[cst.BaseExpression]] = dict(self_values or {})
        self.entry = Entry()  # the program's external input (choose_entry)
        self.argparse_other: Optional[list[str]] = None  # command-line options read besides the input
        self.model_params: list[cst.Param] = []  # parameters besides the input: decided with the models
        self.dep_ctors: list[tuple[str, cst.Call]] = []  # constructors of module-level agents built in run()
        self._holds_run: dict[int, bool] = {}  # id(assignment) → it stores a run's result (memo of holds_run)
        self._indirect: Optional[list[cst.BaseExpression]] = None  # memo of indirect_inputs
        # osmosis-ai 0.3 trains one sample per rollout: the run whose result the program ends with, and its agent
        self.sample: Optional[RunSite] = None
        # a helper that runs the driver's agents for it, once per rollout: its sample run is the rollout's sample
        self.sample_helper = sample_helper

    def plan_state(self) -> None:
        """Module-level objects the migrated code keeps state in — handed to an agent where it writes
        (``messages=history``, ``conversation_manager=manager``), entered (``with client:``) or changed in place
        (``history.append(x)``) — would be shared by every rollout the server runs, concurrently: each is built per
        rollout at the top of run() (a copy of its definition; the original stays for other users), or, when other
        module code uses it too, the driver is not migrated."""
        m, p, f = self.m, self.p, self.p.facts
        uses = stateful_uses(self.d.stmts)
        ctors = [c.call for c in f.ctors] + [assigned_value(m.body[m.agents[d]]) for d in p.deps if d not in m.groups]
        for call in ctors:
            for a in call.args if isinstance(call, cst.Call) else ():
                if a.keyword is not None and a.keyword.value in self.fw.state_kwargs and isinstance(a.value, cst.Name):
                    uses.setdefault(a.value.value, f"handed to an agent as `{a.keyword.value}=`")
        skip = {*self.d.indices, *(m.agents[d] for d in p.deps)}
        chosen: list[tuple[int, str]] = []
        for name, how in uses.items():
            if name in f.stores or name in m.agents or name in m.models or name in m.sessions \
                    or m.bindings.get(name) != 1:
                continue  # a local, or what the migration already builds per rollout
            j = m.definition(name)
            if j is None or not _holds_state(assigned_value(m.body[j])):
                continue
            others = [describe_stmt(m.body[k]) for k in m.users(name, skip=[j, *skip]) if not is_main_guard(m.body[k])]
            if others:
                self.problem(f"the module-level `{name}` is {how} and also used by {', '.join(others[:2])}: every "
                             "rollout would share it - build it per conversation by hand")
                continue
            chosen.append((j, name))
        p.state = [name for _, name in sorted(chosen)]
        if p.state:
            p.notes.append("built per rollout: " + ", ".join(f"`{n}`" for n in p.state))

    def module_private(self, name: str) -> bool:
        """No top-level code reads the module-level ``name`` but the driver and its plain definition (``X = None``)."""
        m = self.m
        for j in m.users(name, skip=self.d.indices):
            stmt = m.body[j]
            if not (isinstance(stmt, (cst.SimpleStatementLine)) and assigned_name(stmt) == name
                    and isinstance(assigned_value(stmt), cst.Name)):
                return False
        return True

    def problem(self, text: str) -> None:
        if text not in self.p.problems:
            self.p.problems.append(text)

    # -- entry point
    def run(self) -> Plan:
        if self.d.kind == "factory":
            return self.run_factory()
        if self.d.kind == "helper":
            return self.run_helper()
        d, m = self.d, self.m
        deps = self.agent_deps(self.initial_agent_names())
        facts = m.facts_cache.pop(id(d.func), None) if d.kind == "function" else None
        if facts is None:
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        turn = self.one_turn(facts)
        if turn is not None:  # its conversation loop kept one pass: plan that
            d.stmts = turn.stmts
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        choice = keep_asking_branch(d.stmts, holds([r.call for r in facts.runs]),
                                    holds([x.node for x in facts.process if x.kind == "input"]))
        if choice is not None:  # the program picks a person or a script to ask: a rollout's input is its prompt
            d.stmts = choice.stmts
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        local = localize_lazy_singletons(d.stmts, self.module_private)
        if local is not None:  # a singleton the process built once: each rollout builds its own
            d.stmts = local
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        unwrapped = unwrap_error_reports(d.stmts, holds([r.call for r in facts.runs]))
        if unwrapped is not None:  # a rollout's error fails the rollout instead of being printed and lost
            d.stmts = unwrapped
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        self.p = Plan(driver=d, facts=facts)
        if turn is not None:
            self.p.notes.append(turn.note)
        if choice is not None:
            self.p.notes.extend(choice.notes)
        self.p.deps = sorted(deps, key=lambda n: m.agents[n])
        self.local_agents = {c.var for c in facts.ctors if c.var} | set(deps) | set(m.imported_agents)
        self.check_callers()
        self.check_structure()
        self.resolve_agents()
        self.plan_helpers()
        self.plan_nested_generators()
        self.choose_entry()
        self.plan_params()
        self.classify_inputs()
        self.choose_sample()
        self.plan_process_code()
        self.plan_models()
        self.plan_state()
        self.plan_runs()
        self.plan_samples()
        self.plan_sync_calls()
        return self.p

    def one_turn(self, facts: BodyFacts) -> Optional[OneTurn]:
        """The driver's conversation loop (a REPL, a chat loop, a batch over literal prompts) unrolled to the one
        pass a rollout runs (:mod:`codemods.plan.one_turn`), or None."""
        m = self.m
        runners = m.helpers | m.runners | m.runner_classes | set(m.imported_helpers) | set(m.imported_classes)
        runners |= {r.nested for r in facts.runs if r.nested}
        # objects of those classes (`bot = ChatBot()`): `bot.chat(q)` runs an agent too
        runners |= set(objects_of(facts, runners))
        run_calls = holds([r.call for r in facts.runs])

        def runs(node: cst.CSTNode) -> bool:
            return run_calls(node) or bool(runners & {n.value for n in names_in(node)})

        reads = holds([x.node for x in facts.process if x.kind == "input"])
        literal_lists = {name: a[0].value for name, a in facts.stores.items()
                         if len(a) == 1 and isinstance(a[0].value, (cst.List, cst.Tuple))}
        for name in m.bindings:
            value = m.value_of(name)
            if name not in literal_lists and isinstance(value, (cst.List, cst.Tuple)):
                literal_lists[name] = value
        return unroll_conversation_loop(self.d.stmts, runs, reads, literal_lists)

    def choose_sample(self) -> None:
        """osmosis-ai 0.3 keeps one sample per rollout: the driver's last run that runs once per rollout (not in a
        loop, a nested function, a lambda or a ``gather``) is the one whose conversation is the sample — the result
        the program ends with. Other runs still run (as the program did); how each framework keeps them out of the
        sample is its own (Strands: their agents stay plain; OpenAI Agents: their runs get no session)."""
        if not self.target.startswith("0.3") or self.d.kind == "factory":
            return
        once = [r for r in self.p.facts.runs if not (r.in_loop or r.nested or r.in_lambda or r.in_gather)]
        if once:
            sample = max(once, key=lambda r: r.order)
            while (head := self.resumed_run(sample)) is not None and head is not sample:
                sample = head  # a run resumed from a saved state continues that run's conversation: one sample
            self.sample = sample
            self.p.sample_agent = self.group_entry(sample.agent) or sample.agent

    def resumed_run(self, run: RunSite) -> Optional[RunSite]:
        """The run whose saved state ``run`` resumes (its input a name bound to ``<result>.to_state()`` of that run's
        result), else None."""
        inp = run.shape.input_arg.value if run.shape.input_arg is not None else None
        if not isinstance(inp, cst.Name):
            return None
        for a in self.p.facts.stores.get(inp.value, ()):
            v = a.value
            if isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "to_state" \
                    and isinstance(v.func.value, cst.Name):
                result_var = v.func.value.value
                earlier = [r for r in self.p.facts.runs if r.order < run.order and any(
                    b.value is not None and contains(b.value, r.call) for b in self.p.facts.stores.get(result_var, ()))]
                if earlier:
                    return min(earlier, key=lambda r: r.order)
        return None

    def group_entry(self, name: Optional[str]) -> Optional[str]:
        """When ``name`` is a multi-agent group (a Strands ``Swarm``), the agent it starts with (``entry_point=``, else
        its first member): the group runs several agents, and the one the task is handed to is the sample."""
        if name is None:
            return None
        value = None
        if name in self.m.groups:
            value = assigned_value(self.m.body[self.m.agents[name]])
        else:
            stores = self.p.facts.stores.get(name, ())
            if len(stores) == 1 and isinstance(stores[0].value, cst.Call) and self.fw.is_group_ctor(stores[0].value):
                value = stores[0].value
        if not isinstance(value, cst.Call):
            return None
        entry = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "entry_point"), None)
        if entry is None and value.args and isinstance(value.args[0].value, (cst.List, cst.Tuple)):
            members = value.args[0].value.elements
            entry = members[0].value if members else None
        return entry.value if isinstance(entry, cst.Name) else None

    def plain_agent_reason(self, name: str, on_rollout_model: bool) -> str:
        """Why an agent of the workflow stays a plain one under osmosis-ai 0.3 (the TODO above its constructor)."""
        sample = self.p.sample_agent
        head = (f"`{name}` is not the rollout's sample: osmosis-ai 0.3 records one conversation per rollout, the one "
                f"of `{sample}` (the run the workflow ends with), so `{name}` stays a plain {self.fw.label} agent")
        if on_rollout_model:
            return (f"{head} on the rollout's model (`_rollout_model`): its calls reach the policy being trained, its "
                    f"conversation is not graded - make `{name}` the Osmosis agent instead if it is the one to train")
        return (f"{head} on its own model, which the rollout model cannot stand for: its calls are not trained and "
                "need that model's provider reachable wherever the rollout server runs")

    def is_sample_agent(self, name: Optional[str]) -> bool:
        """Whether the agent bound to ``name`` may become the rollout's sample (always, unless a sample was chosen
        and it is another agent)."""
        return self.sample is None or self.p.sample_agent is None or name == self.p.sample_agent

    def plan_sync_calls(self) -> None:
        """Sync helpers and sync methods of runner classes that the driver calls run their agents synchronously:
        inside run() they go to a thread (``await asyncio.to_thread(...)``), so the rollout server's event loop is
        not blocked while the agent works (the rollout context follows: to_thread copies the context)."""
        m = self.m
        objects = objects_of(self.p.facts, m.runner_classes)
        if self.d.kind in ("function", "script", "main") and (m.helpers or m.runner_classes):
            awaited: set[int] = set()  # shared by the walks of all the statements
            for stmt in self.d.stmts:
                fast_visit(stmt, _SyncAgentCalls(m, self.p, objects, awaited))

    def run_helper(self) -> Plan:
        """A function that runs agents for a driver (a helper, a tool, a guardrail): its agents become the Osmosis
        classes, its runs get a fresh session each time (it may be called many times); its inputs are its own."""
        d = self.d
        deps = self.agent_deps(self.initial_agent_names())
        self_agents = self.self_agents | set(self.m.imported_agents)
        facts = body_facts(d.stmts, self.fw, set(deps) | self_agents, producers=self.producers())
        self.p = Plan(driver=d, facts=facts, mode="inplace")
        self.p.deps = sorted(deps, key=lambda n: self.m.agents[n])
        self.local_agents = {c.var for c in facts.ctors if c.var} | set(deps) | self_agents
        self.use_imported()
        self.entry.kind = ""
        self.resolve_agents()
        for run in facts.runs:
            run.input_kind = KEEP
        self.choose_sample()
        others = (set(facts.loads) & self.m.helpers) - {d.name}
        if others:
            self.problem(f"`{d.name}` itself uses the helper `{sorted(others)[0]}` (helpers are migrated one level deep)")
        self.plan_process_code()
        self.plan_models()
        self.plan_runs()
        self.plan_samples()
        return self.p

    def use_imported(self) -> None:
        """Names imported from other files of the run: their rollout versions replace them in what is migrated
        (``planner_agent`` → ``planner_agent_for_rollout()``, ``ResearchManager`` → ``ResearchManagerForRollout``);
        a name whose file offers nothing makes the driver fail with that file's reason."""
        m, p = self.m, self.p
        for name in sorted(set(p.facts.loads)):
            if name in self.own_agent_tools():
                continue  # 0.3: a tool running its own agent stays as it is (its agent is not the sample)
            if name in m.imported_problems:
                self.problem(m.imported_problems[name])
            elif m.imported_agents.get(name):
                p.agent_calls[name] = m.imported_agents[name]
            elif m.imported_classes.get(name):
                p.renames[name] = m.imported_classes[name]
            elif m.imported_helpers.get(name):
                p.renames[name] = m.imported_helpers[name]

    def plan_helpers(self) -> None:
        """The helpers the driver uses — called (``await check(x)``) or handed to an agent (``tools=[f]``,
        ``input_guardrails=[g]``), and classes whose methods run agents: each is planned; what it cannot do, the
        driver cannot either."""
        self.use_imported()
        for name in sorted(set(self.p.facts.loads) & self.m.runner_classes - set(self.m.imported_classes)):
            self.plan_class(name)
        used = set(self.p.facts.loads) & self.m.helpers - set(self.m.imported_helpers)
        for dep in self.p.deps:
            used |= set(self.m.counts[self.m.agents[dep]]) & self.m.helpers
        sample_helper = self.sample_helper_name()
        for name in sorted(used - {self.d.name} - self.own_agent_tools()):
            func = self.m.body[self.m.functions[name]]
            assert isinstance(func, cst.FunctionDef)
            driver = Driver("helper", name, [self.m.functions[name]], list(block_statements(func.body)), func)
            plan = DriverPlanner(self.m, self.fw, driver, self.target, sample_helper=name == sample_helper).run()
            self.p.helper_plans[name] = plan
            for problem in plan.problems:
                self.problem(f"it uses `{name}`, which runs an agent and cannot be migrated with it: {problem}")
            if plan.facts.yields:
                self.consume_generator(name, func)

    def hands_sample_on(self) -> bool:
        """osmosis-ai 0.3 and a driver that runs no agent itself: its sample, if any, is in what it calls."""
        return self.target.startswith("0.3") and self.d.kind in ("function", "script", "main") \
            and not self.p.facts.runs

    def sample_helper_name(self) -> Optional[str]:
        """The module function that runs the driver's agents for it once per rollout, when there is exactly one
        (osmosis-ai 0.3: its sample run is the rollout's sample): the driver runs no agent itself and calls it once,
        outside loops and nested functions, and nothing else of the module uses it — the program's ``main()`` calling
        its ``answer(question)``. None otherwise (at 0.2, where every run is a sample, always None)."""
        m, f = self.m, self.p.facts
        if not self.hands_sample_on():
            return None
        loaded = set(f.loads)
        if loaded & (m.runner_classes | set(m.imported_classes) | set(m.imported_helpers)):
            return None  # other code runs agents for it too: which run is the sample is not this helper's to say
        candidates = sorted(loaded & m.helpers - {self.d.name} - self.own_agent_tools())
        if len(candidates) != 1:
            return None
        name = candidates[0]
        calls, repeated = call_sites(self.d.stmts, name)
        if calls != 1 or repeated or f.load_count(name) != 1:
            return None  # called again, in a loop, or handed on (a tool, a callback): not once per rollout
        if not set(m.users(name, skip=[m.functions[name]])) <= set(self.d.indices):
            return None  # other code of the module calls it outside a rollout
        return name

    def sample_method_name(self, cls: str, methods: list[cst.FunctionDef]) -> Optional[str]:
        """The method of the runner class ``cls`` (of its ``methods`` that build or run agents) that runs the
        driver's agents for it once per rollout, when there is one (osmosis-ai 0.3: its sample run is the rollout's
        sample): the driver runs no agent itself, uses no other runner, builds one object of the class (``bot =
        SupportBot()``) and calls one of those methods once (``await bot.ask(q)``), and nothing else of the module
        uses the class. None otherwise."""
        m, f = self.m, self.p.facts
        if not self.hands_sample_on():
            return None
        runners = set(f.loads) & (m.runner_classes | m.helpers | set(m.imported_classes) | set(m.imported_helpers))
        if runners != {cls} or not called_once(self.d.stmts, cls):
            return None
        if not set(m.users(cls, skip=[m.classes[cls]])) <= set(self.d.indices):
            return None
        objects = list(objects_of(f, {cls}))
        if len(objects) != 1:
            return None
        called = [(method.name.value, call_sites(self.d.stmts, f"{objects[0]}.{method.name.value}"))
                  for method in methods if method.name.value != "__init__"]
        called = [(name, sites) for name, sites in called if sites[0]]
        if len(called) != 1 or called[0][1] != (1, False):
            return None  # several of its runs, or one in a loop: not once per rollout
        return called[0][0]

    def plan_nested_generators(self) -> None:
        """A generator the driver defines and runs its agent in (``async def generate(): async for e in
        agent.stream_async(q): yield e["data"]``, or over a streamed run's events, ``result.stream_events()``; then
        ``return StreamingResponse(generate())``) runs the agent only while it is iterated: as for a generator helper
        (:meth:`consume_generator`), run() consumes it."""
        f = self.p.facts
        streams = {name for name, assigns in f.stores.items() if any(self.holds_run(a) for a in assigns)}
        for stmt in self.d.stmts:
            if isinstance(stmt, cst.FunctionDef) and yield_lines(block_statements(stmt.body)) and (
                    any(r.nested == stmt.name.value for r in f.runs)
                    or streams & {n.value for n in names_in(stmt.body)}):  # `async for e in result.stream_events()`
                self.consume_generator(stmt.name.value, stmt)

    def consume_generator(self, name: str, func: cst.FunctionDef) -> None:
        """A generator helper runs its agent only while it is iterated. Handed to a response
        (`return StreamingResponse(gen(q))`), a client would iterate it: run() does (`async for _ in gen(q): pass`);
        called any other way without iterating it, its agent would never run."""
        loose, handed = generator_uses(self.d.stmts, name)
        if loose != len(handed):
            self.problem(f"it calls the generator `{name}()` without iterating it: its agent would never run")
            return
        for line, call in handed:
            self.p.consume[id(line)] = (call, func.asynchronous is not None)
        if handed:
            self.p.notes.append(f"the stream of `{name}()` is consumed in run() (no client iterates it there)")

    def own_agent_tools(self) -> set[str]:
        """Functions the driver hands to an agent as tools (never calls itself) whose bodies run agents of their own,
        when each Osmosis agent is a sample source (Strands) and the target keeps one sample per rollout (0.3): the
        sample is the driver's last run that runs once per rollout (:meth:`choose_sample`), never a run inside a tool,
        which runs whenever an agent calls it (any number of times per rollout, or not at all); a second Osmosis
        agent would be a second sample source, so the tool stays as it is and its agent plain (not trained)."""
        if not (self.target.startswith("0.3") and self.fw.agent_is_sample_source):
            return set()
        candidates = (set(self.m.helpers) | set(self.m.imported_helpers)) & set(self.p.facts.loads)
        for dep in self.p.deps:
            candidates |= set(self.m.counts[self.m.agents[dep]]) & (self.m.helpers | set(self.m.imported_helpers))
        called = {name for name in candidates for stmt in self.d.stmts if calls_of(stmt, name)}
        return candidates - called

    def plan_class(self, name: str) -> None:
        """A class whose methods build agents on ``self`` and run them (``self.agent(q)``, ``Runner.run(planner,
        …)``): every method that builds or runs an agent is planned as a helper (fresh sessions, placeholder
        models, ``self.model`` resolved to where ``__init__`` sets it)."""
        cls = self.m.body[self.m.classes[name]]
        assert isinstance(cls, cst.ClassDef)
        methods = [m for m in block_statements(cls.body) if isinstance(m, cst.FunctionDef)]
        self_agents: set[str] = set()
        self_values: dict[str, list[cst.BaseExpression]] = {}
        for method in methods:
            for target, value in self_assignments(method):
                self_values.setdefault(target, []).append(value)
                if isinstance(value, cst.Call) and self.fw.is_agent_ctor(value):
                    self_agents.add(target)
        shared_assigns: dict[int, cst.BaseExpression] = {}
        plans: list[Plan] = []
        methods = [method for method in methods
                   if self.fw.has_run_site(method.body, set(self.m.agents) | self_agents, self.producers())
                   or builds_agent(method, self.fw)]
        sample_method = self.sample_method_name(name, methods)
        for method in methods:
            driver = Driver("helper", f"{name}.{method.name.value}", [self.m.classes[name]],
                            list(block_statements(method.body)), method)
            plan = DriverPlanner(self.m, self.fw, driver, self.target, self_agents=frozenset(self_agents),
                                 self_values=self_values, sample_helper=method.name.value == sample_method).run()
            plan.model_assigns = shared_assigns if not plan.model_assigns else {**plan.model_assigns}
            shared_assigns.update(plan.model_assigns)
            plan.model_assigns = shared_assigns
            plans.append(plan)
            for problem in plan.problems:
                self.problem(f"it uses `{name}`, whose method `{method.name.value}` cannot be migrated: {problem}")
        self.p.class_plans[name] = plans

    def run_factory(self) -> Plan:
        """A function that builds and returns an agent: only its constructors (and their models) are planned."""
        facts = body_facts(self.d.stmts, self.fw, set())
        self.p = Plan(driver=self.d, facts=facts)
        self.local_agents = {c.var for c in facts.ctors if c.var}
        self.entry.kind = ""
        self.plan_models()
        for c in facts.ctors:
            name_arg = next((a for a in c.call.args if a.keyword is not None and a.keyword.value == "name"), None)
            if c.in_loop and name_arg is not None:
                self.problem(f"`{self.d.name}` builds agents named `{code(name_arg.value)}` in a loop")
        return self.p

    def initial_agent_names(self) -> set[str]:
        used: set[str] = set()
        if self.d.kind == "helper" and self.d.func is not None and "." in self.d.name:  # a method: its own names
            used = {n.value for n in names_in(self.d.func.body)}
        else:
            for i in self.d.indices:
                used |= set(self.m.counts[i])
        return used & set(self.m.agents)

    def agent_deps(self, names: set[str]) -> set[str]:
        """Module-level agents reachable from ``names`` through other module agents' arguments (handoffs,
        ``as_tool``, a Swarm's members)."""
        return module_agent_deps(self.m, names)

    # -- who calls it, and what it is
    def check_callers(self) -> None:
        d, m, p = self.d, self.m, self.p
        if d.kind != "function":
            p.mode = "inplace"
            return
        if d.lifted is not None:
            p.mode = "beside"  # the class stays for its importers; the workflow runs one call of its entry method
            p.notes.append(d.lifted.note)
            return
        func = d.func
        assert func is not None
        index = d.indices[0]
        others: list[str] = []
        callers: list[int] = []
        for j in m.users(d.name, skip=[index]):
            stmt = m.body[j]
            if is_main_guard(stmt) or (
                not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and not is_import_stmt(stmt)
                and calls_only(stmt, d.name)
            ):
                callers.append(j)
            else:
                others.append(describe_stmt(stmt))
        decorators = [code(dec.decorator) for dec in func.decorators]
        if decorators and self.fw.is_tool_decorator(func):
            # the program calls its tool itself (find_drivers): the tool stays a tool for the agents that use it,
            # the workflow goes beside it, and the `__main__` block that called it serves the workflow
            p.mode = "beside"
            p.notes.append(f"`{d.name}` kept as the tool @{decorators[0]}")
            p.callers = callers
            return
        if decorators:
            others.append(f"the decorator @{decorators[0]}")
        if m.external.get(d.name):
            others.extend(m.external[d.name])
        if is_handler(func):
            others.append("the Lambda runtime (a `handler(event, context)`)")
        if not callers and not others and not d.name.startswith("_") and m.main_guard is None:
            # called by nothing here, in a module with no entry point: a library function other modules may
            # import — it stays callable, the workflow goes beside it
            others.append("its importers (a public function of a module without a `__main__` block)")
        if others:
            p.mode = "beside"
            p.notes.append(f"`{d.name}` kept for {', '.join(dict.fromkeys(others))}")
        else:
            p.callers = callers

    def check_structure(self) -> None:
        d, f = self.d, self.p.facts
        if f.yields:
            self.plan_yields()
        if d.func is not None:
            params = d.func.params
            if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
                star = [x.name.value for x in (params.star_arg, params.star_kwarg) if isinstance(x, cst.Param)]
                if any(f.load_count(s) for s in star):
                    self.problem(f"`{d.name}` reads `*{star[0]}`: a rollout only supplies the prompt")
        if "ctx" in f.loads or "ctx" in f.stores:
            if self.d.kind != "workflow":
                self.problem(f"`{d.name}` already uses a name `ctx` (run() receives the rollout context as `ctx`)")
        if "self" in f.loads and self.d.kind != "workflow":
            self.problem(f"`{d.name}` uses `self`")

    def plan_yields(self) -> None:
        """A generator (a streaming handler: `async for event in agent.stream_async(q): yield event`): its
        `yield x` lines stream to a client a rollout does not have, so run() drops them and only consumes the
        stream. A yield that is not a line of its own, or a line that also runs or awaits something, is refused."""
        d, f, p = self.d, self.p.facts, self.p
        if d.kind == "helper":
            return  # a generator helper keeps its yields: the driver that calls it iterates it (plan_helpers)
        lines = yield_lines(d.stmts)
        runs = {id(r.stmt) for r in f.runs}
        if len(lines) != len(f.yields) or any(id(s) in runs or _awaits(s) for s in lines):
            self.problem(f"`{d.name}` is a generator whose yields cannot simply go (a yield inside an expression, or "
                         "one that also runs or awaits something)")
            return
        p.drop.update(id(s) for s in lines)
        p.notes.append(f"`{d.name}` streamed its output (yield): run() consumes the stream")

    # -- agents
    def resolve_agents(self) -> None:
        """Every run must run an agent the migration builds: a local or module-level agent, an alias of one, the
        agent a previous run ended with (``result.last_agent``), or one from a factory of this module."""
        f = self.p.facts
        known = set(self.local_agents)
        # agents a previous migration built as the Osmosis class are agents too (already migrated)
        known |= {name for name, assigns in f.stores.items() if any(
            isinstance(a.value, cst.Call) and (self.fw.is_osmosis_agent_ctor(a.value) or self.fw.is_group_ctor(a.value))
            for a in assigns)}
        # aliases: `agent = triage_agent`, `agent = result.last_agent`, `agent = create_agent()`
        changed = True
        while changed:
            changed = False
            for name, assigns in f.stores.items():
                if name in known or not assigns:
                    continue
                ok = True
                for a in assigns:
                    v = a.value.expression if isinstance(a.value, cst.Await) else a.value  # an async factory
                    if isinstance(v, cst.Name) and v.value in known:
                        continue
                    if isinstance(v, cst.Attribute) and v.attr.value in ("last_agent", "current_agent"):
                        continue
                    if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in self.m.functions:
                        fac = self.factory(v.func.value)
                        if fac is not None:
                            self.use_factory(v.func.value)
                            continue
                    ok = False
                    break
                if ok:
                    known.add(name)
                    changed = True
        self.local_agents = known
        for run in f.runs:
            if self.already_migrated(run):
                continue
            if run.agent is None:
                what = code(run.shape.agent)
                if isinstance(run.shape.agent, cst.Attribute) and code(run.shape.agent.value) == "self":
                    self.problem(f"it runs `{what}`, an agent kept on an object")
                elif isinstance(run.shape.agent, cst.Call) and isinstance(run.shape.agent.func, cst.Name) \
                        and self.factory(run.shape.agent.func.value) is not None:
                    self.use_factory(run.shape.agent.func.value)
                    continue
                else:
                    self.problem(f"it runs `{what}`, which is not an agent built in this module")
            elif run.agent not in known:
                built = [a.value for a in f.stores.get(run.agent, ()) if isinstance(a.value, cst.Call)]
                if built:
                    cls = code(built[0].func)
                    self.problem(f"it runs `{run.agent}`, a `{cls}`: only agents built with the framework's Agent "
                                 "class are migrated")
                else:
                    self.problem(f"it runs `{run.agent}`, which is not an agent built in this module (a parameter "
                                 "or an object from elsewhere)")

    def producers(self) -> set[str]:
        """Top-level functions of the module that build and return an agent (factories)."""
        if self.m.factories is None:
            self.m.factories = {name for name in self.m.producers if self.factory(name) is not None}
        return self.m.factories

    def use_factory(self, name: str) -> None:
        """The driver runs agents from the factory ``name``: plan the factory too (its agents must be the Osmosis
        classes on the placeholder model when the workflow calls it)."""
        if name in self.p.factory_plans:
            return
        func = self.factory(name)
        assert func is not None
        driver = Driver("factory", name, [self.m.functions[name]], list(block_statements(func.body)), func)
        plan = DriverPlanner(self.m, self.fw, driver, self.target).run()
        self.p.factory_plans[name] = plan
        for problem in plan.problems:
            self.problem(f"its agent comes from `{name}()`, which cannot be migrated: {problem}")

    def factory(self, name: str) -> Optional[cst.FunctionDef]:
        """``name`` is a top-level function that builds and returns an agent without running one."""
        i = self.m.functions.get(name)
        if i is None:
            return None
        func = self.m.body[i]
        assert isinstance(func, cst.FunctionDef)
        if self.fw.has_run_site(func.body, set(self.m.agents)):
            return None
        builds = AgentCtorFinder(self.fw)
        fast_visit(func.body, builds)
        returns = returns_of(func.body)
        if not builds.found or not returns:
            return None
        return func

    # -- the program's input
    def choose_entry(self) -> None:
        f, p, d = self.p.facts, self.p, self.d
        self.entry = Entry()
        runs = [r for r in f.runs]
        if d.kind == "workflow":
            self.entry.kind, self.entry.expr = "expr", "ctx.prompt"
            return
        # 1. interactive reads / command line
        reads = [x for x in f.process if x.kind in ("input", "argv") and x.nested is None]
        read_vars: list[tuple[str, cst.CSTNode]] = []
        for x in reads:
            stmt = x.stmt
            var = assigned_name(stmt)
            if var is None or x.in_loop or any(r.stmt is stmt for r in f.runs):
                continue  # `result = await Runner.run(agent, input(...))` binds the run's result, not the input
            if len(f.stores.get(var, ())) == 1:
                read_vars.append((var, stmt))
        argparse_args = self.argparse_result()
        if len({v for v, _ in read_vars}) > 1:
            self.problem("it reads its input " + " and ".join(f"`{v}`" for v, _ in read_vars) +
                         " from the user: a rollout has one prompt")
            return
        in_run = [(x, r) for x in reads if not x.in_loop for r in f.runs
                  if r.stmt is x.stmt and (inp := self.input_of(r)) is not None and contains(inp, x.node)]
        if in_run and not read_vars and len(reads) == 1:
            # the read is the run's input itself (`Runner.run(agent, input("Q: ").strip())`): that input is the prompt
            x, run = in_run[0]
            self.entry.kind, self.entry.expr, self.entry.read_node = "expr", code(self.input_of(run), 400), x.node
            p.entry_desc = f"`{code(self.input_of(run), 40)}` (read with {x.what})"
            return
        if read_vars:
            self.entry.kind, self.entry.var = "var", read_vars[0][0]
            self.entry.read_stmt = read_vars[0][1]
            p.entry_desc = f"`{self.entry.var}` (read with {self.read_what(read_vars[0][1])})"
            return
        if argparse_args is not None:
            attrs = self.argparse_attrs(argparse_args)
            reaching = [a for a in attrs if self.reaches_input(f"{argparse_args}.{a}", expr=True)]
            if len(reaching) == 1:
                self.entry.kind, self.entry.expr = "expr", f"{argparse_args}.{reaching[0]}"
                p.entry_desc = f"the command-line argument `{self.entry.expr}`"
                return
            if len(reaching) > 1:
                self.problem("the command-line arguments " + ", ".join(f"`{argparse_args}.{a}`" for a in reaching)
                             + " all reach the agents' input: a rollout has one prompt")
                return
        # 2. parameters
        if d.func is not None:
            params = [x for x in (*d.func.params.posonly_params, *d.func.params.params, *d.func.params.kwonly_params)]
            reaching = [x for x in params if self.reaches_input(x.name.value)]
            if len(reaching) > 1:
                self.problem("its parameters " + " and ".join(f"`{x.name.value}`" for x in reaching)
                             + " all reach the agents' input: a rollout has one prompt")
                return
            if reaching:
                self.parameter_entry(reaching[0].name.value)
                return
        # 3. the literal prompt of the first run
        for run in sorted(runs, key=lambda r: r.order):
            inp = self.input_of(run)
            if inp is None:
                continue
            if run.in_loop or run.nested:
                break
            stores = f.stores.get(inp.value, ()) if isinstance(inp, cst.Name) else ()
            if len(stores) == 1 and stores[0].simple and is_string(stores[0].value) and not stores[0].in_loop \
                    and not stores[0].nested and f.load_count(inp.value) > 1:
                # `query = "…"` also logged or printed: the variable takes the prompt's text, for every reader
                self.entry.kind, self.entry.var, self.entry.read_stmt = "var", inp.value, stores[0].stmt
                p.entry_desc = f"the prompt `{code(stores[0].value, 40)}` of the first run (`{inp.value}`)"
                return
            if is_string(inp) or (isinstance(inp, cst.Name) and self.string_constant(inp.value)):
                self.entry.kind, self.entry.site = "literal", run
                p.entry_desc = f"the prompt `{code(inp, 40)}` of the first run"
                return
            break
        if not runs:
            # it runs agents only through a helper or an object: the literal it hands them is the program's input
            indirect = self.indirect_inputs()
            if indirect and (is_string(indirect[0]) or (isinstance(indirect[0], cst.Name)
                                                        and self.string_constant(indirect[0].value))):
                self.entry.kind = "indirect"
                p.text_nodes.add(id(indirect[0]))
                p.prompt_text = True
                p.entry_desc = f"the prompt `{code(indirect[0], 40)}`"
                return
            if indirect:
                self.problem(f"it cannot tell which input is the program's own: it hands `{code(indirect[0], 50)}` "
                             "to the code that runs the agent")
            return
        first = next((r for r in sorted(runs, key=lambda r: r.order) if self.input_of(r) is not None), None)
        if first is None:
            if any(r.shape.method not in ("call",) or r.shape.input_arg is None for r in runs) and runs:
                # agents started without an input (Strands `agent()` on messages it was given)
                return
            return
        inp = self.input_of(first)
        assert inp is not None
        media = media_key(inp)
        if media:
            self.problem(
                f"the input of its first run holds an `{media}` part (`{code(inp, 50)}`): the rollout prompt "
                "(ctx.prompt) carries only the dataset's messages — put the media into the dataset or merge it "
                "with ctx.prompt by hand"
            )
        elif isinstance(inp, (cst.List, cst.Tuple)):
            self.problem(
                f"its first run starts from a literal conversation (`{code(inp, 50)}`): only the rollout prompt "
                "(ctx.prompt) can be the program's input — merge the extra turns into the dataset or by hand"
            )
        else:
            value = self.m.value_of(inp.value) if isinstance(inp, cst.Name) and inp.value not in f.stores else None
            where = f", set before it to `{code(value, 50)}`" if value is not None else ""
            self.problem(f"it cannot tell which input is the program's own: the first run's input is "
                         f"`{code(inp, 50)}`{where}")

    def plan_params(self) -> None:
        """Parameters other than the input: unused ones go, used ones keep their default (bound at the top of
        run()); a used parameter without a default is something a rollout cannot supply."""
        func, f, p = self.d.func, self.p.facts, self.p
        if func is None or self.d.kind == "workflow":
            return
        entry = self.entry.param
        for prm in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
            name = prm.name.value
            uses = f.load_count(name)
            if name == entry:
                if self.entry.kind == "expr":
                    accesses = sum(subexpr_codes(s).count(self.entry.expr) for s in self.d.stmts)
                    if uses > accesses:
                        self.problem(f"it reads `{name}` beyond its prompt (`{self.entry.expr}`): a rollout only "
                                     "supplies the prompt")
                continue
            if not uses:
                continue
            self.model_params.append(prm)  # decided with the models (plan_model_params): what the rollout binds

    def bind_param(self, prm: cst.Param) -> None:
        """A used parameter other than the input, that does more than configure the replaced model: bound at the
        top of run() to its default or to the constant its one caller passes; lines that only print it go; else
        the driver is refused (a rollout supplies only the prompt)."""
        name, p = prm.name.value, self.p
        if prm.default is not None:
            p.defaults.append((name, prm.default))
            return
        value = self.caller_value(prm)
        if value is not None:
            p.defaults.append((name, value))
            p.notes.append(f"`{name}` = `{code(value, 30)}` as its caller passed it")
        elif self.only_printed(name):
            p.notes.append(f"`{name}` was only printed: those lines go (a rollout supplies only the prompt)")
        else:
            self.problem(f"its parameter `{name}` is used but has no default: a rollout only supplies the prompt")

    def only_printed(self, name: str) -> bool:
        """Every read of ``name`` is in a line that only prints or logs (``print("context:", context)``, a
        handler's runtime context): those lines are dropped from run()."""
        lines = statements_reading(self.d.stmts, name)
        if not lines or not all(is_output_stmt(s) for s in lines):
            return False
        if sum(1 for s in lines for n in names_in(s) if n.value == name) != self.p.facts.load_count(name):
            return False  # also read elsewhere (a compound statement's header…)
        self.p.drop.update(id(s) for s in lines)
        return True

    def caller_value(self, prm: cst.Param) -> Optional[cst.BaseExpression]:
        """The constant the one caller in this module (the ``__main__`` block, a module-level call) passes for
        ``prm`` — a literal, or a command-line option's default — else None."""
        func = self.d.func
        assert func is not None
        params = [x.name.value for x in (*func.params.posonly_params, *func.params.params)]
        calls: list[tuple[cst.Call, int]] = []
        for j in self.m.users(self.d.name, skip=self.d.indices):
            for call in calls_of(self.m.body[j], self.d.name):
                calls.append((call, j))
        if len(calls) != 1:
            return None
        call, j = calls[0]
        name = prm.name.value
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
        if arg is None and name in params:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            index = params.index(name)
            arg = positional[index].value if index < len(positional) else None
        if arg is None:
            return None
        if isinstance(arg, (cst.Integer, cst.Float)) or is_string(arg) or (
            isinstance(arg, cst.Name) and arg.value in ("True", "False", "None")
        ):
            return arg
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name):
            block = self.m.body[j]
            stmts = list(block_statements(block.body)) if isinstance(block, cst.If) else [block]
            value = argparse_defaults(stmts).get(arg.attr.value)
            if value is not None:
                return value
        return None

    def read_what(self, stmt: cst.CSTNode) -> str:
        for x in self.p.facts.process:
            if x.stmt is stmt:
                return x.what
        return "input()"

    def argparse_result(self) -> Optional[str]:
        for x in self.p.facts.process:
            if x.kind == "argparse" and code(x.node).endswith(("parse_args()", "parse_args(argv)")) or (
                x.kind == "argparse" and isinstance(x.node, cst.Call) and isinstance(x.node.func, cst.Attribute)
                and x.node.func.attr.value in ("parse_args", "parse_known_args")
            ):
                var = assigned_name(x.stmt)
                if var is not None:
                    return var
        return None

    def argparse_attrs(self, var: str) -> list[str]:
        attrs: list[str] = []
        for stmt in self.d.stmts:
            for node in attributes_of(stmt, var):
                if node not in attrs:
                    attrs.append(node)
        return attrs

    def string_constant(self, name: str) -> bool:
        stores = self.p.facts.stores.get(name)
        if stores:
            # one literal, or literals rebound in turn (`prompt = "a"` … `prompt = "b"`: drafts, the last one runs)
            return all(a.value is not None and is_string(a.value) and not a.in_loop for a in stores)
        return name in self.m.strings and self.m.bindings.get(name) == 1

    def input_of(self, run: RunSite) -> Optional[cst.BaseExpression]:
        return run.shape.input_arg.value if run.shape.input_arg is not None else None

    def deps_of(self, expr: cst.CSTNode, seen: Optional[set[str]] = None) -> set[str]:
        """Names ``expr`` depends on, through the block's assignments (transitively) — but not through the result
        of a run: what an agent answered is the agent's output, not the program's input."""
        seen = set() if seen is None else seen
        out: set[str] = set()
        for n in names_in(expr):
            if n.value in seen:
                continue
            seen.add(n.value)
            out.add(n.value)
            for a in self.p.facts.stores.get(n.value, ()):
                if a.value is not None and not self.holds_run(a):
                    out |= self.deps_of(a.value, seen)
            for arg in self.nested_param_args(n.value):
                out |= self.deps_of(arg, seen)
        return out

    def holds_run(self, a) -> bool:
        """The assignment stores (something computed from) a run's result: ``r = await Runner.run(...)``,
        ``r = await drain(r, verbose)``, ``state = r.to_state()`` where ``r`` held a run."""
        cache = self._holds_run
        key = id(a)
        if key in cache:
            return cache[key]
        cache[key] = False
        value = a.value
        result = any(contains(value, r.call) for r in self.p.facts.runs) if value is not None else False
        if not result and value is not None:
            for n in names_in(value):
                if any(self.holds_run(b) for b in self.p.facts.stores.get(n.value, ()) if b is not a):
                    result = True
                    break
        cache[key] = result
        return result

    def nested_param_args(self, name: str) -> list[cst.BaseExpression]:
        """When ``name`` is a parameter of a function defined in the block (``async def ask(prompt)``), the
        arguments the block passes for it (``ask(question)`` → ``question``): data flows through the call."""
        out: list[cst.BaseExpression] = []
        for fname, func in self.p.facts.nested_defs.items():
            params = [x.name.value for x in func.params.params]
            if name not in params:
                continue
            index = params.index(name)
            for stmt in self.d.stmts:
                for call in calls_of(stmt, fname):
                    positional = [a for a in call.args if a.keyword is None and not a.star]
                    if index < len(positional):
                        out.append(positional[index].value)
                    out.extend(a.value for a in call.args if a.keyword is not None and a.keyword.value == name)
        return out

    def indirect_inputs(self) -> list[cst.BaseExpression]:
        """First arguments of the calls that run agents through a helper or an object of a runner class
        (``assistant.suggest("eggs")``, ``await ResearchManager().run(query)``, ``await check(text)``), in order."""
        m = self.m
        if not m.helpers and not m.runner_classes:
            return []
        if self._indirect is not None:
            return self._indirect
        objects = {name for name, assigns in self.p.facts.stores.items()
                   if any(isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name)
                          and a.value.func.value in m.runner_classes for a in assigns)}
        out: list[cst.BaseExpression] = []
        for stmt in self.d.stmts:
            fast_visit(stmt, IndirectInputs(m, objects, out))
        self._indirect = out
        return out

    def reaches_input(self, name: str, expr: bool = False) -> bool:
        inputs = [self.input_of(r) for r in self.p.facts.runs] + self.indirect_inputs()
        for inp in inputs:
            if inp is None:
                continue
            if expr:
                if name in subexpr_codes(inp) or any(
                    name in subexpr_codes(a.value)
                    for dep in self.deps_of(inp) for a in self.p.facts.stores.get(dep, ()) if a.value is not None
                ):
                    return True
            elif name in self.deps_of(inp):
                return True
        return False

    def handler_access(self, param: str) -> Optional[str]:
        """``event.get("prompt")`` / ``event["prompt"]`` / ``body.message`` when every use of ``param`` that
        reaches an input is that one access — in the input, or as the value of an assignment the input reads
        (``prompt = event.get("prompt", "")``, also with ``.strip()`` and the like around it) — (a handler argument
        carrying the prompt), else None. An access whose result is computed on before it reaches the input
        (``body = json.loads(event["body"])``) is a problem: which part of it is the prompt cannot be told."""
        accesses: set[str] = set()
        for inp in [self.input_of(r) for r in self.p.facts.runs] + self.indirect_inputs():
            if inp is None:
                continue
            for n in names_in(inp):
                if n.value == param:
                    parent = access_around(inp, n)
                    if parent is None:
                        return None
                    accesses.add(code(parent, 200))
            for dep in self.deps_of(inp):
                for a in self.p.facts.stores.get(dep, ()):
                    if a.value is None or self.holds_run(a):
                        continue
                    for n in names_in(a.value):
                        if n.value != param:
                            continue
                        parent = access_around(a.value, n)
                        if parent is None:
                            return None  # the parameter itself is passed on: it is the text
                        if not text_of(a.value, parent):
                            self.problem(f"the agents' input comes from `{param}` through `{code(a.value, 80)}`: which "
                                         "part of that is the rollout's prompt cannot be told")
                            return None
                        accesses.add(code(parent, 200))
        if len(accesses) != 1:
            return None
        return accesses.pop()

    def parameter_entry(self, name: str) -> None:
        """The entry when the parameter ``name`` is what reaches the agents' input: a field of its JSON body, an
        access of it (``event.get("prompt")``), or the parameter itself."""
        p = self.p
        self.entry.param = name
        field = self.json_body_field(name)
        if field is not None:  # `body = json.loads(event["body"])`, then `text = body.get("text", "")`
            what, read, decode = field
            if read is None:  # the field read in the input itself: `agent(body["question"])`
                self.entry.kind, self.entry.expr = "expr", what
            else:
                self.entry.kind, self.entry.var, self.entry.read_stmt = "var", what, read
            p.drop.add(id(decode))
            p.entry_desc = f"`{what}` (a field of the JSON body of `{name}`)"
            return
        access = self.handler_access(name)
        if access is not None:
            self.entry.kind, self.entry.expr = "expr", access
            p.entry_desc = f"`{access}`"
        else:
            self.entry.kind, self.entry.var = "var", name
            p.entry_desc = f"the parameter `{name}`"

    def json_body_field(self, param: str) -> Optional[tuple[str, Optional[cst.CSTNode], cst.CSTNode]]:
        """A handler that decodes its argument's JSON body and reads one text field of it — ``body =
        json.loads(event["body"])`` then ``text = body.get("text", "")`` (``.strip()`` and the like around it), or
        ``agent(body["question"])`` — when that is all it does with them: ``(text, its statement, the decoding
        statement)``, or ``('body["question"]', None, the decoding statement)`` for a field read in the input. The
        field is the program's input (the rollout prompt's text takes its place); the decoding goes. None for any
        other shape."""
        f = self.p.facts
        if f.load_count(param) != 1:
            return None
        for body, stores in f.stores.items():
            if len(stores) != 1 or not stores[0].simple or not isinstance(stores[0].value, cst.Call):
                continue
            decode = stores[0].value
            if (self.m.table.resolve(decode.func) or code(decode.func)) != "json.loads" or len(decode.args) != 1 \
                    or not any(n.value == param for n in names_in(decode.args[0].value)):
                continue
            if f.load_count(body) != 1:
                return None  # other fields of the body are read too: the rollout has only the prompt
            inputs = [inp for inp in [self.input_of(r) for r in f.runs] + self.indirect_inputs() if inp is not None]
            for inp in inputs:
                for n in names_in(inp):
                    if n.value == body:
                        access = access_around(inp, n)
                        if access is None or access is n:
                            return None
                        return code(access, 200), None, stores[0].stmt
            for var, fields in f.stores.items():
                if len(fields) != 1 or not fields[0].simple or fields[0].value is None:
                    continue
                uses = [n for n in names_in(fields[0].value) if n.value == body]
                if len(uses) != 1:
                    continue
                access = access_around(fields[0].value, uses[0])
                if access is None or not text_of(fields[0].value, access) \
                        or not any(var in self.deps_of(inp) or (isinstance(inp, cst.Name) and inp.value == var)
                                   for inp in inputs):
                    return None
                return var, fields[0].stmt, stores[0].stmt
            return None
        return None

    # -- each run's input
    def classify_inputs(self) -> None:
        f, p = self.p.facts, self.p
        other_uses = False
        for run in f.runs:
            inp = self.input_of(run)
            if inp is None:
                run.input_kind = KEEP
                continue
            if self.entry.kind == "literal":
                run.input_kind = ENTRY if run is self.entry.site else KEEP
                if run is self.entry.site and isinstance(inp, cst.Name) and f.load_count(inp.value) == 1:
                    # `prompt = "…"` statements that only fed this input: the prompt replaces them
                    p.drop.update(id(a.stmt) for a in f.stores.get(inp.value, ()) if a.simple)
            elif self.entry.kind == "var":
                var = self.entry.var
                reassigned = len(f.stores.get(var, ())) > (1 if self.d.func is None or var != self.entry.param else 0)
                if isinstance(inp, cst.Name) and inp.value == var and not reassigned:
                    run.input_kind = ENTRY
                elif var in self.deps_of(inp):
                    run.input_kind = TEMPLATE
                else:
                    run.input_kind = KEEP
            elif self.entry.kind == "expr":
                text = code(inp, 400)
                if text == self.entry.expr:
                    run.input_kind = ENTRY
                elif self.entry.expr in subexpr_codes(inp):
                    run.input_kind = TEMPLATE
                else:
                    run.input_kind = KEEP
            else:
                run.input_kind = KEEP
            if run.input_kind == ENTRY and (run.in_loop or run.nested):
                # the prompt fed again and again: a REPL or a batch over inputs, not one rollout
                run.input_kind = TEMPLATE
        # what needs the prompt's text
        if self.entry.kind == "var":
            var = self.entry.var
            entry_loads = sum(1 for r in f.runs if r.input_kind == ENTRY)
            if f.load_count(var) > entry_loads:
                p.prompt_text = True
                if self.entry.read_stmt is not None:
                    p.bind_at = self.entry.read_stmt
                else:
                    p.bind = var
            elif self.entry.read_stmt is not None:
                p.drop.add(id(self.entry.read_stmt))
            other_uses = f.load_count(var) > entry_loads
        elif self.entry.kind == "expr" and self.entry.expr != "ctx.prompt":
            if any(r.input_kind == TEMPLATE for r in f.runs) or self.expr_used_elsewhere():
                p.subst = self.entry.expr
                p.prompt_text = True
        del other_uses

    def plan_helper_answers(self, name: str) -> bool:
        """Plan the module function ``name`` to give its confirmations' declared answers (``Plan.helper_answers``)
        and say True — when it asks only for confirmations that declare one (``default=``) and only this driver
        calls it; else plan nothing and say False."""
        asks = interactive_calls(self.m, self.fw, name)
        if not asks or any(x.kind != "confirm" or x.default is None for x in asks):
            return False
        if not set(self.m.users(name, skip=[self.m.functions[name]])) <= set(self.d.indices):
            return False
        self.p.helper_answers[name] = [(x.node, x.default) for x in asks
                                       if isinstance(x.node, cst.Call) and x.default is not None]
        return True

    def expr_used_elsewhere(self) -> bool:
        count = 0
        for stmt in self.d.stmts:
            count += subexpr_codes(stmt).count(self.entry.expr)
        used_in_entry = sum(1 for r in self.p.facts.runs if r.input_kind == ENTRY)
        return count > used_in_entry

    # -- interactive and process-level code
    def plan_process_code(self) -> None:
        f, p = self.p.facts, self.p
        argparse_var = self.argparse_result()
        allowed_argparse = argparse_var is not None and self.entry.kind == "expr" and (self.entry.expr or "").startswith(argparse_var + ".")
        for x in f.process:
            if x.kind in ("input", "argv") and (self.entry.read_stmt is x.stmt or self.entry.read_node is x.node):
                continue
            if x.kind == "argparse" and allowed_argparse:
                continue
            if x.kind in ("input", "confirm") and isinstance(x.node, cst.Call) and isinstance(x.node.func, cst.Name) \
                    and x.node.func.value in self.m.functions:
                continue  # the module's own function, named like a prompt: what it does is checked below
            where = f" in `{x.nested}`" if x.nested else ""
            if x.kind == "input":
                if x.in_loop and any(r.in_loop for r in f.runs):
                    self.problem(f"it reads {x.what} in a loop{where} (an interactive REPL): a rollout is one "
                                 "conversation from ctx.prompt — write run() for one turn by hand")
                else:
                    self.problem(f"it asks the user ({x.what}{where}) beyond its one input")
            elif x.kind == "confirm" and x.default is not None:
                p.answers[id(x.node)] = x.default  # the program's own answer for when no one is there
                p.notes.append(f"{x.what} → its declared default `{code(x.default)}` (a rollout has no one to ask)")
            elif x.kind == "confirm":
                self.problem(f"it asks a human to confirm ({x.what}{where}): a rollout has no one to ask")
            elif x.kind == "exit":
                self.problem(f"it ends the process ({x.what}{where}), which would stop the rollout server")
            elif x.kind == "sleep" and x.nested is None and isinstance(x.node, cst.Call) \
                    and is_expr_stmt_of(x.stmt, x.node):
                p.sleeps.add(id(x.node))  # a pause: `await asyncio.sleep(s)` pauses run() without blocking the server
            elif x.kind == "sleep":
                self.problem(f"it calls {x.what}{where}, which would block the rollout server's event loop")
            elif x.kind == "server":
                self.problem(f"it starts a server or UI ({x.what}{where})")
            elif x.kind == "argparse":
                self.problem(f"it parses the command line ({x.what}){'' if argparse_var is None else ' beyond the one input'}")
            elif x.kind == "argv":
                self.problem(f"it reads `sys.argv`{where} beyond its one input")
        if allowed_argparse:
            assert argparse_var is not None
            uses = [a for a in self.argparse_attrs(argparse_var) if f"{argparse_var}.{a}" != self.entry.expr]
            self.argparse_other = uses
            # dropped if every other use is a model setting the placeholder replaces (checked in plan_models)
        for call, stmt, zero in f.exits:
            if zero and is_expr_stmt_of(stmt, call):
                p.exits.add(id(call))
            elif zero:
                self.problem(f"it ends the process inside an expression (`{code(stmt, 40)}`)")
        # functions of the module it calls that are interactive themselves (`approved = ask_approval(item)`)
        for name in sorted(set(f.loads) & set(self.m.functions) - {self.d.name}):
            what = interactive_function(self.m, self.fw, name)
            if what and not self.plan_helper_answers(name):
                self.problem(f"it calls `{name}()`, which {what}")
        # `while True` around a run without a way out but `break`: a loop the rollout would repeat forever
        for run in f.runs:
            if run.in_loop == "while True" and not any(x.kind == "input" for x in f.process):
                pass

    # -- models
    def plan_models(self) -> None:
        f, p = self.p.facts, self.p
        for call, resolved in f.foreign:
            self.problem(f"it builds `{resolved.rsplit('.', 1)[-1]}(...)`, an agent class the migration does not "
                         "handle: its model would stay the fixed one")
        dropped: list[cst.CSTNode] = []
        ctors = list(f.ctors)
        # module-level agents built in run(): their constructors too
        self.dep_ctors = []
        for name in p.deps:
            value = assigned_value(self.m.body[self.m.agents[name]])
            if isinstance(value, cst.Call) and name not in self.m.groups:
                self.dep_ctors.append((name, value))
        built = [*((c.call, c.nested, c.var, c.stmt) for c in ctors), *((v, None, n, None) for n, v in self.dep_ctors)]
        for ctor_call, where, var, stmt in built:
            if self.fw.agent_is_sample_source and not self.is_sample_agent(var):
                # one sample per rollout: this agent stays the framework's own, on the rollout's model when its
                # model can be carried, else on its own (not trained either way)
                name = var or code(ctor_call.func)
                plain = self.fw.plan_plain_model(ctor_call, self)
                at = stmt if stmt is not None else self.m.body[self.m.agents[var]]
                p.notes_at[id(at)] = (self.fw.codes.agent_left.code, self.plain_agent_reason(name, plain is not None))
                if plain is None:
                    p.plain_agents[id(ctor_call)] = (name, ctor_call)
                else:
                    p.ctors[id(ctor_call)] = plain
                continue
            plan, reason, gone = self.fw.plan_model(ctor_call, self, where)
            if reason:
                self.problem(reason)
                continue
            p.ctors[id(ctor_call)] = plan
            dropped.extend(gone)
        # command-line arguments other than the input: fine if they only fed what the placeholder replaces, else
        # the rollout runs with the option's default (as the program does when the option is not given)
        defaults = argparse_defaults(self.d.stmts)
        for attr in self.argparse_other or []:
            var = self.argparse_result()
            uses_ok = all(any(contains(g, n) for g in dropped) for n in attribute_nodes(self.d.stmts, var, attr))
            if uses_ok:
                continue
            if attr in defaults and defaults[attr] is not None:
                p.subst_map[f"{var}.{attr}"] = defaults[attr]
                p.notes.append(f"`{var}.{attr}` → its default")
            else:
                self.problem(f"it reads the command-line argument `{var}.{attr}`, which has no default: a rollout "
                             "only supplies the prompt")
        p.replaced = dropped
        self.plan_model_params(dropped)
        if self.argparse_other is not None and not [x for x in self.p.problems if "command-line" in x]:
            for x in f.process:
                if x.kind == "argparse" or (x.kind == "argv" and False):
                    p.drop.add(id(x.top if x.top is x.stmt else x.stmt))
            # `parser.add_argument(...)` statements and the parser itself go with parse_args()
            var = self.argparse_result()
            for stmt in self.d.stmts:
                if is_parser_stmt(stmt, var):
                    p.drop.add(id(stmt))

    def plan_model_params(self, dropped: list[cst.CSTNode]) -> None:
        """The parameters other than the input (:meth:`plan_params`). One that only configures the model the
        placeholder replaces (``LitellmModel(model=model, api_key=api_key)``) needs no value in a rollout, and the
        guards that only end the driver early on such parameters (``if not api_key: print(...); return``) go with
        it: they check a model the rollout no longer uses — kept, with the parameter bound to its default or its
        caller's value (often unset: an environment variable), they would end every rollout doing nothing. Every
        other parameter is bound as :meth:`bind_param` says."""
        names = {prm.name.value for prm in self.model_params}
        guards = [s for s in self.d.stmts if _early_exit_guard(s)
                  and {n.value for n in names_in(s.test)} & names
                  and {n.value for n in names_in(s.test)} <= names | _BUILTIN_NAMES]
        tests = [g.test for g in guards]
        model_only: set[str] = set()
        for name in names:
            uses = [n for s in self.d.stmts for n in names_in(s) if n.value == name]
            if any(contains(g, n) for g in dropped for n in uses) \
                    and all(any(contains(g, n) for g in [*dropped, *tests]) for n in uses):
                model_only.add(name)
        # a guard goes only when every parameter it tests goes; then its parameters need no value either
        kept_guards = [g for g in guards if not {n.value for n in names_in(g.test)} & names <= model_only]
        for g in kept_guards:
            model_only -= {n.value for n in names_in(g.test)}
        for prm in self.model_params:
            name = prm.name.value
            if name in model_only:
                self.p.notes.append(f"`{name}` only configured the model the rollout's placeholder replaces")
            else:
                self.bind_param(prm)
        for g in guards:
            if g not in kept_guards:
                self.p.drop.add(id(g))
                self.p.notes.append(f"the guard `if {code(g.test, 40)}` on the replaced model's settings went")

    def resolve_attr(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """What ``self.x`` holds when one method of the class sets it once (``self.model = LiteLLMModel(...)``)."""
        values = self.self_values
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            found = values.get(f"self.{expr.attr.value}", [])
            if len(found) == 1:
                return found[0]
        return None

    def resolve_local(self, name: str) -> Optional[tuple[str, cst.BaseExpression, object]]:
        """What a name used as a model holds: ("local", value, assign) / ("module", value, index) /
        ("param", default or None, param) / None."""
        stores = self.p.facts.stores.get(name)
        if stores:
            if len(stores) == 1 and stores[0].simple and stores[0].value is not None and not stores[0].in_loop:
                return "local", stores[0].value, stores[0]
            return None
        if self.d.func is not None:
            for prm in (*self.d.func.params.params, *self.d.func.params.kwonly_params, *self.d.func.params.posonly_params):
                if prm.name.value == name:
                    return "param", prm.default, prm
        value = self.m.value_of(name)
        if value is not None:
            return "module", value, self.m.models.get(name)
        return None

    # -- runs and sessions
    def plan_runs(self) -> None:
        f, p = self.p.facts, self.p
        for run in f.runs:
            if self.already_migrated(run):
                continue
            rp = RunPlan()
            if run.in_lambda:
                self.problem(f"it runs `{run.agent or code(run.shape.agent)}` inside a lambda")
                continue
            if run.in_loop == "comprehension":
                self.problem(f"it runs `{run.agent or code(run.shape.agent)}` in a comprehension "
                             f"(`{code(run.stmt, 50)}`): give each run its own sample by hand")
                continue
            if run.input_kind == ENTRY and not self.fw.takes_prompt_already(run):
                rp.input = "prompt"
            elif run.input_kind == TEMPLATE and p.subst:
                rp.input = "sub"
            problem = self.fw.plan_run(run, rp, self)
            if problem:
                self.problem(problem)
                continue
            p.runs[id(run.call)] = rp
        if p.prompt_text or any(r.input == "text" for r in p.runs.values()):
            p.prompt_text = True

    def already_migrated(self, run: RunSite) -> bool:
        """A run that already passes an ``OsmosisMemorySession`` (written by a previous migration or by hand)."""
        sess = run.shape.session
        if isinstance(sess, cst.Call):
            return code(sess.func).endswith("OsmosisMemorySession")
        if isinstance(sess, cst.Name):
            for a in self.p.facts.stores.get(sess.value, ()):
                if isinstance(a.value, cst.Call) and code(a.value.func).endswith("OsmosisMemorySession"):
                    return True
        return False

    def plan_samples(self) -> None:
        problem = self.fw.plan_samples(self)
        if problem:
            self.problem(problem)


class _SyncAgentCalls(cst.CSTVisitor):
    """The calls not awaited (``awaited``: ids of awaited expressions met so far) of a sync helper or of a sync method
    of a runner class (through ``objects``: variable → its class), added to ``p.thread_calls``; nested functions and
    lambdas are not entered."""

    def __init__(self, m: ModuleModel, p: Plan, objects: dict[str, str], awaited: set[int]) -> None:
        super().__init__()
        self.m = m
        self.p = p
        self.objects = objects
        self.awaited = awaited

    def visit_Await(self, n: cst.Await) -> None:
        self.awaited.add(id(n.expression))

    def visit_Call(self, n: cst.Call) -> None:
        m, p = self.m, self.p
        f = n.func
        if id(n) in self.awaited:
            return
        if isinstance(f, cst.Name) and f.value in m.helpers and f.value in m.functions:
            func = m.body[m.functions[f.value]]
            if isinstance(func, cst.FunctionDef) and func.asynchronous is None:
                p.thread_calls.add(id(n))
        elif isinstance(f, cst.Attribute):
            owner = f.value
            cls_name = self.objects.get(owner.value) if isinstance(owner, cst.Name) else (
                owner.func.value if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name)
                and owner.func.value in m.runner_classes else None)
            if cls_name and _is_sync_method(m, cls_name, f.attr.value):
                p.thread_calls.add(id(n))

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False


def _is_sync_method(m: ModuleModel, cls_name: str, method: str) -> bool:
    """``method`` of the module's class ``cls_name`` is a plain (not async) def."""
    if cls_name not in m.classes:
        return False  # imported: its rollout version is what runs (awaited as written)
    cls = m.body[m.classes[cls_name]]
    for stmt in block_statements(cls.body):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method:
            return stmt.asynchronous is None
    return False


def plan_driver(model: ModuleModel, fw: "Framework", driver: Driver, target: str = DEFAULT_TARGET) -> Plan:
    """The plan for one driver (see the module docstring); ``plan.problems`` lists why it cannot be migrated."""
    return DriverPlanner(model, fw, driver, target).run()


_BUILTIN_NAMES = {"None", "True", "False", "len", "str", "bool"}


def _early_exit_guard(stmt: cst.CSTNode) -> bool:
    """``if <test>: <prints/logs>; return`` with no ``else``: a check that only ends the driver early."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return False
    body = block_statements(stmt.body)
    if not body or not all(is_output_stmt(s) for s in body[:-1]):
        return False
    last = body[-1]
    return isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 \
        and isinstance(last.body[0], cst.Return) and last.body[0].value is None


def objects_of(facts: BodyFacts, classes: set[str]) -> dict[str, str]:
    """Names the block binds to an object of one of ``classes`` (``bot = ChatBot()``) → that class."""
    out: dict[str, str] = {}
    for name, assigns in facts.stores.items():
        for a in assigns:
            if isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name) and a.value.func.value in classes:
                out[name] = a.value.func.value
    return out


def _awaits(node: cst.CSTNode) -> bool:
    """``node`` holds an ``await`` (outside nested functions)."""
    found: list[bool] = []

    class _Await(cst.CSTVisitor):
        def visit_Await(self, n: cst.Await) -> None:
            found.append(True)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    fast_visit(node, _Await())
    return bool(found)


def _holds_state(value: Optional[cst.BaseExpression]) -> bool:
    """A value that is an object of its own: a container display or an object built by a call (not a constant, not
    another name)."""
    return isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Call))
