"""The plan of one legacy loop's rewrite (the ``legacy-loop`` rule): from the facts of the class and the reward
plan, what the emitter writes — names, helpers, what is left out and why — or why the loop is not rewritten.

Every TODO text the rule writes for a loop comes from here (or from the reward plan), so the report, ``--diff``
and the markers say the same thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods import codes

from codemods.rules._legacy_loop_analysis import LoopFacts, _walk, parents_of, src
from codemods.rules._legacy_loop_helpers import LOOP_HELPERS
from codemods.rules._legacy_loop_reward import RewardPlan, label_read, plan_reward

#: the class attributes standing in for the legacy request's limits, with the RolloutRequest defaults (spec
#: legacy-protocol.md §1.2.1): the 0.3 request carries neither
REQUEST_LIMITS = {"max_turns": 10, "max_tokens_total": 8192}


@dataclass
class Refusal:
    """The loop is not rewritten; ``reason`` is the precise one (the OM390 TODO text is built from it)."""

    reason: str


@dataclass
class RewritePlan:
    """What the emitter writes for one loop (see the module docstring)."""

    facts: LoopFacts
    reward: RewardPlan
    target: str  # "0.2" | "0.3"
    grader: str  # the generated Grader's class name
    tools_var: Optional[str]  # run()'s local holding this rollout's tools (None: run() needs none)
    tools_arg: str  # what run() hands get_tools(): the workflow context when get_tools reads its request
    attrs: dict[str, str]  # "max_turns" / "max_tokens_total" → the class attribute standing in for it
    dropped: set[int]  # ids of run()'s statements dropped (ctx.record_tool_call / ctx.log_event)
    helpers: list[str]  # keys of LOOP_HELPERS the rewrite needs
    notes: list[str] = field(default_factory=list)  # what was left out, for the edit message
    serve_note: Optional[str] = None  # OM397: how to serve a workflow whose __init__ takes arguments
    reward_todo: Optional[tuple[str, str]] = None  # (code, text) on the grader: OM393 / OM394

    @property
    def name(self) -> str:
        return self.facts.name


def stem(class_name: str) -> str:
    """``CalculatorAgentLoop`` → ``CalculatorAgent``: the prefix of the names the rule adds."""
    return class_name[:-4] if class_name.endswith("Loop") and len(class_name) > 4 else class_name


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def grader_name(class_name: str, taken: set[str]) -> Optional[str]:
    """The name of the generated grader: ``<stem>Grader``, else ``<Class>Grader``; None when both are taken."""
    for candidate in (f"{stem(class_name)}Grader", f"{class_name}Grader"):
        if candidate not in taken:
            return candidate
    return None


def plan_rewrite(
    facts: LoopFacts, *, target: str, module_names: set[str], taken: set[str], served: bool
) -> RewritePlan | Refusal:
    """The rewrite of the loop ``facts`` for ``target`` (``module_names``: names bound at module level, read by the
    reward plan; ``taken``: names the rule must not add; ``served``: the module serves the loop through create_app),
    or a :class:`Refusal` naming what has no osmosis-ai 0.3 translation."""
    if facts.problems:
        return Refusal("; ".join(facts.problems[:2]))
    dropped = {id(u.node) for u in facts.uses_of("drop")}
    reward = plan_reward(facts, module_names, dropped)
    if reward.refusal is not None:
        return Refusal(reward.refusal)
    label = _label_left_in_workflow(facts, reward, dropped)
    if label is not None:
        return Refusal(label)
    grader = grader_name(facts.name, taken)
    if grader is None:
        return Refusal(f"the names {stem(facts.name)}Grader and {facts.name}Grader the rewrite would add are taken")
    helpers = _helpers(facts, reward, target)
    clash = sorted(n for h in helpers for n in LOOP_HELPERS[h] if n in taken)
    if clash:
        return Refusal(f"the name {clash[0]} the rewrite would add is already used in this module")
    plan = RewritePlan(
        facts=facts, reward=reward, target=target, grader=grader, tools_var=_tools_var(facts),
        tools_arg=facts.ctx_name if facts.reads_request and facts.ctx_name else "None",
        attrs=_limit_attrs(facts), dropped=dropped, helpers=helpers,
    )
    plan.notes = _notes(facts)
    if facts.init_params and not served:
        plan.serve_note = serve_note(facts, grader)
    if reward.note is not None:
        plan.reward_todo = (codes.LEGACY_REWARD_MIXED.code, reward.note)
    elif reward.mode == "none":
        plan.reward_todo = (codes.LEGACY_NO_REWARD.code, NO_REWARD)
    return plan


NO_REWARD = (
    "the legacy loop passed no reward to ctx.complete(): the legacy controller computed it, and osmosis-ai 0.3 "
    "needs a Grader. This one is a starting point — 1.0 when the dataset label (ctx.label) is in the final "
    "assistant answer, else 0.0: replace it with the reward your platform computed"
)


def serve_note(facts: LoopFacts, grader: str) -> str:
    """The OM397 text: how to serve a workflow whose ``__init__`` takes arguments (LocalBackend builds it as
    ``cls(config)``)."""
    args = "".join(f", <{n}>" for n in facts.init_required)
    needs = f"needs {', '.join(facts.init_required)}" if facts.init_required else "takes arguments"
    return (f"LocalBackend builds a workflow per rollout as {facts.name}(config), but {facts.name}.__init__ {needs}: "
            f"serve it as LocalBackend(workflow=_bound_workflow({facts.name}{args}), grader={grader}, …) "
            "with the arguments it is to be built with")


def _helpers(facts: LoopFacts, reward: RewardPlan, target: str) -> list[str]:
    out: list[str] = []
    if facts.uses_of("chat"):
        out.append("_chat")
    if target == "0.2" or reward.mode == "carry":
        out.append("_sample")
    if reward.mode == "none" or reward.fallback:
        out.append("_last_assistant_text")
    if facts.init_params:
        out.append("_bound_workflow")
    return out


def _tools_var(facts: LoopFacts) -> Optional[str]:
    """A fresh local of run() for this rollout's tools, when run() calls the model or reads ctx.tools."""
    if not any(u.method == "run" for u in facts.uses_of("chat", "tools")):
        return None
    assert facts.run is not None
    names = {n.value for n in _walk(facts.run) if isinstance(n, cst.Name)}
    for candidate in ("tools", "rollout_tools", "legacy_tools"):
        if candidate not in names:
            return candidate
    n = 2
    while f"tools_{n}" in names:
        n += 1
    return f"tools_{n}"


def _limit_attrs(facts: LoopFacts) -> dict[str, str]:
    taken = set(facts.methods) | set(facts.class_attrs) | facts.instance_attrs
    out: dict[str, str] = {}
    for kind in REQUEST_LIMITS:
        if facts.uses_of(kind):
            out[kind] = kind if kind not in taken else f"request_{kind}"
    return out


def _notes(facts: LoopFacts) -> list[str]:
    notes: list[str] = []
    if facts.uses_of("params_splat"):
        notes.append("**ctx.request.completion_params (osmosis-ai 0.3's controller applies the sampling settings)")
    if facts.uses_of("params"):
        notes.append("ctx.request.completion_params → {} (the 0.3 request carries none)")
    if any(_passes(e.call, "finish_reason", 1) for e in facts.exits):
        notes.append("finish_reason (the 0.3 result has no such field)")
    if facts.uses_of("drop"):
        notes.append("ctx.record_tool_call() / ctx.log_event() (0.3 keeps no per-rollout metrics or debug file)")
    if facts.uses_of("error"):
        notes.append("ctx.error(msg) → raise RuntimeError(msg) (a failed rollout)")
    if facts.uses_of("debug"):
        notes.append("ctx.debug_enabled → False")
    return notes


def _passes(call: cst.Call, name: str, position: int) -> bool:
    return any(a.keyword is not None and a.keyword.value == name for a in call.args) or (
        len(call.args) > position and call.args[position].keyword is None)


def _label_left_in_workflow(facts: LoopFacts, reward: RewardPlan, dropped: set[int]) -> Optional[str]:
    """Why the workflow would read the dataset label itself (0.3 hands it to the grader only), else None."""
    gone = dropped | reward.remove
    if reward.mode == "grader":
        gone |= {id(e.call) for e in facts.exits}
    for use in facts.uses_of("metadata"):
        method = facts.methods.get(use.method)
        if method is None:
            continue
        parent = parents_of(method)
        if label_read(use.node, parent) is None or _under(use.node, gone, parent):
            continue
        where = "run()" if use.method == "run" else f"{use.method}()"
        return (f"{where} reads the dataset label (`{src(parent.get(id(use.node)) or use.node, 50)}`) while the "
                "workflow runs: osmosis-ai 0.3 hands the label to the grader only")
    return None


def _under(node: cst.CSTNode, ids: set[int], parent: dict[int, cst.CSTNode]) -> bool:
    p: Optional[cst.CSTNode] = node
    while p is not None:
        if id(p) in ids:
            return True
        p = parent.get(id(p))
    return False
