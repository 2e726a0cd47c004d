"""``fsr upload SOURCES... URL [--jobs J|--ray [ADDR]] [--no-index]``.

Uploads committed, validated FSR files (files or folders; a folder keeps its layout
below URL, a file goes to ``URL/<name>``) to object storage through fsspec (``s3://``,
``gs://``, ``file://``), verifies every object and writes ``URL/index.parquet``.  The
steps and the rules of idempotence and resumption: ``fastsim_record.batch.upload``.

    | # | outcome                                                         | exit |
    |---|-----------------------------------------------------------------|------|
    | 1 | every file uploaded and verified, or already there (identical)  | 0    |
    | 2 | some file invalid, not committed, or failed verification        | 1    |
    |   | (each named; the others are uploaded and indexed)               |      |
    | 3 | a SOURCE missing or a URL; two sources map to one object;       | 2    |
    |   | ``URL/index.parquet`` is not an index (``--overwrite-index``    |      |
    |   | replaces it, ``--no-index`` skips it); the store is unreachable;|      |
    |   | URL has an empty, ``.`` or ``..`` segment, or a key has a       |      |
    |   | control character, ``?``, ``#`` or a backslash; a ``file://``  |      |
    |   | object would be a source itself; an ``s3://`` bucket that does  |      |
    |   | not exist (one line, before anything is read)                   |      |

Concurrent uploads to one URL keep every index row (``batch.index`` rule 6).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from fastsim_record.batch.index import EpisodeIndexError, merge_index, read_index
from fastsim_record.batch.sources import SourceError, check_bucket, is_url, local_files
from fastsim_record.batch.upload import UploadTask, upload_job
from fastsim_record.cli._batch import add_executor_arguments, failures, files, run_all
from fastsim_recording_format.overlap import overlap

__all__ = ["INDEX_NAME", "add_arguments", "plan", "run"]

PROG = "fsr upload"
INDEX_NAME = "index.parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr upload``'s arguments."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="committed FSR files or folders of them")
    parser.add_argument("url", metavar="URL", help="the destination prefix: s3://BUCKET/PREFIX, gs://..., file://...")
    parser.add_argument("--no-index", action="store_true", help=f"do not write URL/{INDEX_NAME}")
    parser.add_argument("--overwrite-index", action="store_true",
                        help=f"replace a URL/{INDEX_NAME} that is not a valid episode index")
    add_executor_arguments(parser)
    parser.epilog = ("exit codes: 0 every file uploaded and verified (or already identical); 1 some file "
                     "invalid, uncommitted or failing verification; 2 a missing SOURCE or unusable URL")


def _dest(url: str) -> str:
    if not is_url(url):
        return "file://" + os.path.abspath(url)
    return url.rstrip("/")


def _segments_problem(what: str, text: str) -> str | None:
    """Why a destination prefix or key is refused: ``.``, ``..`` or empty segments (they
    would name another prefix, or a key no tool lists), a control character, ``?`` or ``#``."""
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127 or c in "?#\\"), None)
    if bad is not None:
        return f"{what} {text!r} contains {bad!r}; rename it (an object key takes printable characters, no ? # or backslash)"
    if any(part in ("", ".", "..") for part in text.split("/")):
        return f"{what} {text!r} has an empty, '.' or '..' segment; refusing to upload to it"
    return None


def _check_url(url: str) -> None:
    """The destination URL's prefix (``SourceError``)."""
    if not is_url(url):
        return
    scheme, _, rest = url.partition("://")
    rest = rest.rstrip("/")
    if scheme == "file":
        rest = rest.lstrip("/")
    problem = _segments_problem("the destination", rest) if rest else f"the destination {url!r} names no bucket"
    if problem is not None:
        raise SourceError(f"{url}: {problem}")


def plan(sources: list[str], url: str) -> list[tuple[str, str]]:
    """(local file, object URL) pairs; raises ``SourceError``."""
    _check_url(url)
    dest = _dest(url)
    pairs: dict[str, str] = {}
    for source in sources:
        if is_url(source):
            raise SourceError(f"{source}: upload reads local files; SOURCE must be a file or folder")
        for file, key in local_files(source):
            local = str(file)
            problem = _segments_problem("the key", key)
            if problem is not None:
                raise SourceError(f"{local if local.isprintable() else repr(local)}: {problem}")
            target = f"{dest}/{key}"
            if target in pairs and os.path.abspath(pairs[target]) != os.path.abspath(local):
                raise SourceError(f"{local}: would overwrite {target}, also the target of {pairs[target]}")
            pairs[target] = local
    return [(local, target) for target, local in pairs.items()]


def _overlap(pairs: list[tuple[str, str]]) -> str | None:
    """A ``file://`` destination must not replace a source (the same file, or a folder above it)."""
    for local, target in pairs:
        if target.startswith("file://"):
            why = overlap(target[len("file://"):], [local])
            if why is not None:
                return why
    return None


def run(args: argparse.Namespace) -> int:
    """Upload; see the module's outcome table."""
    index_url = f"{_dest(args.url)}/{INDEX_NAME}"
    try:
        pairs = plan(args.sources, args.url)
        check_bucket(args.url)  # a missing bucket is one line, not one per file
        refused = _overlap(pairs)
        if refused is not None:
            print(f"{PROG}: {refused}", file=sys.stderr)
            return 2
        old = {} if args.no_index else (read_index(index_url) or {})
    except EpisodeIndexError as exc:
        if not args.overwrite_index:
            print(f"{PROG}: {exc}; pass --overwrite-index to replace it, or --no-index to upload without it",
                  file=sys.stderr)
            return 2
        old = {}
    except SourceError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: {args.url}: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    tasks = [UploadTask(local, target, (old.get(target) or {}).get("etag"), (old.get(target) or {}).get("sha256"))
             for local, target in pairs]
    outcomes = run_all(PROG, args, upload_job, tasks)
    if isinstance(outcomes, int):
        return outcomes
    mine: dict[str, dict[str, Any]] = {}
    counts = {"uploaded": 0, "skipped": 0}
    for outcome in outcomes:
        if outcome.code == 0 and outcome.data is not None:
            counts[outcome.data["status"]] += 1
            mine[outcome.data["row"]["path"]] = outcome.data["row"]
    rows = {**old, **mine}
    if not args.no_index and rows:
        try:  # merged with the index as it is at the moment of writing: no other writer's row is lost
            merge_index(index_url, mine, replace_invalid=args.overwrite_index)
        except (EpisodeIndexError, OSError) as exc:
            print(f"{PROG}: {exc}".splitlines()[0], file=sys.stderr)
            return 2
    failed = len(outcomes) - counts["uploaded"] - counts["skipped"]
    where = f", index {index_url}" if not args.no_index and rows else ""
    print(f"upload of {files(len(outcomes))} to {_dest(args.url)}: {counts['uploaded']} uploaded and verified, "
          f"{counts['skipped']} already there (identical), {failed} failed{where}")
    no_crc = sum(1 for o in outcomes if o.code == 0 and o.data is not None and not o.data.get("payload_crc"))
    if no_crc:
        print(f"{files(no_crc)} had no payload CRC-32Cs (recorded without runtime.output.payload_crc: true): "
              "validated structurally, payload bytes not checked before upload")
    return failures(PROG, outcomes)
