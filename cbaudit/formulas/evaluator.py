"""A small, safe evaluator for the registry's plain-text formulas (no `eval`).

Grammar (lowest to highest precedence): `or`, `and`, `not`, comparisons (`< <= > >= = == !=`,
also `≤ ≥ ≠`, chained as in Python), `+ -`, `* /`, unary minus, `^` (right-associative),
then primaries: numbers, names, function calls, `( ... )` and `| ... |` (absolute value).

Names follow the registry's plain-text conventions: `K_used`, subscripts in parentheses
right after an underscore (`s_(m+1)`, `sum_(r in I)`), brackets right after a name
(`c_start[r,n]`), and an unknown name written with arguments (`W_f(t1,t2)`, `p_base(r)`) is
one symbol bound as a whole. A number directly followed by a name multiplies (`2U`).

Functions: ceil, floor, min, max, sum, abs, ln, log2, sqrt. Names starting with `sum_`,
`max_` or `min_` are aggregates over a list (`sum_r G_r`, `max_r(G_r)`, `min_(i in A)c_i`);
written without parentheses they apply to the next operand. Names may be bound to lists;
arithmetic on lists is element-wise (a scalar broadcasts). Arithmetic is exact
(`fractions.Fraction`) except ln, log2 and irrational square roots, which give floats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

Value = Union[Fraction, float, bool, list["Value"]]  # noqa: UP007 - recursive alias


class EvalError(Exception):
    """The expression cannot be parsed or evaluated; the message says why."""


FUNCTIONS = frozenset({"ceil", "floor", "min", "max", "sum", "abs", "ln", "log2", "sqrt"})
_AGGREGATE = re.compile(r"^(sum|max|min)_")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = (
    "<=",
    ">=",
    "==",
    "!=",
    "**",
    "≤",
    "≥",
    "≠",
    "<",
    ">",
    "=",
    "+",
    "-",
    "*",
    "/",
    "^",
    "(",
    ")",
    ",",
    "|",
)
_COMPARE = {"<", "<=", ">", ">=", "=", "==", "!=", "≤", "≥", "≠"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "num", "name", "op", "end"
    text: str
    pos: int


def _balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    raise EvalError(f"unbalanced {open_ch!r} at position {start}")


def is_function(name: str) -> bool:
    return name in FUNCTIONS or bool(_AGGREGATE.match(name))


def tokenize(text: str) -> list[Token]:
    """Split a plain-text formula into tokens (see the module docstring for name rules)."""
    out: list[Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        m = _NUMBER.match(text, i)
        if m:
            out.append(Token("num", m.group(), i))
            i = m.end()
            if i < len(text) and (text[i].isalpha() or text[i] == "_"):
                out.append(Token("op", "*", i))  # 2U means 2*U
            continue
        m = _WORD.match(text, i)
        if m:
            j = m.end()
            while j < len(text):
                if text[j] == "(" and text[j - 1] == "_":
                    j = _balanced(text, j, "(", ")")
                elif text[j] == "[":
                    j = _balanced(text, j, "[", "]")
                else:
                    break
            name = text[i:j]
            if j < len(text) and text[j] == "(" and not is_function(name):
                j = _balanced(text, j, "(", ")")  # W_f(t1,t2): one symbol
                name = text[i:j]
            out.append(Token("name", name, i))
            i = j
            continue
        for op in _OPS:
            if text.startswith(op, i):
                out.append(Token("op", "^" if op == "**" else op, i))
                i += len(op)
                break
        else:
            raise EvalError(f"unexpected character {ch!r} at position {i}")
    out.append(Token("end", "", len(text)))
    return out


Node = tuple[object, ...]


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.abs_depth = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.text != text or tok.kind == "name":
            raise EvalError(f"expected {text!r} at position {tok.pos}, found {tok.text!r}")

    def parse(self) -> Node:
        node = self.parse_or()
        tok = self.peek()
        if tok.kind != "end":
            raise EvalError(f"unexpected {tok.text!r} at position {tok.pos}")
        return node

    def parse_or(self) -> Node:
        node = self.parse_and()
        while self.peek().kind == "name" and self.peek().text == "or":
            self.take()
            node = ("or", node, self.parse_and())
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while self.peek().kind == "name" and self.peek().text == "and":
            self.take()
            node = ("and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        if self.peek().kind == "name" and self.peek().text == "not":
            self.take()
            return ("not", self.parse_not())
        return self.parse_compare()

    def parse_compare(self) -> Node:
        first = self.parse_sum()
        ops: list[str] = []
        operands = [first]
        while self.peek().kind == "op" and self.peek().text in _COMPARE:
            ops.append(self.take().text)
            operands.append(self.parse_sum())
        if not ops:
            return first
        return ("cmp", tuple(ops), tuple(operands))

    def parse_sum(self) -> Node:
        node = self.parse_product()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.take().text
            node = (op, node, self.parse_product())
        return node

    def parse_product(self) -> Node:
        node = self.parse_unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/"):
            op = self.take().text
            node = (op, node, self.parse_unary())
        return node

    def parse_unary(self) -> Node:
        if self.peek().kind == "op" and self.peek().text in ("-", "+"):
            op = self.take().text
            operand = self.parse_unary()
            return ("neg", operand) if op == "-" else operand
        return self.parse_power()

    def parse_power(self) -> Node:
        base = self.parse_primary()
        if self.peek().kind == "op" and self.peek().text == "^":
            self.take()
            return ("^", base, self.parse_unary())
        return base

    def parse_primary(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            return ("num", Fraction(tok.text))
        if tok.kind == "op" and tok.text == "(":
            node = self.parse_or()
            self.expect(")")
            return node
        if tok.kind == "op" and tok.text == "|":
            node = self.parse_sum()
            self.expect("|")
            return ("call", "abs", (node,))
        if tok.kind == "name" and tok.text not in ("and", "or", "not"):
            if is_function(tok.text):
                if self.peek().kind == "op" and self.peek().text == "(":
                    self.take()
                    args = [self.parse_or()]
                    while self.peek().kind == "op" and self.peek().text == ",":
                        self.take()
                        args.append(self.parse_or())
                    self.expect(")")
                    return ("call", tok.text, tuple(args))
                if _AGGREGATE.match(tok.text):
                    return ("call", tok.text, (self.parse_power(),))
                raise EvalError(f"function {tok.text} needs parentheses at position {tok.pos}")
            return ("name", tok.text)
        raise EvalError(f"unexpected {tok.text or 'end of formula'!r} at position {tok.pos}")


def parse(text: str) -> Node:
    """Parse one expression into a tree of tuples."""
    return _Parser(tokenize(text)).parse()


def _num(v: Value, what: str) -> Fraction | float:
    if isinstance(v, (bool, list)):
        raise EvalError(f"{what} needs a number")
    return v


def _elementwise(a: Value, b: Value, fn: Callable[[Value, Value], Value]) -> Value:
    if isinstance(a, list) or isinstance(b, list):
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                raise EvalError(f"lists of different lengths ({len(a)} and {len(b)})")
            return [_elementwise(x, y, fn) for x, y in zip(a, b, strict=True)]
        if isinstance(a, list):
            return [_elementwise(x, b, fn) for x in a]
        assert isinstance(b, list)
        return [_elementwise(a, y, fn) for y in b]
    return fn(a, b)


def _arith(op: str) -> Callable[[Value, Value], Value]:
    def run(a: Value, b: Value) -> Value:
        x, y = _num(a, op), _num(b, op)
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op == "/":
            if y == 0:
                raise EvalError("division by zero")
            return x / y
        if isinstance(x, Fraction) and isinstance(y, Fraction) and y.denominator == 1:
            if x == 0 and y < 0:
                raise EvalError("division by zero")
            power: Fraction = x ** int(y)
            return power
        if x < 0:
            raise EvalError("a negative number to a fractional power")
        return math.pow(float(x), float(y))

    return run


def _flatten(args: Sequence[Value]) -> list[Fraction | float]:
    out: list[Fraction | float] = []
    for a in args:
        if isinstance(a, list):
            out.extend(_flatten(a))
        else:
            out.append(_num(a, "an aggregate"))
    return out


def _sqrt(x: Fraction | float) -> Fraction | float:
    if x < 0:
        raise EvalError("sqrt of a negative number")
    if isinstance(x, Fraction):
        n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
        if n * n == x.numerator and d * d == x.denominator:
            return Fraction(n, d)
    return math.sqrt(x)


def _log(x: Fraction | float, base2: bool) -> float:
    if x <= 0:
        raise EvalError("logarithm of a non-positive number")
    return math.log2(x) if base2 else math.log(x)


def _call(name: str, args: list[Value]) -> Value:
    base = _AGGREGATE.match(name)
    fn = base.group(1) if base else name
    if fn in ("sum", "max", "min"):
        items = _flatten(args)
        if not items:
            raise EvalError(f"{name} of nothing")
        if fn == "sum":
            total: Fraction | float = Fraction(0)
            for item in items:
                total = total + item
            return total
        return max(items) if fn == "max" else min(items)
    if len(args) != 1:
        raise EvalError(f"{name} takes one argument, got {len(args)}")
    arg = args[0]
    if isinstance(arg, list):
        return [_call(name, [a]) for a in arg]
    x = _num(arg, name)
    if fn == "ceil":
        return Fraction(math.ceil(x))
    if fn == "floor":
        return Fraction(math.floor(x))
    if fn == "abs":
        return -x if x < 0 else x
    if fn == "sqrt":
        return _sqrt(x)
    return _log(x, fn == "log2")


def _compare(op: str, a: Value, b: Value) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        raise EvalError("comparison of lists")
    if op in ("=", "=="):
        return a == b
    if op in ("!=", "≠"):
        return a != b
    x, y = _num(a, op), _num(b, op)
    if op in ("<",):
        return x < y
    if op in ("<=", "≤"):
        return x <= y
    if op in (">",):
        return x > y
    return x >= y


def _truth(v: Value, what: str) -> bool:
    if not isinstance(v, bool):
        raise EvalError(f"{what} needs a true/false operand")
    return v


def evaluate_node(node: Node, env: Mapping[str, Value]) -> Value:
    kind = node[0]
    if kind == "num":
        value = node[1]
        assert isinstance(value, Fraction)
        return value
    if kind == "name":
        name = str(node[1])
        if name in ("true", "false"):
            return name == "true"
        if name not in env:
            raise EvalError(f"no binding for {name}")
        return env[name]
    if kind == "neg":
        return _elementwise(Fraction(0), evaluate_node(_sub(node, 1), env), _arith("-"))
    if kind in ("+", "-", "*", "/", "^"):
        left = evaluate_node(_sub(node, 1), env)
        right = evaluate_node(_sub(node, 2), env)
        return _elementwise(left, right, _arith(str(kind)))
    if kind == "call":
        args_node = node[2]
        assert isinstance(args_node, tuple)
        return _call(str(node[1]), [evaluate_node(a, env) for a in args_node])
    if kind == "cmp":
        ops, operands = node[1], node[2]
        assert isinstance(ops, tuple) and isinstance(operands, tuple)
        values = [evaluate_node(o, env) for o in operands]
        return all(_compare(op, values[k], values[k + 1]) for k, op in enumerate(ops))
    if kind == "not":
        return not _truth(evaluate_node(_sub(node, 1), env), "not")
    if kind == "and":
        left = _truth(evaluate_node(_sub(node, 1), env), "and")
        return left and _truth(evaluate_node(_sub(node, 2), env), "and")
    if kind == "or":
        left = _truth(evaluate_node(_sub(node, 1), env), "or")
        return left or _truth(evaluate_node(_sub(node, 2), env), "or")
    raise EvalError(f"unknown node {kind!r}")


def _sub(node: Node, k: int) -> Node:
    child = node[k]
    assert isinstance(child, tuple)
    return child


def evaluate(text: str, env: Mapping[str, Value]) -> Value:
    """Parse and evaluate one expression with the bindings in `env`."""
    return evaluate_node(parse(text), env)


def split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside brackets; for `=`, only a bare `=` (not `<=`, `==`, ...)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            if sep == "=" and (
                (i > 0 and text[i - 1] in "<>!=") or (i + 1 < len(text) and text[i + 1] == "=")
            ):
                continue
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def definition_sides(plain: str, target: str) -> list[str]:
    """The right-hand sides defining `target` in `plain` (`a = b = c` gives [b, c])."""
    for statement in split_top(plain, ";"):
        sides = split_top(statement, "=")
        if len(sides) >= 2 and sides[0].strip() == target:
            return [s.strip() for s in sides[1:]]
    raise EvalError(f"the plain-text form defines no {target!r}")


def to_value(raw: object) -> Value:
    """A binding from YAML/JSON: number, bool, `p/q` string, or a list of those."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        return Fraction(str(raw))
    if isinstance(raw, str):
        try:
            return Fraction(raw.strip())
        except ValueError:
            raise EvalError(f"{raw!r} is not a number") from None
    if isinstance(raw, list):
        return [to_value(x) for x in raw]
    raise EvalError(f"{raw!r} is not a number, boolean or list")


def show(v: Value) -> str:
    """A short exact spelling: `5/8 (0.625)`, `true`, `[1, 2]`."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    if isinstance(v, Fraction):
        if v.denominator == 1:
            return str(v.numerator)
        return f"{v.numerator}/{v.denominator} ({float(v):.6g})"
    return f"{v:.12g}"
