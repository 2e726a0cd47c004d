"""``actions()``: the commanded action of each observation tick, from the control audit.

A policy dataset pairs observation ``k`` with the action chosen after it (LeRobot's and
Gymnasium's convention).  Where that action is in a file depends on who stepped:

    | # | recording                       | the action of observation k                       |
    |---|---------------------------------|---------------------------------------------------|
    | 1 | a FastSim Run (scripted, or     | the first ``command.issued`` (``control.audit``)  |
    |   | driven through ``FastSimRun-v0``)| after it: simulation time in ``(t_k, t_k+1]`` of  |
    |   |                                 | the same generation (a tick audits and applies    |
    |   |                                 | its commands *before* it steps and observes)      |
    | 2 | a stream with per-step channels | the first command in ``[t_k, t_k+1)``: tick k     |
    |   | (a Gymnasium recording)         | holds observation k and the step taken from it    |
    | 3 | a Gymnasium recording with a    | that channel (rule 2's timing; per-step, so the   |
    |   | per-step ``action`` channel, or | last tick of each generation has none); the       |
    |   | ``action.<path>`` channels (a   | default there, whatever the audit holds.  Dict    |
    |   | Dict or Tuple action space)     | and Tuple leaves are joined in the order the file |
    |   |                                 | declares them (the space's), each cast to float64 |

A command is an action when its arguments hold one numeric value or vector (``targets``
of ``set_joint_targets``).  Which command (``<target>.<command>``): ``command=``, else the
first control the Run declares (``attributes.controls``, what a driver may command) that
the file holds, else the one such command the file holds.  Element names and units come
from the declared control, else ``<arg>[i]``.

Marking (``Actions``): ``values`` is float64 ``(T, n)``, one row per observation tick of the
clock stream; a tick after which nothing was commanded (every generation's last one,
for example) is a NaN row with ``issued`` false.  A command the scene refused (its
``control.result`` says ``accepted: false``) keeps the values that were commanded, with
``accepted`` false; a command without a recorded result counts as accepted.  Commands
before a generation's first observation are no observation's action; when several fall
after one observation (observations recorded every n-th tick), the first is its action.
Control records are read with :func:`~.decoded.iter_decoded`, the one decoder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format.reading._errors import BadArgument, BadRecording, UnknownName
from fastsim_recording_format.reading._file import Array, Scope
from fastsim_recording_format.reading._numeric import Numeric, step_ticks
from fastsim_recording_format.reading.decoded import JsonRecord, iter_decoded

__all__ = ["Actions", "Command", "actions_of", "align", "command_vector", "commands_of", "element_labels"]

GYM_ACTION = "action"  # the Gymnasium backend's per-step action channel


@attrs.frozen(eq=False)
class Actions:
    """The commanded action of each observation tick (module table: rules and marking).

    ``values[k]`` was chosen after the observation at ``time_ns[k]`` of ``generation[k]``;
    ``issued[k]``: a command followed that observation (else ``values[k]`` is NaN);
    ``accepted[k]``: issued and not refused by the scene.  ``command`` is
    ``<target>.<command>``, or ``action`` for a Gymnasium recording's channel."""

    command: str
    time_ns: Array  # int64 (T,)
    generation: Array  # int64 (T,)
    values: Array  # float64 (T, n)
    names: tuple[str, ...]
    units: tuple[str, ...]
    issued: Array  # bool (T,)
    accepted: Array  # bool (T,)

    def __len__(self) -> int:
        return len(self.time_ns)


@attrs.frozen(eq=False)
class Command:
    """One issued command carrying one numeric vector, and whether the scene accepted it."""

    key: str  # <target>.<command>
    time_ns: int
    generation: int
    arg: str
    values: list[float]
    accepted: bool


def command_vector(data: Mapping[str, Any]) -> tuple[str, list[float]] | None:
    """``(arg, values)`` of a ``command.issued`` record whose arguments hold exactly one
    numeric value or vector (``None`` otherwise)."""
    if data.get("event") != "command.issued":
        return None
    args = data.get("args")
    if not isinstance(args, Mapping):
        return None
    found = []
    for key, value in args.items():
        items = value if isinstance(value, list) else [value]
        if items and all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            found.append((str(key), [float(v) for v in items]))
    return found[0] if len(found) == 1 else None


def commands_of(records: Iterable[JsonRecord]) -> list[Command]:
    """The vector commands of control records in recording order, each with its outcome."""
    issued: list[tuple[str, Command]] = []
    refused: set[str] = set()
    for r in records:
        data = r.data
        if r.stream == "control.result":
            if data.get("accepted") is False:
                refused.add(str(data.get("command_id")))
            continue
        got = command_vector(data)
        if got is not None:
            key = f"{data.get('target')}.{data.get('command')}"
            issued.append((str(data.get("command_id")), Command(key, r.time_ns, r.generation, got[0], got[1], True)))
    return [attrs.evolve(c, accepted=False) if cid in refused else c for cid, c in issued]


def declared(attributes: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The Run's declared controls (``attributes.controls``), in order."""
    return [c for c in attributes.get("controls") or () if isinstance(c, Mapping)]


def element_labels(control: Mapping[str, Any], arg: str, n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(names, units)`` of an ``n``-element command: the declared control's, else
    ``<arg>[i]`` and no unit."""
    names, units = control.get("element_names"), control.get("units")
    return (
        tuple(str(v) for v in names) if isinstance(names, list) and len(names) == n
        else tuple(f"{arg}[{i}]" for i in range(n)),
        tuple(str(v) for v in units) if isinstance(units, list) and len(units) == n else ("",) * n,
    )


def align(
    tick_time: Array, tick_gen: Array, commands: list[Command], width: int, *, same_tick: bool,
) -> tuple[Array, Array, Array]:
    """``(values (T, width), issued, accepted)``: each command given to the observation it
    follows (rule 1, or rule 2 with ``same_tick``); ticks are in recording order."""
    n = len(tick_time)
    values = np.full((n, width), np.nan)
    issued = np.zeros(n, bool)
    accepted = np.zeros(n, bool)
    if not commands or not n:
        return values, issued, accepted
    gens = np.asarray(tick_gen, np.int64)
    times = np.asarray(tick_time, np.int64)
    for g in np.unique(gens).tolist():
        rows = np.flatnonzero(gens == g)
        mine = [c for c in commands if c.generation == g]
        if not mine:
            continue
        at = np.array([c.time_ns for c in mine], np.int64)
        k = np.searchsorted(times[rows], at, side="right" if same_tick else "left") - 1
        for j in np.flatnonzero(k >= 0).tolist():
            row = int(rows[k[j]])
            if issued[row]:
                continue  # the first command after an observation is its action
            c = mine[j]
            if len(c.values) != width:
                raise BadRecording(f"command {c.key} at {c.time_ns} ns has {len(c.values)} values, not {width}")
            values[row] = c.values
            issued[row] = True
            accepted[row] = c.accepted
    return values, issued, accepted


def _choose(commands: list[Command], controls: list[Mapping[str, Any]], command: str | None,
            where: str) -> tuple[str, Mapping[str, Any]]:
    recorded = list(dict.fromkeys(c.key for c in commands))
    keys = {f"{c.get('target')}.{c.get('command')}": c for c in controls}
    if command is not None:
        if not isinstance(command, str):
            raise BadArgument(f"command must be a string '<target>.<command>', got {type(command).__name__}")
        if command not in recorded and command not in keys:
            raise UnknownName(f"unknown command {command!r} in {where}; commands with one numeric argument: "
                              f"{', '.join(recorded + [k for k in keys if k not in recorded]) or '(none)'}")
        return command, keys.get(command, {})
    for key, control in keys.items():
        if key in recorded:
            return key, control
    if len(recorded) == 1:
        return recorded[0], {}
    if len(recorded) > 1:
        raise BadArgument(f"{where}: several commands carry a numeric argument ({', '.join(recorded)}); "
                          "pass command='<target>.<command>'")
    if keys:
        key = next(iter(keys))
        return key, keys[key]
    raise UnknownName(f"no commanded action in {where}: no control.audit command carries one numeric "
                      "argument, and the Run declares no controls")


def actions_of(scope: Scope, attributes: Mapping[str, Any], command: str | None = None,
               clock: str | None = None) -> Actions:
    """The actions of a view's ticks (module table); ``clock``: a numeric channel whose
    stream's ticks they align with (default: the Gymnasium ``action`` channel, else the
    first numeric channel)."""
    f = scope.file()
    if clock is not None and clock not in f.channels:
        raise UnknownName(f"unknown numeric channel {clock!r} (the clock of actions()) in {scope.where()}")
    gym = _gym_action_channels(f.channels)
    if command is None and gym and (clock is None or f.channels[clock][0] == f.channels[gym[0]][0]):
        return _channel_actions(scope, gym)
    if not f.channels:
        raise UnknownName(f"{scope.where()} has no numeric channel: actions() aligns with observation ticks")
    spec = f.channels[clock or next(iter(f.channels))][0]
    ticks = scope.data_rows(spec)
    reader = f.tables.reader
    control = [s.name for s in reader.streams if s.kind == "control"]
    records = iter_decoded(reader, control, verify=f.tables.verify) if control else iter(())
    every = commands_of(r for r in records if isinstance(r, JsonRecord))
    key, control_decl = _choose(every, declared(attributes), command, scope.where())
    chosen = [c for c in every if c.key == key]
    width = len(chosen[0].values) if chosen else len(control_decl.get("element_names") or ())
    same_tick = any(ch.per_step for s, _, ch in f.channels.values() if s.stream_id == spec.stream_id)
    values, issued, accepted = align(ticks["time_ns"], ticks["generation"], chosen, width, same_tick=same_tick)
    arg = chosen[0].arg if chosen else str(control_decl.get("arg", "action"))
    names, units = element_labels(control_decl, arg, width)
    return Actions(key, np.asarray(ticks["time_ns"], np.int64), np.asarray(ticks["generation"], np.int64), values,
                   names, units, issued, accepted)


def _gym_action_channels(channels: Mapping[str, Any]) -> list[str]:
    """Rule 3's channels: the per-step ``action`` channel, else the per-step
    ``action.<path>`` leaves of one stream in declaration order (none: ``[]``)."""
    whole = channels.get(GYM_ACTION)
    if whole is not None:
        return [GYM_ACTION] if whole[2].per_step else []
    leaves = [name for name, (_, _, ch) in channels.items() if name.startswith(GYM_ACTION + ".") and ch.per_step]
    if not leaves or len({channels[name][0].stream_id for name in leaves}) != 1:
        return []
    return leaves


def _channel_actions(scope: Scope, names: list[str]) -> Actions:
    """Rule 3: a Gymnasium recording's per-step action channel(s) on every tick of their stream."""
    f = scope.file()
    ticks = scope.data_rows(f.channels[names[0]][0])
    keep = step_ticks(ticks["generation"])
    numeric = Numeric(scope)
    parts: list[Array] = []
    labels: list[str] = []
    units: list[str] = []
    for name in names:
        series = numeric.series(name)
        parts.append(np.asarray(series.values, np.float64).reshape(len(series), -1))
        labels.extend(series.names)
        units.extend(series.units)
    width = sum(part.shape[1] for part in parts)
    values = np.full((len(ticks), width), np.nan)
    values[keep] = np.concatenate(parts, axis=1) if parts else np.empty((int(keep.sum()), 0))
    return Actions(GYM_ACTION, np.asarray(ticks["time_ns"], np.int64), np.asarray(ticks["generation"], np.int64),
                   values, tuple(labels), tuple(units), keep, keep.copy())
