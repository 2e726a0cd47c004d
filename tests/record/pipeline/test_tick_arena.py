"""The tick arena (issue 26, ``fastsim_contract.arena``): Core copies each packed tick it
must copy (here: a backend that does not freeze its buffer) into the next row of one
block, the worker writes a run of rows as one existing memory range.  The file is the
same as with a private copy per tick; a row is never refilled while any object (a lane,
a pending batch, a consumer's view) still holds its tick."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
import yaml

import fastsim_embedded.host.observations as observations
import fastsim_record.adapters.numeric_columns as numeric_columns
from fastsim_contract.arena import TickArena, tick_arena_of
from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.output import leases
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_recording_format.reader import FsrReader

RECORD = "plugin://fastsim/record"


def _record(
    tmp_path: Path, name: str, *, seconds: float = 3.0, reset_every_s: float | None = None,
    config: dict[str, Any] | None = None, realtime_factor: float | None = None,
) -> Path:
    synthetic: dict[str, Any] = {"numeric_channels": 90, "command_every_s": 0.5, "event_every_s": 0.7}
    if reset_every_s is not None:
        synthetic["reset_every_s"] = reset_every_s
    document = {
        "schema": "fastsim/2", "name": "arena", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}, "synthetic": synthetic}},
        "runtime": {"sensor_hz": 120.0},
        "plugins": {"record": {"use": RECORD, **({"config": config} if config else {})}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    ids = (uuid.UUID(int=k) for k in itertools.count(1))  # the same run id for every Run
    clock = itertools.count(1_800_000_000_000_000_000, 1_000_000)  # and the same wall clock
    with mock.patch("uuid.uuid4", side_effect=lambda: next(ids)), \
            mock.patch("fastsim_embedded.host.core.time.time_ns", side_effect=lambda: next(clock)), \
            mock.patch("fastsim_embedded.session.session.time.time_ns", side_effect=lambda: next(clock)):
        result = run_session(prepare_run(path, duration_s=seconds), tmp_path / name, realtime_factor=realtime_factor)
    assert result.outcome.status == "succeeded", result.outcome.reason
    return tmp_path / name / "episode.fsr"


def _records(path: Path) -> list[tuple[Any, ...]]:
    with FsrReader(path) as reader:
        return [
            (r.stream_id, int(r.kind), r.global_sequence, r.stream_sequence, r.generation, r.sim_time_ns,
             bytes(r.payload), r.metadata)
            for r in reader.records()
        ]


def _batches(path: Path) -> list[bytes]:
    """Every batch's bytes (header, record table, metadata, payload) as written."""
    data = path.read_bytes()
    with FsrReader(path) as reader:
        index = reader.batch_index
        return [data[int(row["offset"]):int(row["offset"]) + int(row["length"])] for row in index]


@pytest.fixture(autouse=True)
def _writable_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The synthetic backend hands out a writable packed buffer: Core copies each tick."""
    packed = SyntheticBackend.sample_numeric_packed
    monkeypatch.setattr(SyntheticBackend, "sample_numeric_packed", lambda self: np.array(packed(self)))


def _arena_hits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    hits: list[int] = []
    arena_columns = numeric_columns._arena_columns

    def counting(*args: Any) -> Any:
        out = arena_columns(*args)
        if out is not None:
            hits.append(out.count)
        return out

    monkeypatch.setattr(numeric_columns, "_arena_columns", counting)
    return hits


def _no_arena(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observations, "ARENA_ROWS", 0)


@pytest.mark.parametrize("reset_every_s", [None, 1.0], ids=["one-generation", "resets"])
def test_arena_and_private_copies_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reset_every_s: float | None
) -> None:
    """Same seeded Run, written from arena ranges and from private copies: every batch has
    the same bytes (so every record, every table, every CRC), across generation barriers."""
    hits = _arena_hits(monkeypatch)
    arena = _record(tmp_path, "arena", reset_every_s=reset_every_s)
    assert sum(hits) > 300, "the worker took no run from the arena"
    with monkeypatch.context() as m:
        _no_arena(m)
        before = len(hits)
        copies = _record(tmp_path, "copies", reset_every_s=reset_every_s)
        assert len(hits) == before, "an arena was used with ARENA_ROWS = 0"
    a, b = _batches(arena), _batches(copies)
    assert len(a) == len(b) > 3
    assert a == b
    assert arena.read_bytes() == copies.read_bytes()
    if reset_every_s is not None:
        assert len({r[4] for r in _records(arena)}) >= 3  # generations: barriers split the runs


def test_a_slow_worker_never_sees_a_refilled_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny arena and a slow output: the simulation waits on the flow gauge while the
    lanes and pending batches hold many more ticks than the arena has rows.  A busy row
    is never refilled (the tick gets a private copy), so nothing is lost or changed."""
    with monkeypatch.context() as m:
        _no_arena(m)
        expected = _records(_record(tmp_path, "copies", seconds=5.0))
    monkeypatch.setattr(observations, "ARENA_ROWS", 96)  # fewer rows than the ticks in flight
    hits = _arena_hits(monkeypatch)
    busy: list[int] = []
    take = TickArena.take

    def counting_take(self: TickArena, slot: int, buffer: Any) -> Any:
        out = take(self, slot, buffer)
        if out is None:
            busy.append(slot)
        return out

    monkeypatch.setattr(TickArena, "take", counting_take)
    write = leases.FileWriteLease.write

    def slow(self: Any, data: Any) -> Any:
        time.sleep(0.004)  # a slow disk: the worker falls far behind the simulation
        return write(self, data)

    monkeypatch.setattr(leases.FileWriteLease, "write", slow)
    seen = _records(_record(tmp_path, "slow", seconds=5.0))
    assert hits, "no run came from the arena"
    assert busy, "no row was still held when its turn came"
    assert seen == expected


def test_lost_ticks_become_exact_gaps_and_kept_ticks_keep_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paced Run whose small ``drop_oldest`` numeric lane overflows behind a slow output
    (optional channels in another order than the backend's: the gather copy goes into the
    arena): evicted ticks release their rows early, the kept ones are not all consecutive
    rows (the worker takes the per-record path there), every kept tick has its own bytes
    and every lost one is covered by a GAP record."""
    include = {alias: {"channel": channel, "required": False} for alias, channel in (
        ("v", "robot_1.joint_velocity"), ("p", "robot.joint_position"), ("b", "robot_2.base_pose"))}
    streams = {"observations": {"mode": "explicit", "include": include}}
    with monkeypatch.context() as m:
        _no_arena(m)
        lossless = _record(tmp_path, "lossless", seconds=2.0, config={"streams": streams})
        expected = {r[3]: r[:7] for r in _ticks(lossless)}
    write = leases.FileWriteLease.write

    def slow(self: Any, data: Any) -> Any:
        time.sleep(0.02)  # per write: a batch of 16 ticks now takes longer than 16 ticks
        return write(self, data)

    monkeypatch.setattr(leases.FileWriteLease, "write", slow)
    config = {"streams": streams, "batching": {"max_items": 16},
              "queues": {"numeric": {"max_items": 24, "max_bytes": 1 << 28, "overload": "drop_oldest"}}}
    seen = _ticks(_record(tmp_path, "lossy", seconds=2.0, config=config, realtime_factor=4.0))
    gaps = [r for r in seen if r[1] == 1]
    assert gaps, "nothing was lost"
    kept = [r for r in seen if r[1] == 0]
    assert all(r[:7] == expected[r[3]] for r in kept)  # same tick, same bytes, same facts
    lost = {s for r in gaps for s in range(r[3], r[3] + int(r[7]["lost"]))}  # stream sequences
    assert lost.isdisjoint(r[3] for r in kept)
    assert lost | {r[3] for r in kept} == set(expected)


def _ticks(path: Path) -> list[tuple[Any, ...]]:
    """The observation stream's records (data and gaps)."""
    with FsrReader(path) as reader:
        stream = reader.stream("observations").stream_id
    return [r for r in _records(path) if r[0] == stream and r[1] != 2]


def test_a_held_slot_is_not_refilled() -> None:
    """Rule A2 on the arena itself: a slot, a view derived from it, a memoryview of it or
    numpy's base under it each keep the row; dropped, the row is free again."""
    tick = np.arange(630, dtype=np.float64)
    for like in (tick, tick.reshape(90, 7)):
        arena = TickArena(4, like, ("a",), None)
        slot = arena.take(0, like)
        assert slot is arena.slots[0]
        assert not slot.flags.writeable
        assert tick_arena_of(slot) is arena
        assert arena.take(0, like + 1) is None  # held by ``slot``
        del slot
        holds: list[Callable[[Any], Any]] = [
            lambda s: s[3:5], lambda s: s.reshape(-1).view(np.uint8), lambda s: s.data, lambda s: s.base,
        ]
        for hold in holds:
            held = hold(arena.slots[1])
            assert arena.take(1, like + 2) is None
            assert arena.take_bytes(1) is None
            del held
            assert arena.take(1, like + 2) is arena.slots[1]
        assert bytes(arena.payload(1, 2)) == (like + 2).tobytes()
        assert bytes(arena.payload(0, 1)) == like.tobytes()  # the refused copy changed nothing
        with pytest.raises(ValueError, match="WRITEABLE"):
            arena.slots[2][:].flags.writeable = True
        assert tick_arena_of(like) is None
