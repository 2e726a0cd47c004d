"""``fsr record RUN.yaml --episodes N [--seed S] [--jobs J]``: many seeded episodes.

Episode k (0-based) has seed S+k and runs in its own process with its own host
(``python -m fastsim_embedded.cli.record --sweep-worker``), at most J at once.  Before
anything runs, every episode's output names are rendered and checked:

    | # | check                                              | on failure              |
    |---|----------------------------------------------------|-------------------------|
    | 1 | the Run compiles; the template renders             | ``path: message``, 2    |
    | 2 | no two episodes share a name                       | one line, 2             |
    | 3 | no final name exists (unless --overwrite) and no   | one line per file, 2    |
    |   | ``<name>.incomplete`` exists                       |                         |

Each finished episode prints one line; the sweep ends with a table (committed,
stopped, failed, not run, with paths).  One failed episode never stops the others.
Exit: 0 every episode committed normally; 1 some episode failed; 3 otherwise
(stopped, or not run because the sweep was stopped).

Signals: the sweep's episodes run in their own sessions; the first SIGTERM/SIGINT/SIGHUP
starts no new episode and forwards the signal to the running ones (they commit what
they have, ``completion: stopped``); further signals are forwarded too.  An episode
ends with the sweep (``fastsim_contract.lifetime``): when the sweep dies, even by
``kill -9``, each running episode gets SIGTERM and commits what it has; none runs on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from fastsim_contract.lifetime import child_environment
from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.cli.signals import StopSignals
from fastsim_embedded.cli.summary import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STOPPED,
    EpisodeReport,
)
from fastsim_embedded.output.names import STAGING_SUFFIX, check_output_name
from fastsim_embedded.session.compile import episode_names

__all__ = ["check_sweep", "run_sweep", "worker_command"]


def worker_command(args: argparse.Namespace, episode: int, seed: int) -> list[str]:
    """The command line of one episode's process."""
    cmd = [
        sys.executable, "-m", "fastsim_embedded.cli.record", str(args.run), "--sweep-worker",
        "--episode", str(episode), "--seed", str(seed), "--output-dir", str(args.output_dir),
        "--no-progress",
    ]
    if args.duration is not None:
        cmd += ["--duration", repr(args.duration)]
    if args.backend is not None:
        cmd += ["--backend", args.backend]
    if args.realtime is not None:
        cmd += ["--realtime", repr(args.realtime)]
    if args.overwrite:
        cmd.append("--overwrite")
    if args.no_portable_sizes:
        cmd.append("--no-portable-sizes")
    return cmd


def _refusals(directory: Path, names: list[tuple[str, ...]], overwrite: bool) -> list[str]:
    lines = []
    for row in names:
        for name in row:
            why = check_output_name(name, directory if directory.is_dir() else None)
            final, staging = directory / name, directory / f"{name}{STAGING_SUFFIX}"
            if why is not None:
                lines.append(f"{final}: {why}")
            elif os.path.lexists(staging):
                lines.append(f"{staging}: a crashed or stopped Run's data is here; it is never deleted or "
                             f"reused: recover it with `fsr recover {staging} -o <NEW.fsr>`, or move it away")
            elif os.path.lexists(final) and not overwrite:
                lines.append(f"{final}: already exists; refusing to overwrite it (pass --overwrite to replace it)")
    return lines


def _from_process(episode: int, seed: int, code: int, stdout: str, stderr: str) -> EpisodeReport:
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return EpisodeReport.from_json({**data, "episode": episode, "seed": seed})
    text = stderr.strip().splitlines()
    reason = text[-1] if text else f"the episode process exited with code {code}"
    status = "refused" if code == EXIT_CONFIG else "failed"
    return EpisodeReport(status, None, reason, exit_code=code or EXIT_FAILED, seed=seed, episode=episode)


class _Sweep:
    """The running sweep: a bounded set of episode processes and their reports."""

    def __init__(self, args: argparse.Namespace, first_seed: int, count: int, jobs: int,
                 say: Callable[[str], None]) -> None:
        self.args, self.first_seed, self.count, self.jobs, self.say = args, first_seed, count, jobs, say
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)
        self.running: dict[int, subprocess.Popen[str]] = {}
        self.reports: dict[int, EpisodeReport] = {}
        self.stopping = False

    def on_signal(self, signum: int, count: int) -> None:
        name = signal.Signals(signum).name
        with self.lock:
            self.stopping = True
            running = list(self.running.values())
        if count == 1:
            self.say(f"fsr record: {name}: stopping the sweep; running episodes commit what they have, "
                     "no new episode starts")
        for process in running:
            with contextlib.suppress(OSError):
                process.send_signal(signum)

    def _watch(self, episode: int, process: subprocess.Popen[str]) -> None:
        stdout, stderr = process.communicate()
        report = _from_process(episode, self.first_seed + episode, process.returncode, stdout, stderr)
        self.say(f"episode {episode} (seed {report.seed}): {report.line()}")
        with self.lock:
            self.running.pop(episode, None)
            self.reports[episode] = report
            self.done.notify_all()

    def run(self) -> None:
        for episode in range(self.count):
            with self.lock:
                while len(self.running) >= self.jobs and not self.stopping:
                    self.done.wait(0.5)
                if self.stopping:
                    break
                process = subprocess.Popen(
                    worker_command(self.args, episode, self.first_seed + episode),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    start_new_session=True, env=child_environment(),  # ends with the sweep
                )
                self.running[episode] = process
            threading.Thread(target=self._watch, args=(episode, process), daemon=True).start()
        with self.lock:
            while self.running:
                self.done.wait(0.5)


def _table(reports: list[EpisodeReport]) -> list[str]:
    rows = [("episode", "seed", "status", "path or reason")]
    for r in reports:
        status = "committed" if r.status == "succeeded" else r.status
        detail = ", ".join(r.committed) if r.committed else (r.reason or "-")
        rows.append((str(r.episode), str(r.seed), status, detail.splitlines()[0] if detail else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]


def check_sweep(args: argparse.Namespace) -> tuple[int | None, list[str]]:
    """Checks 1-3 of the module table: the first seed, or ``None`` and the lines that say
    why nothing may run (also used by a sweep orchestrated elsewhere, e.g. on Ray)."""
    try:
        first, names = episode_names(args.run, backend=args.backend, seed=args.seed, episodes=args.episodes)
    except RunConfigError as exc:
        return None, [str(issue) for issue in exc.issues]
    except Exception as exc:
        return None, [f"fsr record: {args.run}: {type(exc).__name__}: {exc}".splitlines()[0]]
    if first + args.episodes - 1 > 2**63 - 1:
        return None, [f"--seed: the sweep's last seed would be over 2**63-1 (first {first})"]
    refused = _refusals(Path(args.output_dir), names, args.overwrite)
    if refused:
        lines = [f"fsr record: {line}" for line in refused[:10]]
        if len(refused) > 10:
            lines.append(f"fsr record: ... and {len(refused) - 10} more files; nothing was recorded")
        return None, lines
    return first, []


def run_sweep(args: argparse.Namespace) -> int:
    """Record ``args.episodes`` episodes; never raise."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    first_or_none, lines = check_sweep(args)
    for line in lines:
        err.print(line, markup=False)
    if first_or_none is None:
        return EXIT_CONFIG
    first = first_or_none
    jobs = min(args.jobs or os.cpu_count() or 1, args.episodes)
    say_console = err if args.json else out

    def say(text: str) -> None:
        say_console.print(text, markup=False)

    sweep = _Sweep(args, first, args.episodes, jobs, say)
    stop = StopSignals(on_signal=sweep.on_signal).install()
    try:
        sweep.run()
    finally:
        if not getattr(args, "owns_process", False):
            stop.close()
    reports = [
        sweep.reports.get(k) or EpisodeReport("not run", None, "the sweep was stopped first",
                                              exit_code=EXIT_STOPPED, seed=first + k, episode=k)
        for k in range(args.episodes)
    ]
    counts = {key: sum(1 for r in reports if r.status == key)
              for key in ("succeeded", "stopped", "cancelled", "failed", "refused", "not run")}
    failed = counts["failed"] + counts["refused"]
    code = EXIT_FAILED if failed else EXIT_STOPPED if len(reports) != counts["succeeded"] else EXIT_OK
    if args.json:
        sys.stdout.write(json.dumps({"episodes": [r.to_json() for r in reports], "exit_code": code,
                                     "counts": counts}, sort_keys=True) + "\n")
        return code
    out.print(
        f"sweep of {len(reports)} episode{'' if len(reports) == 1 else 's'}: {counts['succeeded']} committed, "
        f"{counts['stopped'] + counts['cancelled']} stopped, {failed} failed, {counts['not run']} not run",
        markup=False,
    )
    for line in _table(reports):
        out.print(line, markup=False)
    return code
