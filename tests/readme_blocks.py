"""The README's fenced code blocks, and its shell blocks as the commands a reader types.

A shell block (`bash`, `sh`, `console`, `shell`) is read as a reader runs it: a line
ending in `\\` continues on the next, a `#` outside quotes starts a comment, and a line is
split at `&&` into the steps it runs one after the other (each must succeed).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHELL = ("bash", "sh", "console", "shell")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

__all__ = ["README", "ROOT", "SHELL", "Block", "blocks", "commands", "section"]


@attrs.frozen
class Block:
    """One fenced block: its language, text and the README line its fence opens on."""

    language: str
    text: str
    line: int


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def section(text: str, heading: str) -> str:
    """The text under one `## ` heading, up to the next heading of the same level."""
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + len(heading) + 2)
    return text[start:end if end >= 0 else len(text)]


def _uncomment(line: str) -> str:
    """The line without its trailing comment (a `#` at the start or after whitespace, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands(block: Block) -> list[str]:
    """The commands of a shell block: continuations joined, comments dropped, split at `&&`."""
    lines: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1].strip() + " "
            continue
        line = (pending + _uncomment(raw).strip()).strip()
        pending = ""
        if line:
            lines.append(line)
    return [step.strip() for line in lines for step in line.split(" && ")]
