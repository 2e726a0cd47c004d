"""``fsr cat FILE [--stream NAME] [--limit N]``: records as JSON lines.

    | # | outcome                        | stdout                 | stderr                | exit |
    |---|--------------------------------|------------------------|-----------------------|------|
    | 1 | readable file                  | one JSON line a record | -                     | 0    |
    | 2 | a defect found while reading   | the lines before it    | ``invalid: <reason>`` | 1    |
    | 3 | unreadable path, unknown stream, negative limit | -     | ``fsr cat: <error>``  | 2    |

Each line: ``stream``, ``stream_id``, ``kind``, ``global_sequence``, ``global_last``,
``stream_sequence``, ``stream_last``, ``generation``, ``sim_time_ns``, ``metadata``,
``payload_length``.  Payloads are never read.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

from fastsim_record.fsr import FormatError, FsrReader

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr cat``'s arguments."""
    parser.add_argument("file", metavar="FILE", help="a sealed .fsr file")
    parser.add_argument("--stream", metavar="NAME", help="only this stream's records")
    parser.add_argument("--limit", metavar="N", type=int, help="at most N records")


def run(args: argparse.Namespace) -> int:
    """Print JSON lines; 0 ok, 1 invalid, 2 usage or unreadable."""
    if args.limit is not None and args.limit < 0:
        print("fsr cat: --limit must be >= 0", file=sys.stderr)
        return 2
    try:
        with FsrReader(args.file) as reader:
            names = {s.stream_id: s.name for s in reader.streams}
            if args.stream is not None and args.stream not in names.values():
                print(f"fsr cat: no stream named {args.stream!r}", file=sys.stderr)
                return 2
            for rec in itertools.islice(reader.records(args.stream), args.limit):
                sys.stdout.write(json.dumps({
                    "stream": names[rec.stream_id],
                    "stream_id": rec.stream_id,
                    "kind": rec.kind.name.lower(),
                    "global_sequence": rec.global_sequence,
                    "global_last": rec.global_last,
                    "stream_sequence": rec.stream_sequence,
                    "stream_last": rec.stream_last,
                    "generation": rec.generation,
                    "sim_time_ns": rec.sim_time_ns,
                    "metadata": rec.metadata,
                    "payload_length": rec.payload_length,
                }, sort_keys=True, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except FormatError as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"fsr cat: {exc}", file=sys.stderr)
        return 2
    return 0
