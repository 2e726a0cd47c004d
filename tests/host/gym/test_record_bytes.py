"""Record's cheaper paths for a driven Run (perf41) write the very bytes of the plain ones.

A driven step is three records: the observation tick between the two command events.
Two paths make them cheaper and must not change a byte of the committed files:

  * the command events' JSON written from the host-frozen payload, each ``FloatRow``
    (the targets) from the text its sizing kept (``payloads._frozen_json``), else from
    one reused C encoder per stream instead of ``json.dumps`` building one per record;
  * the tick, apart from the stream's other ticks in the global sequence, built per
    record instead of as a one-record column run (``columns`` row 2b, perf42);
  * a one-record column run handed to the writer as a row instead of a one-record
    block (``fsr_columns._row``);
  * the batch, rows alone, built segment by segment (``_segment_batch``) instead of
    column-wise (``assemble``).

The same seeded episodes (a refused action, a reset, a closed episode) are driven with
every path, with every path but row 2b, and with none, under the same run ids and wall
clock; every file is compared byte for byte, and each path must have been taken.
"""

from __future__ import annotations

import enum
import itertools
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

import fastsim_record.adapters.fsr_columns as fsr_columns
import fastsim_record.adapters.payloads as payloads
import fastsim_recording_format.writer as writer_module
from fastsim_embedded.gym import FastSimRunEnv
from fastsim_record.errors import RecordingFailed
from fastsim_record.pipeline.columns import RunBuilder
from fastsim_recording_format._segment_batch import segment_batch
from fastsim_recording_format.encoding import canonical_json

from .conftest import reach_run


class _Level(enum.IntEnum):
    """An int subclass: the fast path leaves it to the C encoder."""

    HIGH = 3


def _drive(folder: Path, run: Path) -> list[bytes]:
    """Two episodes of seeded random actions (one out of bounds), then ``close``: the committed files' bytes."""
    ids = (uuid.UUID(int=k) for k in itertools.count(1))
    clock = itertools.count(1_800_000_000_000_000_000, 1_000_000)
    with mock.patch("uuid.uuid4", side_effect=lambda: next(ids)), \
            mock.patch("time.time_ns", side_effect=lambda: next(clock)):
        env = FastSimRunEnv(run, folder)
        env.action_space.seed(7)
        for episode in range(2):
            env.reset(seed=3 + episode)
            for k in range(40):
                action = env.action_space.sample()
                if k == 5:
                    with pytest.raises(ValueError, match="action"):
                        env.step(np.full_like(action, 1e6))  # refused: nothing recorded
                env.step(action)
        env.close()
    return [Path(p).read_bytes() for p in env.committed]


def test_driven_run_files_are_byte_identical_with_and_without_the_fast_paths(tmp_path: Path) -> None:
    """Rows for lone ticks, batches of rows by segments, the targets' kept text, a reused encoder: the same files, byte for byte."""
    run = reach_run(tmp_path, duration_s=100.0)
    rows: list[bool] = []
    encodes: list[bool] = []
    segments: list[bool] = []
    row = fsr_columns._row
    encode = payloads.JsonEncoder.encode
    segment = segment_batch

    def counting_segment(*args: Any) -> Any:
        made = segment(*args)
        segments.append(made is not None)
        return made

    def counting_row(*args: Any) -> Any:
        made = row(*args)
        rows.append(made is not None)
        return made

    frozen_json = payloads._frozen_json
    frozen: list[int] = []

    def counting_encode(self: payloads.JsonEncoder, payload: object) -> bytes:
        encodes.append(self._c is not None)
        return encode(self, payload)

    def counting_frozen(payload: Any) -> str:
        text = frozen_json(payload)
        frozen.append(text.count("[") if '"targets":[' in text else 0)
        return text

    apart: dict[int, int] = {}  # builder (one per episode) -> its ticks built apart
    split = RunBuilder.split

    def counting_split(self: RunBuilder, items: list[Any], materialize: Any) -> Any:
        out = split(self, items, materialize)
        apart[id(self)] = self.apart
        return out

    with mock.patch.object(fsr_columns, "_row", counting_row), \
            mock.patch.object(payloads.JsonEncoder, "encode", counting_encode), \
            mock.patch.object(writer_module, "segment_batch", counting_segment), \
            mock.patch.object(payloads, "_frozen_json", counting_frozen), \
            mock.patch.object(RunBuilder, "split", counting_split):
        fast = _drive(tmp_path / "fast", run)
    assert sum(1 for n in frozen if n) >= 70, "the targets written from their kept text"
    assert sum(apart.values()) >= 70, f"ticks built apart (row 2b): {apart}"
    assert sum(encodes) >= 160, f"payloads through the reused encoder: {sum(encodes)} of {len(encodes)}"
    assert sum(segments) >= 2, f"batches built segment by segment: {sum(segments)} of {len(segments)}"
    rows.clear()
    with mock.patch.object(fsr_columns, "_row", counting_row), \
            mock.patch.object(RunBuilder, "_apart", return_value=False):  # every tick a run of one
        runs = _drive(tmp_path / "runs", run)
    assert sum(rows) >= 70, f"lone ticks written as rows: {sum(rows)} of {len(rows)}"
    with mock.patch.object(fsr_columns, "_row", return_value=None), \
            mock.patch.object(RunBuilder, "_apart", return_value=False), \
            mock.patch.object(payloads, "_C_ENCODER", None), \
            mock.patch.object(writer_module, "segment_batch", return_value=None), \
            mock.patch.object(payloads, "_frozen_json", side_effect=TypeError):
        plain = _drive(tmp_path / "plain", run)
    assert len(fast) == len(runs) == len(plain) == 2
    assert [len(f) for f in fast] == [len(r) for r in runs] == [len(p) for p in plain]
    assert fast == runs == plain


@pytest.mark.parametrize("payload", [
    {"event": "command.issued", "command_id": "gym-1", "args": {"targets": [0.1, -2.5e-17, 3.0]}},
    {"event": "x", "data": {"ü": "ß", "n": None, "t": True, "i": -(2**70), "nested": [{"b": 1, "a": [1, 2.5]}]}},
    {"a": np.float32(0.25), "b": np.arange(3), "c": (1, 2), "d": frozenset({4})},
    {},
])
def test_the_reused_encoder_writes_canonical_json(payload: dict[str, Any]) -> None:
    """The reused C encoder's text is ``canonical_json(..., default=_jsonable)``'s, call after call."""
    encoder = payloads.JsonEncoder("s")
    expected = canonical_json(payload, default=payloads._jsonable)
    assert encoder.encode(payload) == encoder.encode(payload) == expected


@pytest.mark.parametrize("data", [
    {"targets": [0.1, -2.5e-300, 3.0, 5e-324, -0.0]},
    {"actuators": ["joint1", "fingers\u00e9"], "ctrl": [0.5, -1e-7, 255.0]},
    {"a": None, "b": True, "c": False, "d": -7, "e": "x\n\u2028", "f": 10**40, "g": 2.5, "h": []},
    {"nested": {"z": [1.0], "a": ("p", "q")}, "t": (1, 2)},
    {"k": 1e300, "inf": 1.0, "n": [True]},
])
def test_a_frozen_payload_is_written_as_canonical_json(data: dict[str, Any]) -> None:
    """A host-frozen payload (``FloatRow`` targets) is written from its kept text as the C encoder writes it; anything else by that encoder."""
    from fastsim_contract.payloads import FrozenDict, freeze_sized

    frozen, _ = freeze_sized(data)
    payload = FrozenDict({"event": "command.issued", "command_id": "gym-1", "args": frozen})
    encoder = payloads.JsonEncoder("s")
    expected = canonical_json(payload, default=payloads._jsonable)
    assert encoder.encode(payload) == encoder.encode(payload) == expected  # the second from the kept shapes
    odd = FrozenDict({**payload, "x": np.float32(0.5), "z": _Level.HIGH})  # the C encoder's (and _jsonable's)
    assert encoder.encode(odd) == canonical_json(odd, default=payloads._jsonable)
    with pytest.raises(RecordingFailed, match="not canonical JSON"):
        encoder.encode(FrozenDict({**payload, "y": float("inf")}))


def test_the_reused_encoder_recovers_after_a_failure() -> None:
    """A refused payload (NaN, a circular list) fails as before; the next payload still encodes."""
    encoder = payloads.JsonEncoder("s")
    loop: list[Any] = []
    loop.append(loop)
    for bad in ({"x": float("nan")}, {"x": loop}, {"x": object()}):
        with pytest.raises(RecordingFailed, match="not canonical JSON"):
            encoder.encode(bad)
        shared = [1]
        assert encoder.encode({"a": shared, "b": shared}) == b'{"a":[1],"b":[1]}'


def test_a_frozen_payload_keeps_its_shape_and_names_and_writes_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """perf42: sorted keys, key literals and names are kept, so the next payload writes only its new strings; odd names take the C encoder."""
    from fastsim_contract.payloads import FrozenDict, freeze_sized

    def payload(k: int, names: list[Any]) -> FrozenDict:
        detail, _ = freeze_sized({"actuators": names, "ctrl": [0.5 * k, -1e-7]})
        return FrozenDict({"event": "command.applied", "command_id": f"gym-{k}", "accepted": True, "detail": detail})

    encoder = payloads.JsonEncoder("s")
    names = ["joint1", "fingers\u00e9"]
    first = payload(1, names)
    assert encoder.encode(first) == canonical_json(first)
    written: list[str] = []
    string = payloads._STRING

    def counting(text: str) -> str:
        written.append(text)
        return string(text)

    monkeypatch.setattr(payloads, "_STRING", counting)
    second = payload(2, list(names))
    assert encoder.encode(second) == canonical_json(second)
    assert written == ["gym-2", "command.applied"], "keys and names from the kept text"
    odd = FrozenDict({**second, "detail": FrozenDict({**second["detail"], "actuators": ("joint1", _Level.HIGH)})})
    assert encoder.encode(odd) == canonical_json(odd, default=payloads._jsonable)
