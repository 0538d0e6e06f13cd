"""Arithmetic found in a prompt, as an ordered chain of binary operations.

``"Compute (2 + 3) * 4"`` becomes ``[Op("+", 2, 3), Op("*", Ref(0), 4)]``: evaluation order of the
usual precedence rules, left to right, each operand either a number or the result of an earlier step.
:class:`~osmosis_compat.testing.policy.ScriptedPolicy` performs one step per model turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

__all__ = ["Op", "Ref", "Operand", "find_chain", "format_number", "apply_op", "render_operand"]

#: Unicode spellings users type for the four operators.
_OPERATOR_ALIASES = {"×": "*", "÷": "/", "−": "-"}
#: "3 x 4" means multiplication only between numbers/parentheses.
_TIMES_X = re.compile(r"(?<=[\d)])\s*x\s*(?=[\d(])")
_CANDIDATE = re.compile(r"[-(]*\d[\d\s.+\-*/()]*")
_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+|[-+*/()])")


@dataclass(frozen=True)
class Ref:
    """The result of step ``index`` of the chain (0-based)."""

    index: int


Operand = Union[float, int, Ref]


@dataclass(frozen=True)
class Op:
    """One binary operation ``left <operator> right``; ``operator`` is one of ``+ - * /``."""

    operator: str
    left: Operand
    right: Operand


def format_number(value: float | int) -> str:
    """Format a number the way the policy writes it: integral values without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() else value


def apply_op(operator: str, left: float | int, right: float | int) -> float | int:
    """Compute ``left <operator> right``; integral results are returned as ``int``.

    Raises ``ZeroDivisionError`` for a division by zero and ``ValueError`` for an unknown operator.
    """
    if operator == "+":
        result = left + right
    elif operator == "-":
        result = left - right
    elif operator == "*":
        result = left * right
    elif operator == "/":
        result = left / right
    else:
        raise ValueError(f"unknown operator {operator!r}")
    if isinstance(result, float) and result.is_integer():
        return int(result)
    return result


def render_operand(operand: Operand, results: list[float | int]) -> str:
    """Text of an operand, resolving :class:`Ref` against the already known ``results``."""
    if isinstance(operand, Ref):
        return format_number(results[operand.index])
    return format_number(operand)


class _Parser:
    """Recursive descent over ``+ - * / ( )`` and numbers, emitting ops in evaluation order."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.ops: list[Op] = []

    def parse(self) -> Operand:
        value = self.expression()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected token {self.tokens[self.pos]!r}")
        return value

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end of expression")
        self.pos += 1
        return token

    def emit(self, operator: str, left: Operand, right: Operand) -> Ref:
        self.ops.append(Op(operator, left, right))
        return Ref(len(self.ops) - 1)

    def expression(self) -> Operand:
        value = self.term()
        while self.peek() in ("+", "-"):
            operator = self.take()
            value = self.emit(operator, value, self.term())
        return value

    def term(self) -> Operand:
        value = self.factor()
        while self.peek() in ("*", "/"):
            operator = self.take()
            value = self.emit(operator, value, self.factor())
        return value

    def factor(self) -> Operand:
        token = self.take()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise ValueError("missing ')'")
            return value
        if token == "-" and self.peek() not in (None, "(", "-"):
            # A signed literal such as "-3"; negating a sub-expression is not supported.
            return -_number(self.take())
        if token in "+-*/()":
            raise ValueError(f"unexpected {token!r}")
        return _number(token)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"cannot read {text[pos:]!r}")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def _trim(candidate: str) -> str:
    """Drop trailing operators/dots and unbalanced parentheses left by sentence punctuation."""
    text = candidate.strip()
    while True:
        before = text
        text = text.rstrip(" .+-*/(")
        if text.count(")") > text.count("(") and text.endswith(")"):
            text = text[:-1]
        if text.count("(") > text.count(")") and text.startswith("("):
            text = text[1:]
        text = text.strip()
        if text == before:
            return text


def find_chain(text: str) -> list[Op] | None:
    """Return the chain of operations of the first arithmetic expression in ``text``, or ``None``.

    An expression needs at least one binary operator (``"What is 5?"`` has none). Operator spellings
    ``× ÷ −`` and ``x`` between numbers are accepted.
    """
    for alias, operator in _OPERATOR_ALIASES.items():
        text = text.replace(alias, operator)
    text = _TIMES_X.sub(" * ", text)
    for match in _CANDIDATE.finditer(text):
        candidate = _trim(match.group(0))
        try:
            parser = _Parser(_tokenize(candidate))
            parser.parse()
        except ValueError:
            continue
        if parser.ops:
            return parser.ops
    return None
