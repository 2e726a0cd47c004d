"""The core is pure: an allow-list of imports and no I/O builtins (complements import-linter)."""

from __future__ import annotations

import ast
from pathlib import Path

import fastsim_record.core

CORE = Path(fastsim_record.core.__file__).parent

#: Everything the core may import: pure standard-library modules, attrs, and itself.
ALLOWED = frozenset({
    "__future__", "abc", "attrs", "bisect", "collections", "dataclasses", "enum", "functools",
    "heapq", "itertools", "math", "operator", "types", "typing", "fastsim_record.core",
})

#: Builtins that perform I/O or import by name.
IO_BUILTINS = frozenset({"open", "print", "input", "exec", "eval", "compile", "__import__", "breakpoint"})


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _allowed(module: str) -> bool:
    return any(module == ok or module.startswith(ok + ".") for ok in ALLOWED)


def test_core_imports_only_the_allow_list() -> None:
    """Every import in fastsim_record.core (module or function level) is on the allow-list."""
    modules = sorted(CORE.glob("*.py"))
    assert len(modules) >= 10
    bad = {
        f"{path.name}: {name}"
        for path in modules
        for name in _imports(ast.parse(path.read_text()))
        if not _allowed(name)
    }
    assert not bad, sorted(bad)


def test_core_calls_no_io_builtins() -> None:
    """No core module calls open, print, input, exec, eval or __import__."""
    bad = [
        f"{path.name}:{node.lineno}: {node.func.id}"
        for path in sorted(CORE.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IO_BUILTINS
    ]
    assert not bad


def test_the_allow_list_check_catches_a_clock_import() -> None:
    """The allow-list check flags a function-level ``from time import ...`` and ``import threading``."""
    tree = ast.parse("import threading\ndef f():\n    from time import perf_counter\n")
    assert {name for name in _imports(tree) if not _allowed(name)} == {"threading", "time"}
