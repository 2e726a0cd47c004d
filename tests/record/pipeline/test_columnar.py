"""The columnar numeric path (issue 26): runs of ticks become one record block each, with
the same records and bytes as the per-record path, and no loss of any guarantee."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session import loop
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import SessionResult, run_session
from fastsim_record.core.captured import CapturedRun
from fastsim_record.pipeline.columns import RunBuilder
from fastsim_recording_format.reader import FsrReader

RECORD = "plugin://fastsim/record"


def _record(tmp_path: Path, name: str, *, seconds: float = 3.0, reset_every_s: float | None = None,
            output: dict[str, Any] | None = None) -> tuple[SessionResult, Path, list[EmbeddedHost]]:
    synthetic: dict[str, Any] = {"numeric_channels": 30, "command_every_s": 0.5, "event_every_s": 0.7}
    if reset_every_s is not None:
        synthetic["reset_every_s"] = reset_every_s
    document = {
        "schema": "fastsim/2", "name": name, "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}, "synthetic": synthetic}},
        "runtime": {"sensor_hz": 120.0, **({"output": output} if output else {})},
        "plugins": {"record": {"use": RECORD}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    hosts: list[EmbeddedHost] = []
    result = run_session(prepare_run(path, duration_s=seconds), tmp_path / name, on_host=hosts.append)
    assert result.outcome.status == "succeeded", result.outcome.reason
    return result, tmp_path / name / "episode.fsr", hosts


def _records(path: Path) -> list[tuple[Any, ...]]:
    with FsrReader(path) as reader:
        return [
            (r.stream_id, int(r.kind), r.global_sequence, r.stream_sequence, r.generation, r.sim_time_ns,
             bytes(r.payload) if r.stream_id == reader.stream("observations").stream_id else None)
            for r in reader.records()
        ]


def test_columnar_and_per_record_paths_write_the_same_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Run written column-wise and per record holds the same records and tick bytes."""
    formed: list[int] = []
    split = RunBuilder.split

    def counting(self: RunBuilder, items: list[Any], materialize: Any) -> Any:
        out = split(self, items, materialize)
        formed.append(self.runs)
        return out

    monkeypatch.setattr(RunBuilder, "split", counting)
    _, columnar, _ = _record(tmp_path, "columnar")
    assert formed, "the worker split nothing"
    assert max(formed) > 0, "the columnar path formed no run"
    # the per-record path takes per-tick envelopes: no observation blocks (the host's bound 1)
    monkeypatch.setattr(loop, "SCRIPTED_MAX_BLOCK", 1)
    monkeypatch.setattr(RunBuilder, "split", lambda self, items, materialize: list(map(materialize, items)))
    _, per_record, _ = _record(tmp_path, "per-record")
    a, b = _records(columnar), _records(per_record)
    assert len(a) == len(b) > 300
    assert a == b


def test_columnar_path_keeps_generations_and_payloads_across_resets(tmp_path: Path) -> None:
    """Resets split runs; every tick stays one record of its generation, of the tick's size."""
    _, path, _ = _record(tmp_path, "resets", seconds=3.0, reset_every_s=1.0)
    with FsrReader(path) as reader:
        spec = reader.stream("observations")
        data = [r for r in reader.records(spec.stream_id) if int(r.kind) == 0]
        barriers = [r for r in reader.records(spec.stream_id) if int(r.kind) == 2]
        assert barriers
        assert sorted({r.generation for r in data}) == list(range(len(barriers) + 1))
        assert all(len(r.payload) == spec.codec["record_bytes"] for r in data)
        seqs = [r.stream_sequence for r in reader.records(spec.stream_id)]
        assert seqs == list(range(1, len(seqs) + 1))


def _builder() -> tuple[RunBuilder, Any, Any]:
    """A run builder over a test column encoder, the lane's ``materialize`` and an envelope maker."""
    from fastsim_contract.values import Envelope, SourceKind
    from fastsim_record.core.captured import CapturedItem, LaneName
    from fastsim_record.ports.sources import LaneConverters

    class Encoder:
        def encode_columns(self, carriers: list[Any]) -> Any:
            from fastsim_record.ports.sinks import RecordColumns

            g = np.array([c.global_sequence for c in carriers], np.uint64)
            return RecordColumns("obs", 0, g, g - np.uint64(9), g.astype(np.int64), 1, bytes(len(g)),
                                 np.arange(len(g), dtype=np.int64))

    class Converter:
        kinds = frozenset({SourceKind.OBSERVATION})

        def validate(self, item: object) -> int | None:
            return 0

        def __call__(self, item: object) -> CapturedItem:
            return self.build(item)  # type: ignore[arg-type]

        def build(self, envelope: Envelope) -> CapturedItem:
            return CapturedItem(global_sequence=envelope.global_sequence, source="observations",
                                capture_sequence=envelope.source_sequence, stream="obs", lane=LaneName.NUMERIC)

    converters = LaneConverters()
    assert converters.register(Converter(), Converter.kinds)

    def envelopes(*numbers: int) -> list[Any]:
        return [Envelope(g, SourceKind.OBSERVATION, 0, g - 9, g, None, None, g) for g in numbers]

    return RunBuilder({"obs": Encoder()}), converters.materialize, envelopes


def test_run_builder_cuts_runs_at_sequence_breaks() -> None:
    """A run whose global sequences jump (another lane's item in between) is cut there."""
    builder, materialize, envelopes = _builder()
    out = builder.split(envelopes(10, 11, 12, 14, 15), materialize)
    assert [(r.first_global, r.last_global, r.first_capture, r.last_capture) for r in out] == [  # type: ignore[union-attr]
        (10, 12, 1, 3), (14, 15, 5, 6),
    ]
    assert [getattr(r.payload, "count", None) for r in out if isinstance(r, CapturedRun)] == [3, 2]


def test_ticks_apart_are_built_per_record_but_the_last_and_any_neighbour_of_another() -> None:
    """Row 2b: ticks apart in the global sequence (the first from the previous drain's last too) are built per record, but the drain's last."""
    from fastsim_record.core.captured import CapturedItem

    builder, materialize, envelopes = _builder()

    def shape(out: list[Any]) -> list[tuple[str, int, int]]:
        return [("run", r.first_global, r.last_global) if isinstance(r, CapturedRun)
                else ("item", r.global_sequence, r.global_sequence) for r in out]

    assert shape(builder.split(envelopes(3, 6, 9), materialize)) == [("item", 3, 3), ("item", 6, 6), ("run", 9, 9)]
    assert builder.apart == 2
    assert all(isinstance(r, CapturedItem) for r in builder.split(envelopes(12, 15), materialize)[:1])
    assert builder.apart == 3
    # the first follows the previous drain's last (15): row 2, cut into runs
    assert shape(builder.split(envelopes(16, 19), materialize)) == [("run", 16, 16), ("run", 19, 19)]
    # two adjacent in the drain: row 2
    assert shape(builder.split(envelopes(22, 24, 25), materialize)) == [("run", 22, 22), ("run", 24, 25)]
    assert shape(builder.split(envelopes(28), materialize)) == [("run", 28, 28)]  # a lone tick: a run of one
    assert builder.apart == 3


def test_events_of_several_sources_are_built_at_once_and_a_lane_with_ticks_is_not() -> None:
    """Row 1b (drive43): a lane of command events, issued and applied in turn, is built item by item at once, as rows 1 and 4 build it; a lane found to hold ticks of a column-encoded stream takes rows 2-4 from then on."""
    from fastsim_contract.values import Envelope, SourceKind
    from fastsim_record.core.captured import CapturedItem, LaneName
    from fastsim_record.ports.sources import LaneConverters

    builder, materialize_ticks, ticks = _builder()
    tick_converter = materialize_ticks.__self__.converter_of(ticks(1)[0])

    class Events:
        kinds = frozenset({SourceKind.CONTROL_AUDIT, SourceKind.CONTROL_RESULT})

        def build(self, envelope: Envelope) -> CapturedItem:
            return CapturedItem(global_sequence=envelope.global_sequence, source=envelope.source.value,
                                capture_sequence=envelope.source_sequence, stream="control", lane=LaneName.CRITICAL,
                                payload=envelope.payload)

    def events(*numbers: int) -> list[Any]:
        kinds = (SourceKind.CONTROL_AUDIT, SourceKind.CONTROL_RESULT)
        return [Envelope(g, kinds[g % 2], 0, g, g, {"n": g}, 9, g) for g in numbers]

    critical = LaneConverters()
    assert critical.register(Events(), Events.kinds)  # type: ignore[arg-type]
    drained = events(2, 3, 5, 6, 8)
    out = builder.split(drained, critical.materialize)
    assert out == [critical.materialize(e) for e in drained]
    assert builder.plain == 5
    by_rows = builder.split(drained, lambda e: critical.materialize(e))  # no lane object: rows 1 and 4
    assert by_rows == out
    assert builder.plain == 5
    mixed = LaneConverters()  # events and ticks in one lane: the ticks still become runs
    assert mixed.register(Events(), Events.kinds)  # type: ignore[arg-type]
    assert mixed.register(tick_converter, tick_converter.kinds)
    for _ in range(2):
        shape = [type(r).__name__ for r in builder.split([*events(10, 11), *ticks(12, 13)], mixed.materialize)]
        assert shape == ["CapturedItem", "CapturedItem", "CapturedRun"]
    assert builder.plain == 5
