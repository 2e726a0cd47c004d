"""``where``: a filter over an episode index's columns (``Dataset(index, where=...)``,
``fsr export --where``).

A filter is a pyarrow compute ``Expression`` or a small string form, parsed with Python's
``ast`` (never evaluated):

    | # | string form                          | means                                        |
    |---|--------------------------------------|----------------------------------------------|
    | 1 | ``col == 'x'``, ``!=``, ``<``, ``<=``,| a comparison of a column with a literal (a    |
    |   | ``>``, ``>=``; ``a < col <= b``       | string, number, ``True``/``False``) or with   |
    |   |                                      | another column; a chain is an ``and``        |
    | 2 | ``and``, ``or``, ``not``, ``( )``    | as in Python                                 |
    | 3 | ``success``                          | a bare column: its (boolean) value           |
    | 4 | ``return > 5``                       | a column named like a Python keyword is      |
    |   |                                      | written as it is                             |

A row whose value is null (a file without a task has no ``success``) never matches.
An unknown column or a bad expression is one ``BadArgument`` line naming it.  Needs
pyarrow (the format's ``arrow`` extra).
"""

from __future__ import annotations

import ast
import difflib
import io
import keyword
import tokenize
from collections.abc import Sequence
from typing import Any

from fastsim_recording_format.reading._errors import BadArgument

__all__ = ["ARROW_EXTRA", "apply_where", "parse_where", "require_pyarrow"]

ARROW_EXTRA = "pip install 'fastsim-recording-format[arrow]'"
_MANGLE = "__fsr_kw_"  # a column named like a keyword (``return``) while ast parses
_COMPARE = {ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__",
            ast.Gt: "__gt__", ast.GtE: "__ge__"}
_KEEP = frozenset({"and", "or", "not", "in", "is", "True", "False", "None"})


def require_pyarrow(what: str) -> Any:
    """``pyarrow.compute``, or an ``ImportError`` of one line naming the extra."""
    try:
        import pyarrow.compute as pc
    except ImportError:
        raise ImportError(f"{what} needs pyarrow: {ARROW_EXTRA}") from None
    return pc


def _unknown(name: str, columns: Sequence[str]) -> BadArgument:
    close = difflib.get_close_matches(name, columns, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; the index has: {', '.join(columns)}"
    return BadArgument(f"where: unknown column {name!r}{hint}")


def _source(text: str) -> str:
    """``text`` with every Python keyword that is not an operator renamed, so that a
    column such as ``return`` parses as a name."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME and keyword.iskeyword(tok.string) and tok.string not in _KEEP:
                out.append((tokenize.NAME, _MANGLE + tok.string))
            else:
                out.append((tok.type, tok.string))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise BadArgument(f"where: bad syntax in {text!r}: {exc.args[0]}") from None
    return tokenize.untokenize(out)


class _Builder:
    def __init__(self, pc: Any, columns: Sequence[str], text: str) -> None:
        self.pc, self.columns, self.text = pc, list(columns), text

    def refuse(self, node: ast.AST) -> BadArgument:
        shown = ast.unparse(node).replace(_MANGLE, "")
        return BadArgument(f"where: {shown!r} is not supported in {self.text!r} (use comparisons "
                           "==, !=, <, <=, >, >= of columns and literals, and, or, not, parentheses)")

    def operand(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            name = node.id.removeprefix(_MANGLE)
            if name not in self.columns:
                raise _unknown(name, self.columns)
            return self.pc.field(name)
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool):
            return self.pc.scalar(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int | float) and not isinstance(node.operand.value, bool):
            return self.pc.scalar(-node.operand.value)
        raise self.refuse(node)

    def build(self, node: ast.AST) -> Any:
        if isinstance(node, ast.BoolOp):
            parts = [self.build(v) for v in node.values]
            out = parts[0]
            for part in parts[1:]:
                out = out & part if isinstance(node.op, ast.And) else out | part
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ~self.build(node.operand)
        if isinstance(node, ast.Compare):
            out, left = None, node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                method = _COMPARE.get(type(op))
                if method is None:
                    raise self.refuse(node)
                lhs, rhs = self.operand(left), self.operand(right)
                if not isinstance(left, ast.Name):  # a literal on the left: flip it onto the column
                    lhs, rhs, method = rhs, lhs, _flip(method)
                part = getattr(lhs, method)(rhs)
                out = part if out is None else out & part
                left = right
            return out
        if isinstance(node, ast.Name):
            return self.operand(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return self.pc.scalar(node.value)
        raise self.refuse(node)


def _flip(method: str) -> str:
    return {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__"}.get(method, method)


def parse_where(text: str, columns: Sequence[str]) -> Any:
    """The pyarrow ``Expression`` of the string form ``text`` over ``columns``."""
    pc = require_pyarrow("where")
    if not text.strip():
        raise BadArgument("where: the filter is empty")
    try:
        tree = ast.parse(_source(text).strip(), mode="eval")
    except SyntaxError as exc:
        at = f" at column {exc.offset}" if exc.offset else ""
        raise BadArgument(f"where: bad syntax{at} in {text!r}: {exc.msg}") from None
    return _Builder(pc, columns, text).build(tree.body)


def apply_where(table: Any, where: object) -> Any:
    """``table``'s rows that ``where`` (a string or a pyarrow ``Expression``) selects."""
    pc = require_pyarrow("where")
    if isinstance(where, str):
        expression = parse_where(where, table.schema.names)
    elif isinstance(where, pc.Expression):
        expression = where
    else:
        raise BadArgument(f"where must be a string or a pyarrow.compute.Expression, got {type(where).__name__}")
    import pyarrow as pa

    try:
        return table.filter(expression)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        missing = line.split("FieldRef.Name(")[1].split(")")[0] if "FieldRef.Name(" in line else None
        if missing is not None and missing not in table.schema.names:
            raise _unknown(missing, table.schema.names) from None
        raise BadArgument(f"where: cannot apply {where if isinstance(where, str) else str(where)!r}: {line}") from None
