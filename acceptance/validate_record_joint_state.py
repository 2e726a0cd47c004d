#!/usr/bin/env python3
"""The DROID joint-state functional gate for a committed Record FSR.

Usage::

    python acceptance/validate_record_joint_state.py \
        --config RUN.yaml --fsr FILE.fsr --report OUT.json

The gate separates what was *declared* from what is *evidenced*:

    | #  | kind        | rule                                                                     |
    |----|-------------|--------------------------------------------------------------------------|
    | D1 | declaration | the Run selects plugin://fastsim/record with observations.mode: explicit |
    | D2 | declaration | its include selects both robot.joint_position and robot.joint_velocity   |
    | D3 | declaration | the FSR is structurally valid and declares one numeric-tick stream whose  |
    |    |             | channel layout lists both channels                                       |
    | D4 | declaration | each declared layout is the locked entity, <f8, shape [13], the locked   |
    |    |             | units and 104 bytes                                                      |
    | E1 | evidence    | each channel has a nonzero count of real DATA records (gaps never count)  |
    | E2 | evidence    | every record's payload is exactly the declared record byte length         |
    | E3 | evidence    | every decoded sample is float64, 13 elements, 104 bytes and all finite    |

Exit 0 only when every rule holds; 1 when the gate fails (the report says why); 2 for
usage errors or unreadable inputs.  The report is written in every case but usage errors.
It needs only the self-contained FSR package (``fastsim_recording_format``), PyYAML and numpy.
Every bad input gives one line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import yaml

from fastsim_recording_format import FormatError, FsrReader, RecordKind, validate

GATE: Final = "record-droid-joint-state/1"
RECORD_COMPONENT: Final = "plugin://fastsim/record"
NUMERIC_TICK_CODEC: Final = "numeric-tick/1"

#: The locked DROID joint-state entity: a 7-DoF arm plus 6 gripper linkage joints.
LOCKED_ENTITY: Final = "robot"  # the DROID-like scene's robot (scenario.scene.robots)
JOINTS: Final = 13
LOCKED: Final[Mapping[str, Mapping[str, Any]]] = {
    "robot.joint_position": {
        "entity": LOCKED_ENTITY,
        "dtype": "<f8",
        "shape": [JOINTS],
        "units": ["rad"] * JOINTS,
        "nbytes": JOINTS * 8,
    },
    "robot.joint_velocity": {
        "entity": LOCKED_ENTITY,
        "dtype": "<f8",
        "shape": [JOINTS],
        "units": ["rad/s"] * JOINTS,
        "nbytes": JOINTS * 8,
    },
}
CHANNELS: Final = tuple(LOCKED)


class _Usage(Exception):
    """An unreadable input: exit 2."""


def _record_plugin_config(run: object) -> tuple[Mapping[str, Any] | None, list[str]]:
    if not isinstance(run, Mapping):
        return None, ["D1: the Run document is not a mapping"]
    plugins = run.get("plugins")
    if not isinstance(plugins, Mapping):
        return None, ["D1: the Run has no plugins mapping"]
    found = [
        p for p in plugins.values() if isinstance(p, Mapping) and p.get("use") == RECORD_COMPONENT
    ]
    if len(found) != 1:
        return None, [f"D1: expected exactly one {RECORD_COMPONENT} plugin, found {len(found)}"]
    config = found[0].get("config") or {}
    if not isinstance(config, Mapping):
        return None, ["D1: the Record plugin config is not a mapping"]
    return config, []


def check_declarations(run: object) -> tuple[dict[str, Any], list[str]]:
    """Rules D1 and D2 on the Run document."""
    config, failures = _record_plugin_config(run)
    declared: dict[str, Any] = {"mode": None, "channels": {}}
    if config is None:
        return declared, failures
    streams = config.get("streams") or {}
    observations = streams.get("observations") if isinstance(streams, Mapping) else None
    if not isinstance(observations, Mapping):
        return declared, ["D1: streams.observations is not authored (the mode must be explicit)"]
    declared["mode"] = observations.get("mode")
    if observations.get("mode") != "explicit":
        failures.append(
            f"D1: streams.observations.mode must be 'explicit' (got {observations.get('mode')!r})"
        )
    include = observations.get("include") or {}
    selected: dict[str, Any] = {}
    if isinstance(include, Mapping):
        for alias, entry in include.items():
            if isinstance(entry, Mapping) and isinstance(entry.get("channel"), str):
                selected[entry["channel"]] = {
                    "alias": alias,
                    "required": entry.get("required", True),
                }
    declared["channels"] = selected
    for channel in CHANNELS:
        if channel not in selected:
            failures.append(f"D2: streams.observations.include does not select {channel}")
    return declared, failures


def check_layout(channel: str, layout: Mapping[str, Any]) -> list[str]:
    """Rule D4: one declared channel layout against the locked contract."""
    failures = []
    for key, expected in LOCKED[channel].items():
        got = layout.get(key)
        if key == "units" and isinstance(got, list) and len(got) == 1:
            got = got * JOINTS  # one unit for every element
        if got != expected:
            failures.append(f"D4: {channel} declares {key} {got!r}, locked {expected!r}")
    return failures


def check_sample(channel: str, raw: bytes) -> str | None:
    """Rule E3: one decoded sample; ``None`` when it holds."""
    if len(raw) != LOCKED[channel]["nbytes"]:
        return f"E3: {channel} sample is {len(raw)} bytes, locked {LOCKED[channel]['nbytes']}"
    value = np.frombuffer(raw, dtype="<f8")
    if value.dtype != np.float64 or value.shape != (JOINTS,):
        return f"E3: {channel} sample decodes to {value.dtype}{list(value.shape)}"
    if not bool(np.isfinite(value).all()):
        return f"E3: {channel} sample has a non-finite value"
    return None


def _open_reader(path: Path) -> FsrReader | str:
    """A reader on a structurally valid file, or the rule-D3 failure."""
    if not path.is_file():
        raise _Usage(f"cannot read {path}: no such file")
    try:
        validate(path)
        return FsrReader(path)
    except FormatError as exc:
        return f"D3: the FSR is not structurally valid: {exc}"
    except OSError as exc:
        raise _Usage(f"cannot read {path}: {exc.strerror or exc}") from None


def check_evidence(fsr: Path) -> tuple[dict[str, Any], list[str]]:
    """Rules D3, D4 and E1-E3 on the FSR file."""
    failures: list[str] = []
    evidence: dict[str, Any] = {c: {"records": 0, "samples_checked": 0} for c in CHANNELS}
    reader = _open_reader(fsr)
    if isinstance(reader, str):
        return evidence, [reader]
    try:
        candidates = [
            s for s in reader.streams
            if s.codec.get("payload_codec") == NUMERIC_TICK_CODEC
            and any(c.get("name") in CHANNELS for c in s.attributes.get("channels", ()))
        ]
        if len(candidates) != 1:
            return evidence, [
                f"D3: expected one numeric-tick stream declaring the joint channels, "
                f"found {len(candidates)}"
            ]
        stream = candidates[0]
        layouts = {c.get("name"): c for c in stream.attributes.get("channels", ())}
        record_bytes = stream.codec.get("record_bytes")
        for channel in CHANNELS:
            layout = layouts.get(channel)
            if layout is None:
                failures.append(f"D3: stream {stream.name} does not declare {channel}")
                continue
            evidence[channel]["declared"] = {
                k: layout.get(k) for k in ("entity", "dtype", "shape", "units", "nbytes", "offset")
            }
            evidence[channel]["stream"] = stream.name
            failures += check_layout(channel, layout)
        if failures:
            return evidence, failures
        bad_samples: list[str] = []
        gaps = 0
        for record in reader.records(stream=stream.name):
            if record.kind is RecordKind.GAP:
                gaps += 1
            if record.kind is not RecordKind.DATA:
                continue
            payload = record.payload
            if len(payload) != record_bytes:
                bad_samples.append(
                    f"E2: record {record.global_sequence} is {len(payload)} bytes, "
                    f"declared {record_bytes}"
                )
                continue
            for channel in CHANNELS:
                offset, nbytes = int(layouts[channel]["offset"]), int(layouts[channel]["nbytes"])
                problem = check_sample(channel, payload[offset : offset + nbytes])
                evidence[channel]["records"] += 1
                evidence[channel]["samples_checked"] += 1
                if problem is not None:
                    bad_samples.append(f"{problem} (record {record.global_sequence})")
        for channel in CHANNELS:
            evidence[channel]["gap_records"] = gaps
            if evidence[channel]["records"] == 0:
                failures.append(f"E1: {channel} has no real DATA records")
        failures += bad_samples[:20]
        if len(bad_samples) > 20:
            failures.append(f"... and {len(bad_samples) - 20} more sample failures")
    except FormatError as exc:
        failures.append(f"E2: payload unreadable: {exc}")
    finally:
        reader.close()
    return evidence, failures


def run_gate(config: Path, fsr: Path) -> dict[str, Any]:
    """Evaluate every rule and return the report."""
    try:
        run = yaml.safe_load(config.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _Usage(f"cannot read {config}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise _Usage(f"{config}: not YAML ({str(exc).splitlines()[0]})") from None
    declared, failures = check_declarations(run)
    evidence, evidence_failures = check_evidence(fsr)
    failures += evidence_failures
    return {
        "gate": GATE,
        "passed": not failures,
        "config": str(config),
        "fsr": str(fsr),
        "locked": {c: dict(v) for c, v in LOCKED.items()},
        "declarations": declared,
        "evidence": evidence,
        "failures": failures,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gate; exit 0 only when it passes."""
    parser = argparse.ArgumentParser(description="DROID joint-state gate for a Record FSR.")
    parser.add_argument("--config", required=True, type=Path, help="the exact Run YAML")
    parser.add_argument("--fsr", required=True, type=Path, help="the committed FSR file")
    parser.add_argument("--report", required=True, type=Path, help="where to write the JSON report")
    args = parser.parse_args(argv)
    try:
        report = run_gate(args.config, args.fsr)
    except _Usage as exc:
        print(f"joint-state gate: {exc}", file=sys.stderr)
        return 2
    try:
        args.report.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"joint-state gate: cannot write {args.report}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if report["passed"]:
        counts = ", ".join(f"{c}={report['evidence'][c]['records']}" for c in CHANNELS)
        print(f"joint-state gate: passed ({counts})")
        return 0
    print(f"joint-state gate: FAILED: {report['failures'][0]}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

