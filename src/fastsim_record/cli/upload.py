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
    |   | ``URL/index.parquet`` is not an index; the store is unreachable |      |
"""

from __future__ import annotations

import argparse
import os
import sys

from fastsim_record.batch.index import EpisodeIndexError, read_index, write_index
from fastsim_record.batch.runner import add_executor_arguments, failures, files, run_all
from fastsim_record.batch.sources import SourceError, is_url, local_files
from fastsim_record.batch.upload import UploadTask, upload_job

__all__ = ["INDEX_NAME", "add_arguments", "plan", "run"]

PROG = "fsr upload"
INDEX_NAME = "index.parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr upload``'s arguments."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="committed FSR files or folders of them")
    parser.add_argument("url", metavar="URL", help="the destination prefix: s3://BUCKET/PREFIX, gs://..., file://...")
    parser.add_argument("--no-index", action="store_true", help=f"do not write URL/{INDEX_NAME}")
    add_executor_arguments(parser)
    parser.epilog = ("exit codes: 0 every file uploaded and verified (or already identical); 1 some file "
                     "invalid, uncommitted or failing verification; 2 a missing SOURCE or unusable URL")


def _dest(url: str) -> str:
    if not is_url(url):
        return "file://" + os.path.abspath(url)
    return url.rstrip("/")


def plan(sources: list[str], url: str) -> list[tuple[str, str]]:
    """(local file, object URL) pairs; raises ``SourceError``."""
    dest = _dest(url)
    pairs: dict[str, str] = {}
    for source in sources:
        if is_url(source):
            raise SourceError(f"{source}: upload reads local files; SOURCE must be a file or folder")
        for file, key in local_files(source):
            local = str(file)
            target = f"{dest}/{key}"
            if target in pairs and os.path.abspath(pairs[target]) != os.path.abspath(local):
                raise SourceError(f"{local}: would overwrite {target}, also the target of {pairs[target]}")
            pairs[target] = local
    return [(local, target) for target, local in pairs.items()]


def run(args: argparse.Namespace) -> int:
    """Upload; see the module's outcome table."""
    index_url = f"{_dest(args.url)}/{INDEX_NAME}"
    try:
        pairs = plan(args.sources, args.url)
        old = {} if args.no_index else (read_index(index_url) or {})
    except (SourceError, EpisodeIndexError) as exc:
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
    rows = dict(old)
    counts = {"uploaded": 0, "skipped": 0}
    for outcome in outcomes:
        if outcome.code == 0 and outcome.data is not None:
            counts[outcome.data["status"]] += 1
            rows[outcome.data["row"]["path"]] = outcome.data["row"]
    if not args.no_index and rows:
        try:
            write_index(index_url, rows.values())
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
