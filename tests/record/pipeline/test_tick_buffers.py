"""A numeric run's payload is its tick buffers (issue 26, w26): never joined, written to the
file with one vectored lease write.  The file is byte for byte the one the joined-copy path
(main before this change) writes for the same seeded Run."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest
import yaml

import fastsim_record.adapters.numeric_columns as numeric_columns
from fastsim_contract.samples import PackedLayout, PackedValues
from fastsim_embedded.output.leases import FileWriteLease
from fastsim_embedded.session import loop
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.adapters.fsr_sink import LeaseWriter

RECORD = "plugin://fastsim/record"


def _record(tmp_path: Path, name: str, *, reset_every_s: float | None = None, output: dict[str, Any] | None = None) -> bytes:
    synthetic: dict[str, Any] = {"numeric_channels": 90, "command_every_s": 0.5, "event_every_s": 0.7}
    if reset_every_s is not None:
        synthetic["reset_every_s"] = reset_every_s
    document = {
        "schema": "fastsim/2", "name": "ticks", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}, "synthetic": synthetic}},
        "runtime": {"sensor_hz": 120.0, **({"output": output} if output else {})},
        "plugins": {"record": {"use": RECORD}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    ids = (uuid.UUID(int=k) for k in itertools.count(1))  # the same run id for every Run
    clock = itertools.count(1_800_000_000_000_000_000, 1_000_000)  # and the same wall clock
    with mock.patch("uuid.uuid4", side_effect=lambda: next(ids)), \
            mock.patch("fastsim_embedded.host.core.time.time_ns", side_effect=lambda: next(clock)), \
            mock.patch("fastsim_embedded.session.session.time.time_ns", side_effect=lambda: next(clock)):
        result = run_session(prepare_run(path, duration_s=3.0), tmp_path / name)
    assert result.outcome.status == "succeeded", result.outcome.reason
    return (tmp_path / name / "episode.fsr").read_bytes()


def _joined_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Main's code path: every run's tick buffers joined into one copy, one write per part."""
    monkeypatch.setattr(numeric_columns, "_FLAGS", lambda buffer: None)  # rule 5 never holds
    monkeypatch.delattr(LeaseWriter, "writev")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The parts of every vectored lease write."""
    parts: list[int] = []
    writev = FileWriteLease.writev

    def counting(self: FileWriteLease, chunk: Any, nbytes: int) -> int:
        parts.append(len(chunk))
        return writev(self, chunk, nbytes)

    monkeypatch.setattr(FileWriteLease, "writev", counting)
    return parts


@pytest.mark.parametrize("case", [
    {}, {"reset_every_s": 1.0}, {"output": {"payload_crc": True}},
], ids=["steady", "resets", "payload-crc"])
def test_tick_buffers_write_the_same_file_as_the_joined_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: dict[str, Any]
) -> None:
    """The same seeded Run written from unjoined tick buffers and from joined copies is one file."""
    monkeypatch.setattr(loop, "SCRIPTED_MAX_BLOCK", 1)  # per-tick envelopes: the tick-buffer path
    parts = _counting(monkeypatch)
    ours = _record(tmp_path, "buffers", **case)
    assert parts, "no vectored write"
    assert max(parts) > 100, "no batch went out as one vectored write of its tick buffers"
    with monkeypatch.context() as m:
        _joined_path(m)
        main = _record(tmp_path, "joined", **case)
    assert len(ours) == len(main) > 100_000
    assert ours == main


def test_a_writable_tick_buffer_is_joined_at_once() -> None:
    """Rule 5: a buffer someone may still write is copied when the run is formed, not written later."""
    layout = PackedLayout((("<f8", (2,)),))
    frozen = np.arange(2.0)
    frozen.flags.writeable = False
    writable = np.arange(2.0) + 10

    def Carrier(k: int, buffer: Any) -> Any:  # a carrier is its contract envelope; only its fields are read
        block = SimpleNamespace(channels=("a",), values=PackedValues(buffer, layout), channel_sequence=k)
        return SimpleNamespace(
            global_sequence=k, source_sequence=k, sim_time_ns=10 * k, generation=0,
            payload=SimpleNamespace(samples=block),
        )

    def columns(*carriers: Any) -> Any:
        return numeric_columns.numeric_columns("obs", ("a",), 16, lambda lay: lay is layout, carriers)

    run = columns(Carrier(1, frozen), Carrier(2, frozen))
    assert run is not None
    assert isinstance(run.payload, tuple)
    assert run.payload[0] is frozen
    assert run.part(1, 2).payload == (frozen,)
    mixed = columns(Carrier(1, frozen), Carrier(2, writable))
    assert mixed is not None
    assert isinstance(mixed.payload, bytes)
    writable[:] = -1.0  # written after the run was formed: the run keeps the bytes it took
    assert mixed.payload == np.arange(2.0).tobytes() + (np.arange(2.0) + 10).tobytes()
