"""``fsr synth OUT.fsr --records N --payload-bytes B``: write a synthetic FSR file.

For trying the tool and for benchmarks before a real recording exists.  Records cycle over
``--streams`` numeric streams ``obs.<i>``; ``--camera-every K`` makes every K-th record a
raw RGB frame of ``--camera-bytes`` on ``cameras.overview.rgb``; ``--generations G``
splits the run into G generations; ``--gap-every K`` turns every K-th record into a GAP
(the file is then degraded); ``--unsealed`` stops before sealing, like a crashed writer.

    | # | outcome               | stdout             | stderr                 | exit |
    |---|-----------------------|--------------------|------------------------|------|
    | 1 | written               | one summary line   | -                      | 0    |
    | 2 | bad arguments or path | -                  | ``fsr synth: <error>`` | 2    |
    | 3 | OUT exists, no        | -                  | ``fsr synth: <path>    | 2    |
    |   | ``--overwrite``; OUT  |                    | exists ...``           |      |
    |   | is a folder           |                    |                        |      |
    | 4 | the disk is full      | -                  | one line naming ENOSPC | 1    |

The file is written to ``.OUT.synth-<pid>`` and renamed to OUT when complete
(``cli._staging``), so an existing OUT is replaced (``--overwrite``) only by a whole new
file, and an interrupted synth leaves nothing.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from fastsim_record.cli import _signals
from fastsim_record.cli._staging import clear_stale, publish, remove, staging
from fastsim_recording_format import INTEGRITY_PROFILES
from fastsim_recording_format.synth import write_synthetic

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr synth``'s arguments."""
    parser.add_argument("output", metavar="OUT.fsr")
    parser.add_argument("--records", type=int, required=True, metavar="N")
    parser.add_argument("--payload-bytes", type=int, default=800, metavar="B")
    parser.add_argument("--streams", type=int, default=4, metavar="K", help="numeric streams")
    parser.add_argument("--camera-every", type=int, default=0, metavar="K")
    parser.add_argument("--camera-bytes", type=int, default=640 * 480 * 3, metavar="B")
    parser.add_argument("--generations", type=int, default=1, metavar="G")
    parser.add_argument("--gap-every", type=int, default=0, metavar="K")
    parser.add_argument("--metadata", action="store_true", help="give every record metadata")
    parser.add_argument("--batch-items", type=int, default=256)
    parser.add_argument("--batch-bytes", type=int, default=16 << 20)
    parser.add_argument("--integrity", choices=INTEGRITY_PROFILES, default="structural")
    parser.add_argument("--unsealed", action="store_true", help="do not seal (like a crash)")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT.fsr if it exists")


def run(args: argparse.Namespace) -> int:
    """Write the file; 0 written, 2 bad arguments or path."""
    numbers = ("records", "payload_bytes", "streams", "camera_every", "camera_bytes", "gap_every")
    bad = [n for n in numbers if getattr(args, n) < 0]
    bad += [n for n in ("generations", "batch_items", "batch_bytes") if getattr(args, n) < 1]
    if args.streams == 0 and args.camera_every != 1:
        bad.append("streams")
    if bad:
        print(f"fsr synth: invalid value for --{bad[0].replace('_', '-')}", file=sys.stderr)
        return 2
    out = Path(args.output)
    if out.is_dir():
        print(f"fsr synth: {out} is a folder; OUT.fsr must be a file", file=sys.stderr)
        return 2
    if os.path.lexists(out) and not args.overwrite:  # never replace a user's file
        print(f"fsr synth: {out} exists; pass --overwrite to replace it", file=sys.stderr)
        return 2
    clear_stale(out, ("synth",))
    tmp = staging(out, "synth")  # an existing OUT is replaced only by a complete new file
    try:
        sealed = write_synthetic(
            tmp, args.records, args.payload_bytes, numeric_streams=args.streams,
            camera_every=args.camera_every, camera_bytes=args.camera_bytes,
            generations=args.generations, gap_every=args.gap_every, metadata=args.metadata,
            batch_items=args.batch_items, batch_bytes=args.batch_bytes,
            integrity=args.integrity, seal=not args.unsealed,
        )
        publish(tmp, out, args.overwrite)
    except BaseException as exc:
        with _signals.deferred():
            remove(tmp)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            print(f"fsr synth: no space left on the device of {out} (ENOSPC); nothing was written",
                  file=sys.stderr)
            return 1
        if isinstance(exc, OSError | ValueError):
            print(f"fsr synth: {exc}".splitlines()[0], file=sys.stderr)
            return 2
        raise
    if sealed is None:
        print(f"wrote unsealed {args.output} ({args.records} records)")
    else:
        print(f"wrote {args.output}: {sealed.records} records in {sealed.batches} batches, {sealed.size} bytes")
    return 0
