"""Code the ``legacy-loop`` rule writes: the translated loop class and its grader (from a :class:`RewritePlan`), the
``loop_as_workflow`` line of a wrap, and the serving lines. The loop's own code is kept node for node; only the
places the plan lists change. Generated text is rendered in the module's own indent and newline.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Optional, Sequence

import libcst as cst

from codemods.base import ImportTable
from codemods.rules._legacy_loop_analysis import Use, _walk, body_statements, is_docstring, params_of, reads, src
from codemods.rules._legacy_loop_helpers import (  # noqa: F401 - re-exported: the imports rule (OM403) uses them
    LEGACY_HELPER_MODULES,
    AnnotationAware,
    LEGACY_HELPERS,
    inline_legacy_helpers,
)
from codemods.rules._legacy_loop_names import legacy_name
from codemods.rules._legacy_loop_plan import REQUEST_LIMITS, RewritePlan, snake, stem  # noqa: F401 - re-exported
from codemods.rules._legacy_loop_reward import RewardPlan
from codemods.visit import Transformer

LEGACY_MAX_CONCURRENT = 100  # legacy create_app default (settings.server.max_concurrent_rollouts)
_SLICE = "__osmosis_migrate_slice__"
_REWARD = "__osmosis_migrate_reward__"
#: legacy names in annotations of a rewritten class → what they become
ANNOTATIONS = {
    "RolloutContext": "AgentWorkflowContext", "RolloutRequest": "AgentWorkflowContext", "RolloutResult": "list[dict]",
    "CompletionsResult": "_ChatResult", "OpenAIFunctionToolSchema": "dict", "OpenAIFunctionSchema": "dict",
    "OpenAIFunctionParametersSchema": "dict", "OpenAIFunctionPropertySchema": "dict",
}


@functools.lru_cache(maxsize=256)
def _expr(text: str) -> cst.BaseExpression:
    """A parsed expression, once per text (libcst nodes are immutable: sharing them is safe; parsing is not cheap)."""
    return cst.parse_expression(text)


def _statement(text: str, module: cst.Module) -> cst.BaseStatement:
    return _parsed_statement(text, module.default_newline)


@functools.lru_cache(maxsize=256)
def _parsed_statement(text: str, newline: str) -> cst.BaseStatement:
    return cst.parse_statement(text + newline)


# --------------------------------------------------------------------------------------------- the loop class


def rewrite_class(
    plan: RewritePlan, module: cst.Module, table: ImportTable, names_of: Callable[[cst.CSTNode], frozenset[str]]
) -> cst.ClassDef:
    """The loop class of ``plan`` as an ``AgentWorkflow`` (same name, members, control flow; the legacy API
    translated). ``table``: the module's imports (legacy names in annotations, also as ``module.Name``);
    ``names_of``: the names a statement uses. Only the members that touch the legacy API are transformed (the
    others are kept as the very same nodes: a transform of the whole class cost more than the rest of the rule)."""
    cls = plan.facts.cls
    rewriter = _ClassRewriter(plan, module, table)
    if not isinstance(cls.body, cst.IndentedBlock):
        return cls.visit(rewriter)
    touched = {u.method for u in plan.facts.uses} | {"run", "__init__", "get_tools"}
    heads = {local for local, q in table.names.items() if legacy_name(q) in ANNOTATIONS}
    heads |= {local for local, q in table.modules.items() if q.startswith("osmosis_ai")}
    body = [m.visit(rewriter) if (isinstance(m, cst.FunctionDef) and m.name.value in touched) or names_of(m) & heads
            else m for m in cls.body.body]
    bases = [b.with_changes(value=cst.Name("AgentWorkflow")) if b is plan.facts.base else b for b in cls.bases]
    return cls.with_changes(bases=bases, body=rewriter.with_limits(cls.body.with_changes(body=body)))


class _ClassRewriter(AnnotationAware):
    """Applies a :class:`RewritePlan` to its class (see :func:`rewrite_class`)."""

    def __init__(self, plan: RewritePlan, module: cst.Module, table: ImportTable) -> None:
        super().__init__()
        self.plan, self.module, self.table = plan, module, table
        self.facts = plan.facts
        self.use: dict[int, Use] = {id(u.node): u for u in self.facts.uses}
        self.remove = plan.dropped | plan.reward.remove
        self.emptied: set[int] = set()  # ids of blocks this rewrite emptied (given `pass`)
        self.removed_loops: set[int] = set()  # ids of (original) for loops that went with their emptied body
        self.method_self: list[str] = []

    # -- scopes

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        names = params_of(node)
        self.method_self.append(names[0] if names else "self")
        return True

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self._annotation(original) or updated

    def _annotation(self, original: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """What a legacy name in an annotation becomes (``RolloutRequest``, ``rollout.RolloutResult`` …)."""
        if not self.in_annotation:
            return None
        qualified = self.table.resolve(original)
        name = legacy_name(qualified) if qualified is not None else None
        return _expr(ANNOTATIONS[name]) if name in ANNOTATIONS else None

    # -- the legacy API

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        use = self.use.get(id(original))
        if use is None:
            return self._annotation(original) or updated
        base = updated.value.value if use.on_request and isinstance(updated.value, cst.Attribute) else updated.value
        kind = use.kind
        if kind == "prompt":
            return cst.Attribute(value=base, attr=cst.Name("prompt"))
        if kind == "metadata":
            return cst.BooleanOperation(
                left=cst.Attribute(value=base, attr=cst.Name("metadata")), operator=cst.Or(), right=cst.Dict([]),
                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if kind in REQUEST_LIMITS:
            return cst.Attribute(value=cst.Name(self.method_self[-1]), attr=cst.Name(self.plan.attrs[kind]))
        if kind in ("rollout_id", "api_key"):
            return _expr(f"get_rollout_context().{kind}")
        if kind == "params":
            return cst.Dict([])
        if kind == "tools":
            return self._tools(use)
        if kind == "debug":
            return cst.Name("False")
        if kind == "request_arg":
            return updated.value
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        use = self.use.get(id(original))
        if use is None or use.kind != "chat":
            return updated
        drop = {id(u.node) for u in self.facts.uses_of("params_splat")}
        kept = [new for old, new in zip(original.args, updated.args) if id(old) not in drop]
        first = kept[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        tools = cst.Arg(self._tools(use))
        return updated.with_changes(func=cst.Name("_chat"), args=_relist([first, tools, *kept[1:]], updated.args))

    def _tools(self, use: Use) -> cst.BaseExpression:
        """This rollout's tools: run()'s local; in a method run() hands ctx to, ``self.get_tools(…)`` again."""
        if use.method == "run" and self.plan.tools_var is not None:
            return cst.Name(self.plan.tools_var)
        arg = self.facts.helpers.get(use.method, "None") if self.facts.reads_request else "None"
        return _expr(f"{self.method_self[-1]}.get_tools({arg})")

    def leave_Return(self, original: cst.Return, updated: cst.Return):  # type: ignore[override]
        use = self.use.get(id(original))
        if use is None or not isinstance(updated.value, cst.Call):
            return updated
        call = updated.value
        if use.kind == "error":
            message = next(a.value for a in call.args if a.keyword is None or a.keyword.value == "error_message")
            return cst.Raise(exc=cst.Call(cst.Name("RuntimeError"), [cst.Arg(message)]))
        exit_ = next(e for e in self.facts.exits if e.ret is original)
        messages = _arg(call, "final_messages", 0)
        reward = _arg(call, "reward", 2)
        if self.plan.reward.mode == "carry":
            args = [cst.Arg(messages)] + ([cst.Arg(reward, keyword=cst.Name("reward"), equal=_EQ)]
                                           if exit_.reward is not None and reward is not None else [])
            return updated.with_changes(value=cst.Call(cst.Name("_sample"), _relist(args, [])))
        if self.plan.target == "0.2":
            return updated.with_changes(value=cst.Call(cst.Name("_sample"), [cst.Arg(messages)]))
        return updated.with_changes(value=messages)

    # -- statements

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):  # type: ignore[override]
        if id(original) in self.remove:
            return cst.RemoveFromParent()
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        gone = self.remove | self.removed_loops
        if not any(id(s) in gone for s in original.body):
            return updated
        body, footer = self._carry_comments(original, updated, gone)
        if body and id(original.body[0]) in gone and not any(line.comment for line in body[0].leading_lines):
            # the block's first statement went: the next one does not start it with a blank line
            body[0] = body[0].with_changes(leading_lines=[])
        if body:
            return updated.with_changes(body=body, footer=[*footer, *updated.footer])
        block = updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])], footer=[*footer, *updated.footer])
        self.emptied.add(id(block))
        return block

    def _carry_comments(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock, gone: set[int]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """The block's statements, the comments above a dropped statement (``ctx.log_event``, …) kept with a note
        on the next one (or at the block's end): they described it. Moved reward code took its comments along."""
        kept = iter(updated.body)
        body: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        for stmt in original.body:
            if id(stmt) not in gone:
                new = next(kept)
                body.append(new.with_changes(leading_lines=[*pending, *new.leading_lines]) if pending else new)
                pending = []
            elif id(stmt) not in self.plan.reward.remove and any(line.comment for line in stmt.leading_lines):
                what = src(stmt.with_changes(leading_lines=[]), 40)
                note = f"# osmosis-migrate: `{what}` dropped (osmosis-ai 0.3 keeps no per-rollout metrics or debug log)"
                pending += [*stmt.leading_lines, cst.EmptyLine(comment=cst.Comment(note))]
        return body, pending

    def leave_For(self, original: cst.For, updated: cst.For):  # type: ignore[override]
        # a loop that only recorded metrics (`for _ in calls: ctx.record_tool_call(…)`) goes with them
        if id(updated.body) in self.emptied and updated.orelse is None and isinstance(updated.iter, (cst.Name, cst.Attribute)):
            self.removed_loops.add(id(original))
            return cst.RemoveFromParent()
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.method_self.pop()
        if original is self.facts.run:
            return self._run(updated)
        if original is self.facts.init:
            return _init_with_config(updated, self.module)
        return updated

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        if original is not self.facts.cls:
            return updated
        bases = [b.with_changes(value=cst.Name("AgentWorkflow")) if o is self.facts.base else b
                 for o, b in zip(original.bases, updated.bases)]
        return updated.with_changes(bases=bases, body=self.with_limits(updated.body))

    def _run(self, fn: cst.FunctionDef) -> cst.FunctionDef:
        plan = self.plan
        params = fn.params
        if len(params.params) > 1 and params.params[1].annotation is not None:
            ctx_param = params.params[1].with_changes(annotation=cst.Annotation(cst.Name("AgentWorkflowContext")))
            params = params.with_changes(params=[params.params[0], ctx_param, *params.params[2:]])
        returns = fn.returns
        if returns is not None:
            returns = cst.Annotation(_expr("AgentWorkflowOutput" if plan.reward.mode == "carry" and plan.target != "0.2"
                                           else "list[dict]"))
        fn = fn.with_changes(params=params, returns=returns)
        if plan.tools_var is None or not isinstance(fn.body, cst.IndentedBlock):
            return fn
        line = _statement(f"{plan.tools_var} = {self.facts.self_name}.get_tools({plan.tools_arg})  # this rollout's "
                          "tools (the legacy controller had them from init)", self.module)
        body = list(fn.body.body)
        body.insert(1 if body and is_docstring(body[0]) else 0, line)
        return fn.with_changes(body=fn.body.with_changes(body=body))

    def with_limits(self, block: cst.BaseSuite) -> cst.BaseSuite:
        """The class body with the attributes standing in for the request's limits, after ``name = …``."""
        if not self.plan.attrs or not isinstance(block, cst.IndentedBlock):
            return block
        stmts = [_statement(f"{attr} = {REQUEST_LIMITS[kind]}", self.module) for kind, attr in self.plan.attrs.items()]
        comment = "# the legacy controller set these per request (RolloutRequest defaults); a 0.3 request has none"
        stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), cst.EmptyLine(comment=cst.Comment(comment))])
        body = list(block.body)
        original = list(self.facts.cls.body.body) if isinstance(self.facts.cls.body, cst.IndentedBlock) else []
        name_at = next((i for i, s in enumerate(original) if self.facts.class_attrs.get("name") is s), None)
        at = (name_at + 1) if name_at is not None else (1 if body and is_docstring(body[0]) else 0)
        if at < len(body) and not body[at].leading_lines:  # a blank line between them and what follows
            body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        body[at:at] = stmts
        return block.with_changes(body=body)


_EQ = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _arg(call: cst.Call, name: str, position: int) -> Optional[cst.BaseExpression]:
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == name or a.keyword is None and i == position:
            return a.value
    return None


def _relist(args: Sequence[cst.Arg], template: Sequence[cst.Arg]) -> list[cst.Arg]:
    """``args`` with the separators of ``template`` (a call's original arguments): the first comma between them,
    and the last one's trailing comma."""
    commas = [a.comma for a in template if isinstance(a.comma, cst.Comma)]
    sep = commas[0] if commas and len(template) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    trailing = template[-1].comma if template else cst.MaybeSentinel.DEFAULT
    out = [a.with_changes(comma=sep) for a in args]
    if out:
        out[-1] = out[-1].with_changes(comma=trailing)
    return out


def _init_with_config(fn: cst.FunctionDef, module: cst.Module) -> cst.FunctionDef:
    """``__init__`` taking the workflow config LocalBackend passes (``config=None``: after the existing parameters,
    so every existing call keeps working) and handing it to ``AgentWorkflow.__init__``."""
    p = fn.params
    config = cst.Param(cst.Name("config"), default=cst.Name("None"), equal=_EQ)
    if isinstance(p.star_arg, (cst.Param, cst.ParamStar)) or p.kwonly_params:
        p = p.with_changes(kwonly_params=[*p.kwonly_params, config])
    else:
        p = p.with_changes(params=[*p.params, config])
    body = list(body_statements(fn))
    supers = [i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and _is_bare_super_init(s)]
    if supers:
        body[supers[0]] = _statement("super().__init__(config)", module).with_changes(
            leading_lines=body[supers[0]].leading_lines)
    else:
        at = 1 if body and is_docstring(body[0]) else 0
        body.insert(at, _statement("super().__init__(config)  # AgentWorkflow keeps the workflow config", module))
    if not isinstance(fn.body, cst.IndentedBlock):
        return fn.with_changes(params=p, body=cst.IndentedBlock(body=body))
    return fn.with_changes(params=p, body=fn.body.with_changes(body=body))


def _is_bare_super_init(line: cst.SimpleStatementLine) -> bool:
    small = line.body[0] if len(line.body) == 1 else None
    call = small.value if isinstance(small, cst.Expr) else None
    return (isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "__init__" and isinstance(call.func.value, cst.Call)
            and isinstance(call.func.value.func, cst.Name) and call.func.value.func.value == "super")


# --------------------------------------------------------------------------------------------- the grader


def grader_class(plan: RewritePlan, module: cst.Module) -> cst.ClassDef:
    """The ``Grader`` of ``plan``: the loop's reward code moved from run() (``grader``), the reward run() handed
    over in the sample's metrics (``carry``), or the documented starting rule (``none``)."""
    reward = plan.reward
    names = _grader_names(reward, plan.facts.ctx_name)
    lines = _grader_head(plan, names)
    stmts = cst.parse_module(_reindent("\n".join(lines) + "\n", module), config=module.config_for_parsing).body
    cls = stmts[0]
    assert isinstance(cls, cst.ClassDef)
    if reward.mode == "grader":
        cls = cls.visit(_FillSlice(reward, names))
    if reward.members:
        members = [m.with_changes(leading_lines=[cst.EmptyLine(indent=False), *(
            line for line in m.leading_lines if line.comment is not None)]) for m in reward.members]
        cls = cls.with_changes(body=cls.body.with_changes(body=[*cls.body.body, *members]))
    return cls


def _reindent(text: str, module: cst.Module) -> str:
    ind = module.default_indent
    if ind != "    ":
        text = re.sub(r"^((?:    )+)", lambda m: ind * (len(m.group(1)) // 4), text, flags=re.M)
    return text.replace("\n", module.default_newline)


def _grader_names(reward: RewardPlan, ctx_name: Optional[str]) -> dict[str, str]:
    """Names of the grader's locals, fresh with respect to the code moved into it (whose reads of run()'s
    ``ctx_name`` all become the grader's own reads)."""
    used: set[str] = set()
    for node in [*(reward.statements or []), *([reward.expr] if reward.expr is not None else [])]:
        used |= reads(node) | {n.value for t in _walk(node) if isinstance(t, cst.AssignTarget)
                               for n in _walk(t.target) if isinstance(n, cst.Name)}
    used.discard(ctx_name or "")
    out: dict[str, str] = {}
    for role, first in (("ctx", "ctx"), ("metadata", "metadata"), ("sample", "sample"), ("sample_id", "sample_id")):
        name, n = first, 2
        while name in used:
            name, n = f"{first}_{n}", n + 1
        out[role] = name
        used.add(name)
    return out


def _grader_head(plan: RewritePlan, names: dict[str, str]) -> list[str]:
    """The grader's text, with placeholders where the moved code goes (see :class:`_FillSlice`)."""
    reward, ctx = plan.reward, names["ctx"]
    doc = {
        "grader": f"The reward {plan.name}.run() passed to ctx.complete(),\n    computed here from the rollout's "
                  "sample.",
        "carry": f"The reward {plan.name}.run() computed from state only it has ({', '.join(reward.state)}),\n"
                 "    handed over in the sample's metrics" + (
                     " (the exits that passed none: 1.0 when the dataset label is in\n    the final assistant answer)."
                     if reward.fallback else "."),
        "none": f"A starting point for {plan.name}'s reward (the legacy controller computed it):\n    1.0 when "
                "the dataset label is in the final assistant answer.",
    }[reward.mode]
    lines = [f"class {plan.grader}(Grader):", f'    """{doc} Written by osmosis-migrate."""', "",
             f"    async def grade(self, {ctx}: GraderContext) -> None:"]
    one = plan.target != "0.2"
    sample = f"{ctx}.sample" if one else names["sample"]
    ind = "        " if one else "            "
    if not one:
        lines.append(f"        for {names['sample_id']}, {names['sample']} in {ctx}.samples.items():")
    set_reward = (lambda value: f"{ind}{ctx}.set_reward({value})") if one else (
        lambda value: f"{ind}{ctx}.set_sample_reward({names['sample_id']}, {value})")
    if reward.mode == "carry" and reward.fallback:  # OM393: exits that hand over no reward get the starting rule
        return [*lines, f'{ind}reward = {sample}.metrics.get("reward")',
                f"{ind}if reward is None:  # an exit of run() that passed no reward (OM393): the starting rule",
                f"{ind}    answer = _last_assistant_text({sample}.messages)",
                f"{ind}    reward = 1.0 if {ctx}.label and str({ctx}.label).strip() in answer else 0.0",
                set_reward("reward")]
    if reward.mode == "carry":
        return [*lines, set_reward(f'{sample}.metrics.get("reward")')]
    if reward.mode == "none":
        return [*lines, f"{ind}answer = _last_assistant_text({sample}.messages)",
                set_reward(f"1.0 if {ctx}.label and str({ctx}.label).strip() in answer else 0.0")]
    if reward.messages_var is not None:
        lines.append(f"{ind}{reward.messages_var} = list({sample}.messages)")
    if reward.metadata_nodes:
        md = names["metadata"]
        lines += [f"{ind}{md} = dict({ctx}.metadata or {{}})", f"{ind}if {ctx}.label is not None:",
                  f'{ind}    {md}.setdefault("ground_truth", {ctx}.label)  # where the legacy controller put the label']
    return [*lines, f"{ind}{_SLICE}", set_reward(_REWARD)]


class _FillSlice(Transformer):
    """Puts the moved reward code where the grader's placeholders are, its metadata reads rewritten."""

    def __init__(self, reward: RewardPlan, names: dict[str, str]) -> None:
        super().__init__()
        to_grader = _ToGrader(reward, names)
        self.statements = [s.visit(to_grader).with_changes(
            leading_lines=[line for line in s.leading_lines if line.comment is not None]) for s in reward.statements]
        assert reward.expr is not None
        self.expr = reward.expr.visit(to_grader)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):  # type: ignore[override]
        small = updated.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and small.value.value == _SLICE:
            return cst.FlattenSentinel(self.statements) if self.statements else cst.RemoveFromParent()
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.expr if original.value == _REWARD else updated


class _ToGrader(Transformer):
    """Moved reward code as the grader reads it: the dataset label from ``ctx.label``, the request metadata from the
    rebuilt dict."""

    def __init__(self, reward: RewardPlan, names: dict[str, str]) -> None:
        super().__init__()
        self.reward, self.names = reward, names

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        key = id(original)
        ctx = self.names["ctx"]
        if key in self.reward.label_nodes:
            default = self.reward.label_nodes[key]
            label = _expr(f"{ctx}.label")
            if default is None:
                return label
            return cst.IfExp(test=_expr(f"{ctx}.label is not None"), body=label, orelse=default,
                             lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if key in self.reward.metadata_nodes:
            return cst.Name(self.names["metadata"])
        return updated


# --------------------------------------------------------------------------------------------- serving lines


def wrap_statement(class_name: str, loop_expr: str, module: cst.Module) -> cst.SimpleStatementLine:
    base = stem(class_name)
    stmt = cst.parse_statement(
        f"{base}Workflow, {base}Grader = loop_as_workflow({loop_expr}){module.default_newline}",
        config=module.config_for_parsing,
    )
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def backend_statement(
    backend_var: str, workflow: str, config_expr: str, module: cst.Module, grader: Optional[str]
) -> cst.SimpleStatementLine:
    """``<backend_var> = LocalBackend(workflow=…, workflow_config=…, grader=…)`` (one argument per line)."""
    ind, nl = module.default_indent, module.default_newline
    grader_line = f"{ind}grader={grader},{nl}" if grader else ""
    text = (
        f"{backend_var} = LocalBackend({nl}{ind}workflow={workflow},{nl}{ind}workflow_config={config_expr},{nl}"
        f"{grader_line}){nl}"
    )
    stmt = cst.parse_statement(text, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def server_call(backend_var: str, api_key: Optional[cst.BaseExpression] = None) -> cst.Call:
    """``create_rollout_server(backend=<backend_var>)``, with ``api_key=<api_key>`` (the expression ``create_app``
    was given) when there is one to keep."""
    expr = cst.parse_expression(f"create_rollout_server(backend={backend_var})")
    assert isinstance(expr, cst.Call)
    if api_key is None:
        return expr
    no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return expr.with_changes(args=[*expr.args, cst.Arg(value=api_key, keyword=cst.Name("api_key"), equal=no_space)])
