"""``fsr recover FILE.incomplete -o OUT.fsr``: rebuild an unsealed file's index and footer.

    | # | outcome                                   | stdout        | stderr                    | exit |
    |---|-------------------------------------------|---------------|---------------------------|------|
    | 1 | every byte was a complete batch (or sealed)| what was kept | -                         | 0    |
    | 2 | a torn tail was dropped, or the file held | kept, dropped | -                         | 3    |
    |   | only its header (a valid empty file)      |               |                           |      |
    | 3 | header or run metadata unreadable         | -             | ``invalid: <reason>``     | 1    |
    | 4 | unreadable path, OUT equals the input,    | -             | ``fsr recover: <error>``  | 2    |
    |   | OUT exists without ``--overwrite``, or    |               | (names the file)          |      |
    |   | ``OUT.recovering`` exists                 |               |                           |      |

The output is marked ``recovered`` and ``degraded``.  OUT is written through a temporary
``OUT.recovering`` created with ``O_EXCL | O_NOFOLLOW``; recovery never overwrites or
deletes a file it did not create, and replaces an existing OUT only with ``--overwrite``.
"""

from __future__ import annotations

import argparse
import sys

from fastsim_recording_format import FormatError, recover

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr recover``'s arguments."""
    parser.add_argument("file", metavar="FILE.incomplete", help="an unsealed FSR file")
    parser.add_argument("-o", "--output", metavar="OUT.fsr", required=True, help="the recovered file")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT.fsr if it exists")


def run(args: argparse.Namespace) -> int:
    """Recover; 0 nothing lost, 3 torn tail dropped, 1 nothing recoverable, 2 usage."""
    try:
        report = recover(args.file, args.output, overwrite=args.overwrite)
    except FormatError as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        name = exc.filename if exc.filename is not None else args.file
        print(f"fsr recover: {name}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"fsr recover: {exc}", file=sys.stderr)
        return 2
    print(
        f"recovered {report.records_kept} records in {report.batches_kept} batches into "
        f"{args.output} ({report.size} bytes)"
    )
    print(
        "payloads checked against their CRC-32Cs" if report.payload_crc else
        "payloads not checked: the file has no payload CRC-32Cs (recorded without "
        "runtime.output.payload_crc: true); only the record tables and headers were checked"
    )
    if report.lossless:
        return 0
    if report.records_dropped or report.bytes_dropped:
        print(
            f"dropped torn tail: {report.records_dropped} records, {report.bytes_dropped} bytes"
            + (f" ({report.reason})" if report.reason else "")
        )
    else:
        print(f"nothing to keep: {report.reason}")
    return 3
