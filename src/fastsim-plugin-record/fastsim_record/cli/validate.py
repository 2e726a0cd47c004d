"""``fsr validate FILE... [--integrity structural|crc|fast|strong] [--json] [--jobs J|--ray [ADDR]]``.

One local FILE: the outcome table below.  Many files, folders or URLs (``s3://``,
``gs://``, ``file://``): one line per file (``valid: FILE`` on stdout, or the error on
stderr; with ``--json`` one JSON object per file with ``path``, ``code``, ``error``,
``receipt``), then a summary line and each failed file named; exit 0 all valid, else the
worst code (1 invalid, 2 unreadable or unsupported profile).  Batch jobs run in a local
process pool (``--jobs``) or as Ray tasks (``--ray``): ``fastsim_record.batch``.

    | # | outcome                                   | stdout         | stderr                    | exit |
    |---|-------------------------------------------|----------------|---------------------------|------|
    | 1 | valid                                     | the receipt    | -                         | 0    |
    | 2 | invalid                                   | -              | ``invalid: <reason> at offset <n>`` | 1 |
    | 3 | unreadable path, or fast/strong under policy ``none`` | -  | ``fsr validate: <error>`` | 2    |
    | 4 | a profile the file cannot support (``crc``| -              | ``fsr validate: FILE: ... | 2    |
    |   | without payload CRCs, ``strong`` on a     |                | This file supports: ...`` |      |
    |   | non-strong file): a usage error           |                |                           |      |

``crc`` reads every payload byte and checks each batch's CRC-32C; it needs no output
policy.  It is never ``invalid`` to ask for a profile a file was not written for.

``--policy-integrity`` defaults to ``sha256`` for ``fast``/``strong`` and ``none`` for
``structural``; ``fast``/``strong`` with ``--policy-integrity none`` is a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from fastsim_record.batch.jobs import CheckTask, validate_job
from fastsim_record.batch.sources import SourceError, expand, is_single_file
from fastsim_record.cli._batch import (
    add_executor_arguments,
    add_integrity_argument,
    default_policy,
    failures,
    files,
    run_all,
)
from fastsim_recording_format import (
    POLICY_INTEGRITIES,
    FormatError,
    IntegrityPolicyError,
    ProfileUnsupportedError,
    validate,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr validate``'s arguments."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="sealed .fsr files, folders or URLs")
    add_integrity_argument(parser)
    parser.add_argument(
        "--policy-integrity", choices=POLICY_INTEGRITIES, default=None,
        help="the output policy integrity (default: sha256 for fast/strong, else none)",
    )
    parser.add_argument("--json", action="store_true", help="print the receipt as JSON")
    add_executor_arguments(parser)


_UNSEALED_HINT = " (an unsealed .incomplete file can be rebuilt with 'fsr recover FILE -o OUT.fsr')"


def run(args: argparse.Namespace) -> int:
    """Validate and print the receipt; 0 valid, 1 invalid, 2 usage or unreadable."""
    policy = args.policy_integrity or default_policy(args.integrity)
    if not is_single_file(args.files, args):
        return _batch(args, policy)
    args.file = args.files[0]
    try:
        receipt = validate(args.file, args.integrity, policy)
    except FormatError as exc:
        hint = _UNSEALED_HINT if "not sealed" in exc.reason else ""
        print(f"invalid: {exc}{hint}", file=sys.stderr)
        return 1
    except ProfileUnsupportedError as exc:
        print(f"fsr validate: {args.file}: {exc}", file=sys.stderr)
        return 2
    except (IntegrityPolicyError, OSError) as exc:
        print(f"fsr validate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(receipt.to_json(), sort_keys=True))
    else:
        print(f"valid: {args.file}")
        for key, value in receipt.to_json().items():
            print(f"  {key}: {value if value is not None else '-'}")
    return 0


def _batch(args: argparse.Namespace, policy: str) -> int:
    """Many files: one line each, a summary, each failure named."""
    if args.integrity in ("fast", "strong") and policy != "sha256":
        print(f"fsr validate: integrity {args.integrity!r} requires --policy-integrity sha256", file=sys.stderr)
        return 2
    try:
        entries = expand(args.files)
    except SourceError as exc:
        print(f"fsr validate: {exc}", file=sys.stderr)
        return 2
    outcomes = run_all("fsr validate", args, validate_job, [CheckTask(e, args.integrity, policy) for e in entries])
    if isinstance(outcomes, int):
        return outcomes
    for o in outcomes:
        if args.json:
            print(json.dumps({"path": o.url, "code": o.code, "error": o.error, "receipt": o.data}, sort_keys=True))
        elif o.code == 0:
            print(f"valid: {o.url}")
        else:
            print(f"{o.url}: {o.error}", file=sys.stderr)
    bad = sum(1 for o in outcomes if o.code)
    summary = f"validated {files(len(outcomes))} ({args.integrity}): {len(outcomes) - bad} valid, {bad} failed"
    print(summary, file=sys.stderr if args.json else sys.stdout)
    return failures("fsr validate", outcomes)
