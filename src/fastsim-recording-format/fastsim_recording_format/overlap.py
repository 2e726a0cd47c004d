"""The one guard every ``--overwrite`` passes: never replace or remove a file being read.

A command that reads INPUTS and writes OUT (``fsr export``, ``recover``, ``index``,
``upload`` to ``file://``, ``replay``, ``synth``) calls :func:`refuse_overlap` before it
reads or writes anything.  Paths are compared by the file they name (``stat``: device
and inode), so a symbolic link, a hard link, ``..`` or a bind mount of a source is
found as well as the literal path.

    | # | OUT                                                        | verdict             |
    |---|------------------------------------------------------------|---------------------|
    | 1 | does not exist (or is a dangling link)                     | free: nothing there |
    | 2 | the same file as an input                                  | refused             |
    | 3 | a folder holding an input at any depth (the input folder   | refused: replacing  |
    |   | itself, or any folder above an input)                      | it would remove it  |
    | 4 | anything else, even inside an input folder                 | free                |

A refusal is :class:`OutputOverlapsInput` (a ``ValueError``), one line naming OUT and
the input; the commands exit 2 with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["OutputOverlapsInput", "overlap", "refuse_overlap"]


class OutputOverlapsInput(ValueError):
    """OUT is an input, or a folder holding one (one line)."""


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def overlap(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> str | None:
    """Why writing ``output`` would replace or remove one of ``inputs`` (``None``: it would not)."""
    out = os.fspath(output)
    target = _identity(out)
    if target is None:
        return None
    seen: set[str] = set()
    for raw in inputs:
        source = os.fspath(raw)
        path = os.path.realpath(source)
        first = True
        while path not in seen:
            seen.add(path)
            if _identity(path) == target:
                what = "is the input" if first else "is a folder holding the input"
                return f"{out} {what} {source}; refusing to replace a file this command reads"
            parent = os.path.dirname(path)
            if parent == path:
                break
            path, first = parent, False
    return None


def refuse_overlap(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`OutputOverlapsInput` when :func:`overlap` finds a reason."""
    why = overlap(output, inputs)
    if why is not None:
        raise OutputOverlapsInput(why)
