"""Each rule as a libcst codemod command, for ``python -m libcst.tool codemod commands.<Command> PATH``
(configured by ``.libcst.codemod.yaml`` at the repository root: ``modules: ['codemods']``).

Example: ``python -m libcst.tool codemod --no-format commands.StrandsAgentCommand examples/``.
The ``osmosis-migrate`` CLI is the better tool (prefilter, all rules in one pass, reports, safety checks); these
wrappers exist for teams that already drive their refactors through libcst.tool.
"""

from __future__ import annotations

import argparse
from typing import ClassVar

import libcst as cst
from libcst.codemod import Codemod, CodemodContext, SkipFile

from codemods.base import Rule, RuleContext, dedupe_header_todos, file_opted_out


class _RuleCommand(Codemod):
    RULE: ClassVar[type[Rule]]
    DESCRIPTION: ClassVar[str] = ""

    def __init__(self, context: CodemodContext, strategy: str = "auto") -> None:
        super().__init__(context)
        self.strategy = strategy

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--strategy", choices=("auto", "rewrite", "wrap"), default="auto")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        code = tree.code
        if file_opted_out(code) or not self.RULE.wants(code):
            raise SkipFile("no target for this rule")
        ctx = RuleContext(strategy=self.strategy, filename=self.context.filename or "<string>", module=tree)
        new = dedupe_header_todos(self.RULE().transform(tree, ctx))
        for todo in ctx.todos:
            self.warn(f"{todo.code} line {todo.line}: {todo.reason}")
        return new


# libcst.tool lists CodemodCommand subclasses; it accepts any Codemod with DESCRIPTION/add_args, so subclass
# CodemodCommand for discovery while keeping our own transform (no automatic import visitors: rules manage them).
from libcst.codemod import CodemodCommand  # noqa: E402


class _Command(_RuleCommand, CodemodCommand):
    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        return _RuleCommand.transform_module_impl(self, tree)

    def transform_module(self, tree: cst.Module) -> cst.Module:  # skip CodemodCommand's import visitors
        return Codemod.transform_module(self, tree)


def _make(rule: type[Rule], class_name: str, base: type = _Command) -> type:
    return type(class_name, (base,), {"RULE": rule, "DESCRIPTION": f"{rule.code} {rule.name}: {rule.summary}"})


from codemods.rules.imports import ImportsRule  # noqa: E402
from codemods.rules.openai_agent import OpenAIAgentRule  # noqa: E402
from codemods.rules.strands_agent import StrandsAgentRule  # noqa: E402

StrandsAgentCommand = _make(StrandsAgentRule, "StrandsAgentCommand")
OpenAIAgentCommand = _make(OpenAIAgentRule, "OpenAIAgentCommand")
ImportsCommand = _make(ImportsRule, "ImportsCommand")

try:
    from codemods.rules.legacy_loop import LegacyLoopRule  # noqa: E402

    LegacyLoopCommand = _make(LegacyLoopRule, "LegacyLoopCommand")
except ModuleNotFoundError as exc:  # the legacy-loop rule lands separately
    if exc.name != "codemods.rules.legacy_loop":
        raise

del _Command  # only the concrete per-rule commands are listed by `libcst.tool list`
