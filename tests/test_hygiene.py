"""Repository hygiene: every test states its behaviour in one line; modules stay readable."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DIRS = ("tests", "contracts")

#: A module should be readable in one sitting; there are no exceptions.
MAX_MODULE_LINES = 400


def _test_functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield node


def _docstring_problems(path: Path, source: str) -> list[str]:
    problems = []
    for fn in _test_functions(ast.parse(source)):
        doc = ast.get_docstring(fn, clean=True)
        where = f"{path}:{fn.lineno} {fn.name}"
        if not doc:
            problems.append(f"{where}: no docstring")
        elif "\n" in doc:
            problems.append(f"{where}: docstring is not one line")
    return problems


def test_every_test_has_a_one_line_docstring() -> None:
    """Every test function in tests/ and contracts/ has a docstring of exactly one line."""
    files = [p for d in TEST_DIRS for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 20
    problems = [
        problem
        for path in files
        for problem in _docstring_problems(path.relative_to(ROOT), path.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)


def test_the_docstring_check_catches_missing_and_multi_line_docstrings() -> None:
    """The docstring check flags a test without a docstring and one with two lines, not a helper."""
    source = (
        "def test_a():\n    pass\n"
        "def test_b():\n    '''One.\n\n    Two.\n    '''\n"
        "def test_c():\n    '''One line.'''\n"
        "def helper():\n    pass\n"
    )
    problems = _docstring_problems(Path("x.py"), source)
    assert [p.split()[1] for p in problems] == ["test_a:", "test_b:"]


def test_modules_stay_small_enough_to_read() -> None:
    """Every module under src/ is at most MAX_MODULE_LINES lines long."""
    src = ROOT / "src"
    sizes = {
        path.relative_to(src).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in src.rglob("*.py")
    }
    assert len(sizes) > 50
    too_big = {
        name: n for name, n in sizes.items() if n > MAX_MODULE_LINES
    }
    assert not too_big, too_big
