"""Record metadata that is not a JSON object is refused by the writer, on every path.

A reader decodes record metadata as an object (``decode_record_metadata``), so a writer
that stored ``[1]`` or ``"x"`` wrote a file its own validator refuses (stop 38's audit).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import RecordIn, RecordKind, validate
from fastsim_recording_format.writer import RecordBlock

from .helpers import written_batches

REFUSAL = "ValueError: record metadata is not a JSON object"
SIZE = 56  # 7 float64, the helpers' obs.joints


def _row(g: int, metadata: Any) -> RecordIn:
    return RecordIn(1, RecordKind.DATA, g, g, 0, g * 1_000, bytes(SIZE), metadata)


def _block(first: int, n: int, metadata: Any) -> RecordBlock:
    payload = np.zeros(n * SIZE // 8)
    payload.flags.writeable = False
    g = np.arange(first, first + n, dtype=np.uint64)
    t = np.arange(first, first + n, dtype=np.int64) * 1_000
    return RecordBlock(1, 0, g, g.copy(), t, SIZE, payload, metadata, ())


@pytest.mark.parametrize("bad", [[1], "x", 3, True], ids=["list", "string", "number", "true"])
@pytest.mark.parametrize("shape", ["row", "block", "block and row"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast paths", "general path"])
def test_metadata_that_is_not_an_object_is_refused(
    bad: Any, shape: str, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not an object: the batch is refused with one line, and the file stays one its validator accepts."""
    batches: dict[str, list[Any]] = {
        "row": [_row(1, {"ok": 1}), _row(2, bad)],
        "block": [_block(1, 2, {0: bad})],
        "block and row": [_block(1, 2, {0: {"ok": 1}}), _row(3, bad)],
    }
    batch = batches[shape]
    with monkeypatch.context() as patch:
        if not fast:
            import fastsim_recording_format.writer as writer_module

            patch.setattr(writer_module, "block_batch", lambda *a: None)
            patch.setattr(writer_module, "segment_batch", lambda *a: None)
        data, refusals = written_batches([batch, [_row(1, {"ok": 1})]], monkeypatch)
    assert refusals == [REFUSAL, ""]
    validate(io.BytesIO(data))
