"""``fsr record``: delegate to the installed FastSim host (``fastsim.hosts`` entry point).

The plugin never imports a host; the embedded host registers itself as
``fastsim.hosts`` / ``embedded`` (any other installed host serves when it is absent).
Without any host installed the command explains that and exits 2.  Exit codes are the
host's: 0 committed, 1 failed, 2 config.

    | # | options                              | who runs the episodes                      |
    |---|--------------------------------------|--------------------------------------------|
    | 1 | none, or ``--episodes N [--jobs J]`` | the host, exactly as before                |
    | 2 | ``--episodes N --ray [ADDRESS]``     | Ray tasks (``fastsim_record.batch.sweep``):|
    |   | and/or ``--upload URL``              | each records on its node, validates,       |
    |   |                                      | commits there, then uploads (``--upload``) |
    | 3 | ``--ray``/``--upload`` without       | nobody: one line, exit 2                   |
    |   | ``--episodes``, or with ``--jobs`` and ``--ray`` |                              |

Row 2 takes the host's plan (``check_sweep``: the Run checked once, the names and seeds
of its one derivation, ``--resume``'s episodes to record), runs the episodes through
``batch.runner.run_all`` (one progress bar on a terminal) and merges the uploaded
episodes' rows into ``URL/index.parquet`` with ``batch.index.merge_index``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastsim_record.cli._host import HOSTS_GROUP, HostCommand

__all__ = ["add_arguments", "run"]

PREFERRED = "embedded"

_COMMAND = HostCommand(
    command="record",
    entry=PREFERRED,
    missing=f"no FastSim host is installed (entry point group {HOSTS_GROUP})",
    placeholders=(("run", "RUN.yaml"),),
    any_host=True,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The host's arguments, plus ``--ray [ADDRESS]`` and ``--upload URL`` for sweeps."""
    _COMMAND.add_arguments(parser)
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help="a sweep's episodes as Ray tasks (ADDRESS, else RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--upload", default=None, metavar="URL",
                        help="a sweep: upload each committed, validated episode to URL (verified)")


def run(args: argparse.Namespace) -> int:
    """Record on the host, or orchestrate a sweep on the executor port (table row 2)."""
    ray, upload = getattr(args, "ray", None), getattr(args, "upload", None)
    if ray is None and upload is None:
        return _COMMAND.run(args)
    if getattr(args, "episodes", None) is None:
        print("fsr record: --ray and --upload: only with --episodes N", file=sys.stderr)
        return 2
    if ray is not None and getattr(args, "jobs", None) is not None:
        print("fsr record: --jobs and --ray: choose one", file=sys.stderr)
        return 2
    host, why = _COMMAND.host()
    if host is None or not hasattr(host, "worker_command"):
        print(f"fsr record: {why or 'the installed host cannot run a sweep on Ray'}", file=sys.stderr)
        return 2
    return _sweep(host, args)


def _sweep(host: Any, args: argparse.Namespace) -> int:
    from fastsim_record.batch.index import EpisodeIndexError, merge_index, read_index
    from fastsim_record.batch.runner import executor_of, run_all, shows_progress
    from fastsim_record.batch.sweep import EpisodeTask, episode_job

    plan, lines = host.check_sweep(args)  # the host's one derivation of names and seeds
    for line in lines:
        print(line, file=sys.stderr)
    if plan is None:
        return 2
    index_url = f"{args.upload.rstrip('/')}/index.parquet" if args.upload else None
    try:
        old = (read_index(index_url) or {}) if index_url else {}
    except (EpisodeIndexError, OSError, ValueError) as exc:
        print(f"fsr record: --upload: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    tasks = [EpisodeTask(tuple(host.worker_command(args, k, plan.first + k)), k, plan.first + k,
                         str(args.output_dir), args.upload) for k in plan.run]
    outcomes = run_all("fsr record", executor_of(args.jobs, args.ray), episode_job, tasks,
                       idempotent=False, progress=shows_progress(args.json))
    if isinstance(outcomes, int):
        return outcomes
    mine: dict[str, Any] = {}
    for outcome in outcomes:
        for row in (outcome.data or {}).get("rows", []):
            mine[row["path"]] = row
    index_problem = None
    if index_url and (old or mine):
        try:  # merged with the index as it is now: another writer's rows are kept
            merge_index(index_url, mine)
        except EpisodeIndexError as exc:  # the episodes are uploaded; only the index is missing
            index_problem = str(exc)
    code = _report(args, outcomes, plan)
    if index_problem is not None:
        print(f"fsr record: --upload: {index_problem}", file=sys.stderr)
        return max(code, 1)
    return code


def _report(args: argparse.Namespace, outcomes: list[Any], plan: Any) -> int:
    counts = {"committed": 0, "stopped": 0, "failed": 0, "not run": len(plan.held),
              "committed before": len(plan.committed)}
    table = []
    for o in outcomes:
        report = (o.data or {}).get("report", {})
        committed = ", ".join(report.get("committed") or [])
        if o.code == 0:
            counts["committed"] += 1
        elif o.code == 3:
            counts["stopped"] += 1
        else:
            counts["failed"] += 1
        status = "committed" if o.code == 0 else "stopped" if o.code == 3 else "failed"
        detail = committed if o.code == 0 else (o.error or report.get("reason") or "-")
        table.append((str(report.get("episode", "?")), str(report.get("seed", "?")), status,
                      str(detail).splitlines()[0]))
    for k, command in plan.held:
        table.append((str(k), str(plan.first + k), "not run", f"left as .incomplete: {command}"))
    table.sort(key=lambda row: int(row[0]) if row[0].isdigit() else -1)
    code = 1 if counts["failed"] else 3 if counts["stopped"] or plan.held else 0
    if args.json:
        print(json.dumps({"episodes": [(o.data or {}).get("report") for o in outcomes],
                          "exit_code": code, "counts": counts, "uploaded_to": args.upload}, sort_keys=True))
        return code
    where = f", uploaded to {args.upload}" if args.upload else ""
    before = f"{len(plan.committed)} committed before, " if getattr(args, "resume", False) else ""
    held = f", {len(plan.held)} not run" if plan.held else ""
    print(f"sweep of {args.episodes} episode{'' if args.episodes == 1 else 's'}: {before}"
          f"{counts['committed']} committed{where}, "
          f"{counts['stopped']} stopped, {counts['failed']} failed{held}")
    rows = [("episode", "seed", "status", "path or reason"), *table]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])
    return code
