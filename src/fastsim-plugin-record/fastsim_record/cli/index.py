"""``fsr index SOURCES... -o OUT [--prune] [--overwrite] [--integrity P] [--sha256] [--jobs J|--ray [ADDR]]``.

One Parquet row per FSR file (columns: ``fastsim_record.batch.index_schema``; a file
below OUT's folder is stored by its path relative to OUT, so the folder can be moved).  SOURCES are
files, folders and URLs (``s3://``, ``gs://``, ``file://``); OUT may be a URL too.

    | # | outcome                                                  | exit |
    |---|----------------------------------------------------------|------|
    | 1 | every file valid; OUT written                            | 0    |
    | 2 | some file invalid: its row carries the one-line error;   | 1    |
    |   | OUT written, each failed file named on stderr            |      |
    | 3 | a SOURCE missing; OUT exists and is not an index (unless | 2    |
    |   | ``--overwrite``); OUT cannot be written; no Ray; OUT is  |      |
    |   | a SOURCE file or a folder holding one (even with         |      |
    |   | ``--overwrite``)                                         |      |
    | 4 | pyarrow is not installed (one line naming the ``index``  | 2    |
    |   | extra); an ``s3://`` OUT whose bucket does not exist     |      |
    |   | (one line, before any file is read)                      |      |

Concurrent runs into one OUT keep every row: the read-merge-write is done under a lock
(local) or a conditional PUT (S3), see ``fastsim_record.batch.index`` rule 6.

Incremental: a row whose file has the same size and ETag (else mtime) is reused without
reading the file again.  Rows of files that this run's SOURCES do not name are kept (a
daily run over the day's folder adds to the index); ``--prune`` drops them, so the index
holds this run's SOURCES only.
"""

from __future__ import annotations

import argparse
import sys

from fastsim_record.batch.index import EpisodeIndexError, merge_index, read_index, reusable
from fastsim_record.batch.jobs import CheckTask, index_job
from fastsim_record.batch.sources import Entry, SourceError, check_bucket, expand, is_url
from fastsim_record.cli._batch import (
    add_executor_arguments,
    add_integrity_argument,
    default_policy,
    files,
    run_all,
)
from fastsim_recording_format.overlap import overlap

__all__ = ["add_arguments", "run"]

PROG = "fsr index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr index``'s arguments."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="FSR files, folders or URLs")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="the index (.parquet), a path or URL")
    parser.add_argument("--overwrite", action="store_true", help="replace an OUT that is not an index")
    parser.add_argument("--prune", action="store_true",
                        help="drop the rows of files these SOURCES do not name (default: keep them)")
    add_integrity_argument(parser)
    parser.add_argument("--sha256", action="store_true", help="also store each file's SHA-256")
    add_executor_arguments(parser)
    parser.epilog = ("exit codes: 0 every file valid; 1 some file invalid (its row has the error); "
                     "2 a SOURCE is missing, OUT is not an index, OUT cannot be written, or pyarrow is missing")


def _guard(args: argparse.Namespace, entries: list[Entry]) -> str | None:
    """OUT must not be a file this run reads, nor a folder holding one (even with --overwrite)."""
    out = args.output
    if is_url(out) and not out.startswith("file://"):
        return None
    local = out[len("file://"):] if out.startswith("file://") else out
    inputs = [e.url[len("file://"):] if e.url.startswith("file://") else e.url for e in entries if
              not is_url(e.url) or e.url.startswith("file://")]
    return overlap(local, [*inputs, *(s for s in args.sources if not is_url(s))])


INDEX_EXTRA = "pip install 'fastsim-plugin-record[index]'"


def run(args: argparse.Namespace) -> int:
    """Index; see the module's outcome table."""
    try:
        import pyarrow  # noqa: F401 - the index is Parquet: checked before any file is read
    except ImportError:
        print(f"{PROG}: writing an index needs pyarrow: {INDEX_EXTRA}", file=sys.stderr)
        return 2
    try:
        check_bucket(args.output)
        entries = expand(args.sources)
        refused = _guard(args, entries)
        if refused is not None:
            print(f"{PROG}: {refused}", file=sys.stderr)
            return 2
        old = read_index(args.output)
    except SourceError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except EpisodeIndexError as exc:
        if not args.overwrite:
            print(f"{PROG}: {exc}; pass --overwrite to replace it", file=sys.stderr)
            return 2
        old = None
    old = old or {}
    policy = default_policy(args.integrity)
    reused = {e.url: old[e.url] for e in entries if reusable(old.get(e.url), e, args.integrity, args.sha256)}
    todo = [CheckTask(e, args.integrity, policy, args.sha256) for e in entries if e.url not in reused]
    outcomes = run_all(PROG, args, index_job, todo)
    if isinstance(outcomes, int):
        return outcomes
    mine = dict(reused)
    for outcome in outcomes:
        if outcome.data is not None:
            mine[outcome.url] = outcome.data
    try:  # this run's rows over the index as it is now (another writer's rows are kept)
        merged = merge_index(args.output, mine, prune=args.prune, replace_invalid=args.overwrite)
    except EpisodeIndexError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    named = {e.url for e in entries}  # kept rows of other files are not this run's outcome
    failed = sorted((url, row["error"]) for url, row in merged.items() if row.get("error") and url in named)
    print(f"indexed {files(len(named))} to {args.output} ({len(merged)} rows): {len(todo)} read, "
          f"{len(reused)} unchanged, {len(named) - len(failed)} valid, {len(failed)} failed")
    if failed:
        print(f"{PROG}: {len(failed)} of {files(len(named))} failed validation (their rows carry the error):",
              file=sys.stderr)
        for url, error in failed:
            print(f"  {url}: {error}", file=sys.stderr)
    return max([o.code for o in outcomes] + [1 if failed else 0])
