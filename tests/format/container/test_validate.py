"""Structural validation reads no payload byte; receipts; policy; holes and gaps."""

from __future__ import annotations

import hashlib
import io

import pytest

from fastsim_recording_format import (
    FormatError,
    FsrReader,
    IntegrityPolicyError,
    ProfileUnsupportedError,
    RecordIn,
    ValidationReceipt,
    validate,
)
from fastsim_recording_format import _batch as batch_module
from fastsim_recording_format.synth import write_synthetic

from .helpers import STREAMS, CountingFile, regions, small_batches, small_file, write_bytes


def _payload_ranges(data: bytes) -> list[tuple[int, int]]:
    return [(a, b) for a, b, name in regions(data) if name == "payload"]


def test_structural_validation_reads_no_payload_byte() -> None:
    """Structural validation seek-skips every payload byte: no read touches a payload range."""
    buf = io.BytesIO()
    write_synthetic(buf, 300, 2000, camera_every=3, camera_bytes=50_000, metadata=True, batch_items=16)
    data = buf.getvalue()
    counting = CountingFile(data)
    receipt = validate(counting)  # type: ignore[arg-type]
    assert receipt.validated_bytes == len(data)
    payload = _payload_ranges(data)
    assert sum(b - a for a, b in payload) > 0.9 * len(data)
    for at, n in counting.reads:
        assert not any(at < b and a < at + n for a, b in payload), (at, n)
    assert counting.bytes_read < 0.05 * len(data)


def test_strong_validation_reads_payloads_and_structural_does_not() -> None:
    """Strong validation re-reads every payload byte; structural reads none of them."""
    data = small_file("strong")
    payload = sum(b - a for a, b in _payload_ranges(data))
    structural, strong = CountingFile(data), CountingFile(data)
    validate(structural)  # type: ignore[arg-type]
    validate(strong, "strong", "sha256")  # type: ignore[arg-type]
    assert strong.bytes_read >= structural.bytes_read + payload + len(data)


def test_receipt_identifies_profile_bytes_footer_and_completion() -> None:
    """The receipt carries schema, profile, byte count, policy, digest, footer and completion identity."""
    data = small_file("strong")
    structural = validate(io.BytesIO(data))
    assert structural == ValidationReceipt(
        "structural", len(data), "none", None, structural.footer_identity, "completion-1"
    )
    assert structural.validator_schema == "fsr-validation-receipt/1"
    with FsrReader(io.BytesIO(data)) as reader:
        assert reader.footer_identity == structural.footer_identity
    fast = validate(io.BytesIO(data), "fast", "sha256")
    assert fast.content_sha256 == hashlib.sha256(data).hexdigest()
    assert fast.footer_identity == structural.footer_identity
    assert validate(io.BytesIO(data), "strong", "sha256").profile == "strong"


@pytest.mark.parametrize("profile", ["fast", "strong"])
def test_tamper_evident_profiles_need_a_sha256_policy(profile: str) -> None:
    """fast/strong under output policy integrity 'none' is a clear IntegrityPolicyError."""
    with pytest.raises(IntegrityPolicyError, match="requires the output policy integrity 'sha256'"):
        validate(io.BytesIO(small_file()), profile, "none")


def test_unknown_profile_is_a_value_error() -> None:
    """An unknown integrity profile is rejected before any byte is read."""
    with pytest.raises(ValueError, match="integrity must be one of"):
        validate(io.BytesIO(small_file()), "paranoid")


def test_strong_needs_a_strong_file() -> None:
    """Strong validation of a structural file is a usage error naming the profiles it supports."""
    with pytest.raises(ProfileUnsupportedError, match="This file supports: structural, crc, fast") as info:
        validate(io.BytesIO(small_file("structural")), "strong", "sha256")
    assert info.value.supported == ("structural", "crc", "fast")
    assert not isinstance(info.value, FormatError)


def test_payload_flip_passes_structural_but_fails_strong() -> None:
    """A flipped payload byte is invisible structurally and caught by strong readback."""
    data = bytearray(small_file("strong"))
    for a, b in _payload_ranges(bytes(data)):
        flipped = bytearray(data)
        flipped[(a + b) // 2] ^= 0x40
        validate(io.BytesIO(bytes(flipped)))
        validate(io.BytesIO(bytes(flipped)), "fast", "sha256")
        with pytest.raises(FormatError, match="batch payload SHA-256 mismatch"):
            validate(io.BytesIO(bytes(flipped)), "strong", "sha256")


def test_a_hole_explained_by_a_gap_is_accepted_and_degrades() -> None:
    """A global-sequence range covered by a GAP record validates and marks the file degraded."""
    data = small_file("structural")
    validate(io.BytesIO(data))
    with FsrReader(io.BytesIO(data)) as reader:
        assert reader.degraded
        assert reader.footer["records_by_kind"] == {"data": 6, "gap": 1, "barrier": 2}


def test_an_unexplained_hole_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A global-sequence hole with no GAP record is rejected at the offending record."""
    monkeypatch.setattr(batch_module.Accumulator, "check", lambda *a: None)
    batches = [[RecordIn.data(1, 1, 1, 0, 0, b"a")], [RecordIn.data(1, 3, 2, 0, 1, b"b")]]
    data = write_bytes(STREAMS, batches)
    monkeypatch.undo()
    with pytest.raises(FormatError, match="global sequence hole or overlap: expected 2, found 3"):
        validate(io.BytesIO(data))


def test_stream_sequence_hole_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream-sequence hole across batches is rejected."""
    monkeypatch.setattr(batch_module.Accumulator, "check", lambda *a: None)
    data = write_bytes(STREAMS, [[RecordIn.data(1, 1, 1, 0, 0, b"")], [RecordIn.data(1, 2, 5, 0, 1, b"")]])
    monkeypatch.undo()
    with pytest.raises(FormatError, match="stream sequence hole or overlap"):
        validate(io.BytesIO(data))


def test_every_small_batch_layout_validates() -> None:
    """The small reference file validates in all three profiles."""
    data = write_bytes(STREAMS, small_batches(), "strong")
    for profile in ("structural", "fast", "strong"):
        validate(io.BytesIO(data), profile, "sha256")
