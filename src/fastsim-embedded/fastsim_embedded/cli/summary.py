"""What ``fsr record`` says about one episode: a short summary, a JSON report, exit codes.

Exit codes of ``fsr record`` (one episode, and a sweep as a whole):

    | # | code | when                                                                        |
    |---|------|-----------------------------------------------------------------------------|
    | 1 | 0    | normal completion, every artifact committed (a sweep: every episode)        |
    | 2 | 1    | the Run failed (nothing under the final name; the reason in one line), or a |
    |   |      | sweep had a failed episode                                                  |
    | 3 | 2    | the Run file, the options or the output names are invalid or refused        |
    |   |      | (an existing file, a crashed Run's ``.incomplete``, another recorder's      |
    |   |      | lock); nothing ran                                                          |
    | 4 | 3    | stopped (a signal) or cancelled: what was recorded is committed with        |
    |   |      | ``completion: stopped`` (a sweep: some episode stopped, none failed)        |
    | 5 | 1    | the stop did not finish within the finalizer's deadline plus a grace: the   |
    |   |      | files left on disk are named, the process exits                             |
    | 6 | 128+N| a third signal N abandoned the recording; the ``.incomplete`` left on disk  |
    |   |      | is named (``fsr recover`` it)                                               |
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from fastsim_embedded.session.session import SessionResult

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_STOPPED",
    "EpisodeReport",
    "human_bytes",
    "report_of",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_STOPPED = 3


def human_bytes(size: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - unreachable


@attrs.frozen
class EpisodeReport:
    """One episode's outcome, as printed and as the sweep's worker reports it (JSON)."""

    status: str  # succeeded | stopped | cancelled | failed | refused
    completion: str | None
    reason: str | None
    committed: tuple[str, ...] = ()
    left: tuple[str, ...] = ()  # partial recordings left on disk (quarantine, incomplete)
    sim_s: float = 0.0
    wall_s: float = 0.0
    records: int = 0
    file_bytes: int = 0
    lost: int = 0
    degraded: bool = False
    exit_code: int = EXIT_OK
    seed: int | None = None
    episode: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain data (lists for tuples)."""
        data = attrs.asdict(self)
        data["committed"] = list(self.committed)
        data["left"] = list(self.left)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EpisodeReport:
        """The inverse of ``to_json`` (a worker's last stdout line)."""
        fields = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["committed"] = tuple(values.get("committed", ()))
        values["left"] = tuple(values.get("left", ()))
        return cls(**values)

    def line(self) -> str:
        """The short summary: path, completion, durations, real-time factor, size, loss."""
        if self.status in ("failed", "refused"):
            text = f"{self.status}: {self.reason or 'nothing was committed'}"
            return text + "".join(
                f"; left on disk: {p} (a partial recording: fsr recover {p} -o NEW.fsr)" for p in self.left
            )
        paths = ", ".join(self.committed) or "nothing to commit (no recorder selected)"
        completion = self.completion or "normal"
        if self.reason and completion != "normal":
            completion += f" ({self.reason})"
        factor = f"x{self.sim_s / self.wall_s:.2f} real time" if self.wall_s > 0 else "-"
        loss = "no loss" if not self.lost and not self.degraded else (
            f"{self.lost} items lost, degraded" if self.degraded else f"{self.lost} items lost"
        )
        size = f", {human_bytes(self.file_bytes)}, {self.records} records, {loss}" if self.committed else ""
        return (
            f"committed {paths}: completion {completion}, {self.sim_s:.2f} s simulated in "
            f"{self.wall_s:.2f} s wall ({factor}){size}"
        )


def _number(summary: Mapping[str, object], key: str) -> int:
    value = summary.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _lost(summary: Mapping[str, object]) -> int:
    lanes = summary.get("lanes")
    if not isinstance(lanes, Mapping):
        return 0
    return sum(_number(lane, "lost") for lane in lanes.values() if isinstance(lane, Mapping))


def report_of(result: SessionResult, *, sensor_hz: float, wall_s: float, has_recorder: bool) -> EpisodeReport:
    """The report of a finished session (exit code from the table above)."""
    outcome = result.outcome
    summaries = [f.result.summary for f in outcome.finalizers]
    committed = tuple(str(p) for p in outcome.committed)
    left = tuple(str(p) for p in outcome.disposed)
    completion = outcome.completion.kind.value if outcome.completion else None
    status = outcome.status
    if status == "failed" or (has_recorder and not committed):
        status, code = "failed", EXIT_FAILED
    elif status in ("stopped", "cancelled"):
        code = EXIT_STOPPED
    else:
        code = EXIT_OK
    reason = outcome.reason
    if status == "failed" and not reason:
        reason = "nothing was committed"
    return EpisodeReport(
        status=status,
        completion=completion,
        reason=reason,
        committed=committed,
        left=left,
        sim_s=result.ticks / sensor_hz,
        wall_s=wall_s,
        records=sum(_number(s, "records") for s in summaries),
        file_bytes=sum(_number(s, "file_bytes") for s in summaries),
        lost=sum(_lost(s) for s in summaries),
        degraded=any(bool(s.get("degraded")) for s in summaries),
        exit_code=code,
    )


def paths_of(report: EpisodeReport) -> list[Path]:
    """The committed paths as ``Path`` objects."""
    return [Path(p) for p in report.committed]
