"""An episode sweep run by the executor port: ``fsr record RUN.yaml --episodes N --ray``.

The host is reached only through its ``fastsim.hosts`` command object (the plugin never
imports it): ``check_sweep(args)`` checks the Run once and plans the sweep first (the
first seed, every episode's names, with ``--resume`` only the episodes without a
committed file), and ``worker_command(args, episode, seed)`` is the command line that records one episode in
its own process and prints its report as one JSON line.  Each job (``episode_job``) runs
on one worker (a Ray task, or a pool process):

    | # | step      | on the worker's node                                            |
    |---|-----------|-----------------------------------------------------------------|
    | 1 | record    | the host's worker command, on the node's local disk: it commits |
    |   |           | only a file its read-back validated                              |
    | 2 | validate  | every committed file again, here, before it leaves the node     |
    | 3 | upload    | with ``--upload URL``: ``batch.upload.upload_job`` (verified)   |

Interrupted (Ctrl-C in a pool worker, ``ray.cancel`` of a Ray task), a job sends SIGTERM
to its episode's process, which commits what it recorded (``completion: stopped``).
The driver prints one line per episode and the sweep's table, writes ``URL/index.parquet``
for the uploaded episodes, and exits like the local sweep: 0 every episode committed
normally (and uploaded), 1 some episode failed, 3 otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import attrs

from fastsim_contract.lifetime import child_environment, child_report
from fastsim_record.batch.executors import ParentGone
from fastsim_record.batch.jobs import Outcome
from fastsim_record.batch.upload import UploadTask, upload_job
from fastsim_recording_format import FormatError, validate

__all__ = ["EpisodeTask", "episode_job", "report_of"]


@attrs.frozen
class EpisodeTask:
    """One episode: the host's command line, its index and seed, where to upload."""

    command: tuple[str, ...]
    episode: int
    seed: int
    output_dir: str
    upload: str | None = None


def report_of(task: EpisodeTask, code: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The episode's report: the worker's last JSON line, else a failure naming stderr."""
    data, reason = child_report(code, stdout, stderr)
    if data is not None:
        return {**data, "episode": task.episode, "seed": task.seed}
    return {"status": "refused" if code == 2 else "failed", "reason": reason, "committed": [],
            "exit_code": code or 1, "episode": task.episode, "seed": task.seed}


def episode_job(task: EpisodeTask) -> Outcome:
    """Steps 1-3; ``data``: ``{"report": ..., "rows": [index rows of uploaded files]}``."""
    os.makedirs(task.output_dir, exist_ok=True)
    process = subprocess.Popen(list(task.command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=child_environment())  # it ends (commits what it has) if this job dies
    try:
        stdout, stderr = process.communicate()
    except KeyboardInterrupt as exc:  # Ctrl-C, Ray cancelling the task, the driver gone: the episode commits
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate()
        if isinstance(exc, ParentGone):  # nobody is left to read the report: stop here
            raise
    report = report_of(task, process.returncode, stdout, stderr)
    rows: list[dict[str, Any]] = []
    for path in report.get("committed") or []:
        try:
            validate(path)
        except (FormatError, OSError) as exc:
            return Outcome(path, 1, f"invalid after commit: {exc}", {"report": report, "rows": rows})
        if task.upload is not None:
            url = f"{task.upload.rstrip('/')}/{os.path.basename(path)}"
            outcome = upload_job(UploadTask(path, url))
            if outcome.code or outcome.data is None:
                return Outcome(path, outcome.code or 1, outcome.error, {"report": report, "rows": rows})
            rows.append(outcome.data["row"])
    code = int(report.get("exit_code") or 0)
    return Outcome(f"episode {task.episode}", code, report.get("reason") if code else None,
                   {"report": report, "rows": rows})
