"""A Run's batches of numeric blocks between command and event rows take the writer's
segment path (issue 26, wk26c); the file is byte for byte the one the general path writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import fastsim_recording_format.writer as writer_module
from fastsim_recording_format._assemble import RecordBlock
from fastsim_recording_format._segment_batch import segment_batch
from fastsim_recording_format.model import RecordKind

from .test_tick_buffers import _record


@pytest.mark.parametrize("case", [{}, {"reset_every_s": 1.0}], ids=["steady", "resets"])
def test_segment_path_writes_the_general_paths_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: dict[str, Any]
) -> None:
    """The same seeded Run (90 channels, commands, events) with and without the segment path is one file."""
    taken: list[bool] = []  # per batch of blocks and DATA rows only (what the segment path takes)

    def counting(*args: Any) -> Any:
        built = segment_batch(*args)
        if all(r.__class__ is RecordBlock or r.kind is RecordKind.DATA for r in args[0]):
            taken.append(built is not None)
        return built

    with monkeypatch.context() as m:
        m.setattr(writer_module, "segment_batch", counting)
        ours = _record(tmp_path, "segments", **case)
    # A batch with a barrier (a reset) is the general path's by design (segment row 3), and
    # a lone tick between two rows is a row itself (fsr_columns row 3): which batches hold
    # blocks depends on when the worker drained, so every such batch must take the path.
    assert taken, "no batch of blocks and DATA rows"
    assert all(taken), f"the segment path was taken by {sum(taken)} of {len(taken)} batches"
    with monkeypatch.context() as m:
        m.setattr(writer_module, "segment_batch", lambda *a: None)
        general = _record(tmp_path, "general", **case)
    assert len(ours) == len(general) > 100_000
    assert ours == general
