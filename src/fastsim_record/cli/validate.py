"""``fsr validate FILE [--integrity structural|crc|fast|strong] [--json]``.

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

from fastsim_recording_format import (
    POLICY_INTEGRITIES,
    VALIDATION_PROFILES,
    FormatError,
    IntegrityPolicyError,
    ProfileUnsupportedError,
    validate,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr validate``'s arguments."""
    parser.add_argument("file", metavar="FILE", help="a sealed .fsr file")
    parser.add_argument(
        "--integrity", choices=VALIDATION_PROFILES, default="structural",
        help="structural (default; no payload byte read), crc (every payload vs its CRC-32C), "
        "fast or strong (SHA-256; need --policy-integrity sha256)",
    )
    parser.add_argument(
        "--policy-integrity", choices=POLICY_INTEGRITIES, default=None,
        help="the output policy integrity (default: sha256 for fast/strong, else none)",
    )
    parser.add_argument("--json", action="store_true", help="print the receipt as JSON")


_UNSEALED_HINT = " (an unsealed .incomplete file can be rebuilt with 'fsr recover FILE -o OUT.fsr')"


def run(args: argparse.Namespace) -> int:
    """Validate and print the receipt; 0 valid, 1 invalid, 2 usage or unreadable."""
    policy = args.policy_integrity or ("sha256" if args.integrity in ("fast", "strong") else "none")
    try:
        receipt = validate(args.file, args.integrity, policy)
    except FormatError as exc:
        hint = _UNSEALED_HINT if "not sealed" in exc.reason else ""
        print(f"invalid: {exc}{hint}", file=sys.stderr)
        return 1
    except ProfileUnsupportedError as exc:
        print(f"fsr validate: {args.file}: {exc}", file=sys.stderr)
        return 2
    except IntegrityPolicyError as exc:
        print(f"fsr validate: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fsr validate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(receipt.to_json(), sort_keys=True))
    else:
        print(f"valid: {args.file}")
        for key, value in receipt.to_json().items():
            print(f"  {key}: {value if value is not None else '-'}")
    return 0
