"""``fsr channels RUN.yaml [--backend NAME] [--json]``: what the Run's scene declares.

The installed host (``fastsim.hosts``) compiles the Run and builds its backend without
stepping it; every declared channel is listed with its kind, dtype, shape, units and
per-element names (for example the 13 DROID joint names in order).

    | # | outcome                          | stdout                   | stderr            | exit |
    |---|----------------------------------|--------------------------|-------------------|------|
    | 1 | the Run resolves                 | a table (or JSON list)   | -                 | 0    |
    | 2 | any Run, scene or backend issue  | -                        | ``path: message`` | 2    |
    | 3 | no host installed                | -                        | one line          | 2    |
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastsim_record.cli._host import load_host

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr channels``' arguments."""
    parser.add_argument("run_file", metavar="RUN.yaml", help="a FastSim v2 Run document")
    parser.add_argument("--backend", default=None, metavar="NAME", help="override the Run's backend")
    parser.add_argument("--json", action="store_true", help="print one JSON list")


def _cell(text: str) -> str:
    return text if text.isprintable() else json.dumps(text)[1:-1]


def _rows(channels: list[dict[str, Any]]) -> list[str]:
    rows = [["channel", "kind", "dtype", "shape", "units", "elements"]]
    for c in channels:
        units = sorted(set(c["units"]))
        rows.append([
            _cell(c["name"]), c["kind"], c["dtype"], "x".join(map(str, c["shape"])) or "scalar",
            (",".join(map(_cell, units)) or "-") if len(units) <= 3 else f"{len(units)} units",
            ",".join(map(_cell, c["element_names"])) or "-",
        ])
    widths = [max(len(row[k]) for row in rows) for k in range(5)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]


def run(args: argparse.Namespace) -> int:
    """List the channels; 0, or 2 with one line per issue."""
    host, why = load_host()
    resolve = getattr(host, "resolve", None)
    if not callable(resolve):
        print(f"fsr channels: {why or 'the installed host cannot list channels'}", file=sys.stderr)
        return 2
    issues, channels = resolve(args.run_file, args.backend)
    if issues:
        for line in issues:
            print(line, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(channels, sort_keys=True))
    else:
        print("\n".join(_rows(channels)))
    return 0
