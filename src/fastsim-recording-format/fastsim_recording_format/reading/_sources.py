"""Which recordings a ``Dataset`` (and ``fsr export``) reads: files, folders and episode
indexes, and the default filter that leaves some of them out.

    | # | source                        | gives                                               |
    |---|-------------------------------|-----------------------------------------------------|
    | 1 | an FSR file                   | itself                                              |
    | 2 | a folder                      | every ``*.fsr`` below it, sorted                    |
    | 3 | an index (``*.parquet`` with  | its rows' files: a relative ``path`` is resolved    |
    |   | the ``fsr-index`` metadata)   | against the index's own folder (so a dataset      |
    |   |                               | folder can be moved); ``where`` filters its columns |

Then each file (an episode) is kept or left out, and every one left out is counted by
its reason (``LeftOut``):

    | # | reason      | when                                           | kept with ``include`` |
    |---|-------------|------------------------------------------------|-----------------------|
    | 1 | ``error``   | the index row has an ``error`` (the file failed | never                 |
    |   |             | validation when it was indexed)                |                       |
    | 2 | ``where``   | the ``where`` filter does not select the row   | never (change where)  |
    | 3 | ``stopped``,| the Run's completion (``Recording.info.        | that name             |
    |   | ``failed``, | completion``) is another than ``normal``       |                       |
    |   | ``cancelled``|                                               |                       |
    | 4 | ``degraded``| ``Recording.info.degraded``: the file holds    | ``degraded``          |
    |   |             | declared losses (GAP records), or ``fsr        |                       |
    |   |             | recover`` sealed it from an ``.incomplete``    |                       |

By default only episodes that completed ``normal`` and are not degraded are kept (a
file without a completion, as ``fsr synth`` writes and as recovery leaves, is judged by
``degraded`` alone: a recovered file is always degraded);
``include="stopped,degraded"`` (or ``"all"``) opts in.  A file is kept when every reason
it has is included, and is counted under its first reason that is not.  A file read
without an index gets its completion and ``degraded`` from its own footer, as
``Recording.info`` does.
"""

from __future__ import annotations

import difflib
import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from fastsim_recording_format.reading._errors import BadArgument
from fastsim_recording_format.reading._where import apply_where, require_pyarrow

__all__ = [
    "INCLUDE", "INDEX_KEY", "LeftOut", "LeftOutWarning", "Selection", "file_reasons", "is_index", "is_url", "keep",
    "parse_include", "read_index_table", "reasons", "relative_path", "resolve_path", "select", "select_index",
]

INDEX_KEY = b"fsr-index"
INDEX_SUFFIX = ".parquet"
#: the reasons ``include`` can opt in to, in the order they are counted
INCLUDE = ("stopped", "failed", "cancelled", "degraded")
_COMPLETIONS = frozenset({"stopped", "failed", "cancelled"})


def is_url(text: str) -> bool:
    """``scheme://...`` (a Windows drive letter is not a scheme)."""
    head, sep, _ = text.partition("://")
    return bool(sep) and len(head) > 1 and head.replace("+", "").isalnum()


def is_index(source: str | os.PathLike[str]) -> bool:
    """Whether a source names an index (by its ``.parquet`` suffix)."""
    return os.fspath(source).endswith(INDEX_SUFFIX)


def _folder(index_location: str) -> str:
    if is_url(index_location):
        return index_location.rsplit("/", 1)[0]
    return os.path.dirname(os.path.abspath(index_location))


def relative_path(index_location: str, path: str) -> str:
    """What an index at ``index_location`` stores for ``path``: the path relative to the
    index's folder when the file lies below it (both local, or both under one URL prefix),
    else ``path`` unchanged."""
    folder = _folder(index_location)
    if is_url(index_location) != is_url(path):
        return path
    if is_url(path):
        return path[len(folder) + 1:] if path.startswith(folder + "/") else path
    absolute = os.path.abspath(path)
    if absolute.startswith(folder.rstrip(os.sep) + os.sep):
        return Path(os.path.relpath(absolute, folder)).as_posix()
    return path


def resolve_path(index_location: str, stored: str) -> str:
    """The file a stored ``path`` names: a relative one lies below the index's folder."""
    if is_url(stored) or os.path.isabs(stored):
        return stored
    if is_url(index_location):
        return posixpath.join(_folder(index_location), stored)
    return os.path.join(_folder(index_location), *stored.split("/"))


def parse_include(value: object) -> frozenset[str]:
    """``include`` as a set of reasons: ``None``/``()``, ``"stopped,degraded"``, ``"all"``
    or a sequence of names; an unknown name is one ``BadArgument`` line."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        names = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, Iterable) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value]
    else:
        raise BadArgument(f"include must be names such as 'stopped,degraded', got {value!r}")
    if "all" in names:
        return frozenset(INCLUDE)
    for name in names:
        if name not in INCLUDE:
            close = difflib.get_close_matches(name, INCLUDE, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use {', '.join(INCLUDE)} or all"
            raise BadArgument(f"include: unknown {name!r}; {hint}")
    return frozenset(names)


def reasons(completion: object, degraded: object) -> tuple[str, ...]:
    """Rules 3-4: why an episode with this completion and ``degraded`` is left out by default."""
    out = []
    if completion is not None and completion != "normal":  # another word than the host's: failed
        out.append(completion if completion in _COMPLETIONS else "failed")
    if degraded is not False:
        out.append("degraded")
    return tuple(out)


def keep(found: Sequence[str], include: frozenset[str], left_out: LeftOut) -> bool:
    """Whether an episode with reasons ``found`` is kept; if not, counted once."""
    for reason in found:
        if reason not in include:
            left_out.add(reason)
            return False
    return True


def file_reasons(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Rules 3-4 for a file read without an index: its own footer (``FormatError`` as the reader raises it)."""
    from fastsim_recording_format.reader import FsrReader
    from fastsim_recording_format.reading.summary import completion

    with FsrReader(path) as reader:
        return reasons(completion(reader.footer)["kind"], reader.degraded)


class LeftOutWarning(UserWarning):
    """The ``Dataset`` left episodes out (``Dataset.left_out`` counts them by reason)."""


@attrs.define
class LeftOut:
    """Episodes left out, by reason (``Dataset.left_out``, ``fsr export``'s summary)."""

    counts: dict[str, int] = attrs.field(factory=dict)
    seen: int = 0  # episodes considered (kept and left out)

    def add(self, reason: str, count: int = 1) -> None:
        """Count ``count`` episodes left out for ``reason``."""
        if count:
            self.counts[reason] = self.counts.get(reason, 0) + count

    @property
    def total(self) -> int:
        """Episodes left out."""
        return sum(self.counts.values())

    def line(self, option: str = "include=") -> str:
        """``left out 2 of 12 episodes: 2 stopped (include='stopped' keeps them)``, or
        ``left out none of 12 episodes``."""
        if not self.total:
            return f"left out none of {self.seen} episodes"
        parts = ", ".join(f"{n} {r}" if r != "where" else f"{n} by where" for r, n in self.counts.items())
        opt = [r for r in self.counts if r in INCLUDE]
        hint = ""
        if opt:
            names = ",".join(opt)
            hint = f" ({option}{names!r} keeps them)" if option.endswith("=") else f" ({option} {names} keeps them)"
        return f"left out {self.total} of {self.seen} episodes: {parts}{hint}"


def read_index_table(source: Any, location: str) -> Any:
    """The pyarrow table of the index at ``location`` (``source``: its path or an open
    binary file); ``BadArgument`` when it is not an index."""
    require_pyarrow(f"{location}: reading an episode index")
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(source)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"{location}: no such index") from None
        raise BadArgument(f"{location}: not an episode index ({str(exc).strip().splitlines()[0]})") from None
    except Exception as exc:  # pyarrow's own errors: not Parquet
        raise BadArgument(f"{location}: not an episode index ({type(exc).__name__})") from None
    if (table.schema.metadata or {}).get(INDEX_KEY) != b"1":
        raise BadArgument(f"{location}: not an episode index (no '{INDEX_KEY.decode()}' metadata; make one with "
                          "fsr index)")
    for name in ("path", "completion", "degraded", "error"):
        if name not in table.schema.names:
            raise BadArgument(f"{location}: not a valid episode index: column {name!r} is missing")
    return table


def select_index(table: Any, location: str, where: object, include: frozenset[str], left_out: LeftOut) -> list[str]:
    """The files of an index's rows that are kept (rules 1-4), resolved against ``location``."""
    import pyarrow.compute as pc

    left_out.seen += table.num_rows
    failed = pc.invert(pc.is_null(table.column("error")))
    left_out.add("error", int(pc.sum(failed).as_py() or 0))
    table = table.filter(pc.invert(failed))
    if where is not None:
        before = table.num_rows
        table = apply_where(table, where)
        left_out.add("where", before - table.num_rows)
    out = []
    for path, completion, degraded in zip(table.column("path").to_pylist(), table.column("completion").to_pylist(),
                                          table.column("degraded").to_pylist(), strict=True):
        if path is not None and keep(reasons(completion, degraded), include, left_out):
            out.append(resolve_path(location, path))
    return out


@attrs.frozen
class Selection:
    """The files kept, in order, and what was left out."""

    paths: list[str]
    left_out: LeftOut


def _items(source: object) -> Sequence[object]:
    if isinstance(source, str | os.PathLike):
        return [source]
    if isinstance(source, Sequence) and not isinstance(source, bytes):
        return source
    raise BadArgument(
        f"paths_or_index must be a path, a directory, an index or a sequence of them, got {type(source).__name__}")


def select(source: object, where: object = None, include: object = None) -> Selection:
    """The ``Dataset``'s files: every source expanded (rules 1-3), then filtered (1-4)."""
    items = _items(source)
    if not items:
        raise BadArgument("paths_or_index names no recordings")
    wanted = parse_include(include)
    if where is not None and not all(isinstance(i, str | os.PathLike) and is_index(i) for i in items):
        raise BadArgument("where filters an episode index's columns: pass the index (fsr index SOURCE -o "
                          "index.parquet) as paths_or_index")
    left_out = LeftOut()
    out: list[str] = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise BadArgument(f"paths_or_index: {item!r} is not a path")
        p = Path(item)
        if is_url(os.fspath(item)):
            raise BadArgument(f"paths_or_index: {os.fspath(item)} is a URL; the Dataset reads local files and indexes")
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*.fsr"))
            if not found:
                raise BadArgument(f"paths_or_index: directory {p} holds no .fsr files")
            files = found
        elif p.is_file() and is_index(p):
            files = _index_files(str(p), where, wanted, left_out)
            for f in files:
                if is_url(f):
                    raise BadArgument(f"{p}: row {f} is a URL; the Dataset reads local files")
                if not os.path.isfile(f):
                    raise FileNotFoundError(f"{p}: its row {f} is no file (was it moved without its index?)")
            out.extend(files)
            continue
        elif p.is_file():
            files = [str(p)]
        else:
            raise FileNotFoundError(f"paths_or_index: {p} is neither a recording file nor a directory (nor an index)")
        left_out.seen += len(files)
        out.extend(f for f in files if keep(file_reasons(f), wanted, left_out))
    return Selection(out, left_out)


def _index_files(location: str, where: object, include: frozenset[str], left_out: LeftOut) -> list[str]:
    with open(location, "rb") as handle:
        table = read_index_table(handle, location)
    return select_index(table, location, where, include, left_out)
