"""Which episodes ``fsr export`` reads: its SOURCES expanded, then filtered.

    | # | SOURCE                              | becomes                                          |
    |---|-------------------------------------|--------------------------------------------------|
    | 1 | an FSR file or a folder             | the file, or every ``*.fsr`` below the folder    |
    | 2 | an ``s3://``, ``gs://``, ``file://``| the object(s), each read from a temporary local  |
    |   | URL                                 | copy                                             |
    | 3 | an index (``*.parquet`` made by     | its rows' files (a relative path resolves against|
    |   | ``fsr index``; a path or a URL)     | the index's folder); ``--where`` filters its rows|

Then the default filter (``fastsim_recording_format.reading._sources``) keeps only the
episodes that completed ``normal`` and are not degraded; ``--include stopped,degraded``
(or ``all``) opts in.  Rows with an ``error`` are left out and counted.  ``--where`` needs
every SOURCE to be an index.  Every bad filter, include name or index is one line (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from fastsim_record.batch.sources import (
    SourceError,
    expand,
    filesystem,
    is_url,
    local_copy,
    store_error,
)
from fastsim_recording_format import FormatError
from fastsim_recording_format.reading._sources import (
    INCLUDE,
    LeftOut,
    file_reasons,
    is_index,
    keep,
    parse_include,
    read_index_table,
    select_index,
)

__all__ = ["add_filter_arguments", "selected_sources"]


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """``--where FILTER`` and ``--include REASONS``."""
    parser.add_argument("--where", default=None, metavar="FILTER",
                        help="with index SOURCES: keep the rows this filter over the index's columns selects, "
                             "e.g. \"success and env_id == 'Hopper-v5'\"")
    parser.add_argument("--include", default=None, metavar="REASONS",
                        help=f"also export episodes left out by default: {','.join(INCLUDE)} or all "
                             "(default: only episodes that completed normally and are not degraded)")


def _index_files(source: str, where: object, include: frozenset[str], left_out: LeftOut) -> list[str]:
    try:
        if is_url(source) and not source.startswith("file://"):
            fs, path = filesystem(source)
            with fs.open(path, "rb") as handle:
                table = read_index_table(handle, source)
        else:
            table = read_index_table(source.removeprefix("file://"), source)
    except FileNotFoundError:
        raise SourceError(f"{source}: no such index") from None
    except (SourceError, ValueError):
        raise
    except Exception as exc:  # the store's own errors (credentials, connection)
        raise store_error(source, exc) from None
    return select_index(table, source, where, include, left_out)


def selected_sources(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[list[str], LeftOut]:
    """The local FSR files to export (URL objects as temporary copies kept open on
    ``stack``) and what was left out; raises ``SourceError`` or the reading API's
    ``BadArgument`` (one line each)."""
    from fastsim_record.export import collect_sources

    include = parse_include(args.include)
    if args.where is not None and not all(is_index(s) for s in args.sources):
        raise SourceError("--where filters an episode index's columns: give the index (fsr index SOURCE -o "
                          "index.parquet) as SOURCE")
    left_out = LeftOut()
    out: list[str] = []
    for source in args.sources:
        if is_index(source):
            for path in _index_files(source, args.where, include, left_out):
                if is_url(path):
                    out.append(stack.enter_context(local_copy(path)))
                elif os.path.isfile(path):
                    out.append(path)
                else:
                    raise SourceError(f"{source}: its row {path} is no file (was it moved without its index?)")
            continue
        if is_url(source):
            files = [stack.enter_context(local_copy(entry.url)) for entry in expand([source])]
        else:
            try:
                files = [str(p) for p in collect_sources([source])]
            except FileNotFoundError as exc:
                raise SourceError(str(exc)) from None
        left_out.seen += len(files)
        out.extend(f for f in files if _kept(f, include, left_out))
    return out, left_out


def _kept(path: str, include: frozenset[str], left_out: LeftOut) -> bool:
    """The default filter for a file without an index row; a file whose footer cannot be
    read is kept, so that its validation names it."""
    try:
        found = file_reasons(Path(path))
    except (FormatError, OSError):
        return True
    return keep(found, include, left_out)
