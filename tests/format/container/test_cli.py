"""The fsr subcommands info, validate, cat, recover and synth: output and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from fastsim_record.cli import main
from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec

from .helpers import with_footer

Capture = pytest.CaptureFixture[str]


@pytest.fixture
def fsr_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.fsr"
    assert main(["synth", str(path), "--records", "400", "--payload-bytes", "64", "--camera-every", "5",
                 "--camera-bytes", "3000", "--generations", "2", "--gap-every", "101", "--metadata",
                 "--batch-items", "64", "--integrity", "strong"]) == 0
    return path


def test_info_json_has_the_documented_keys(fsr_file: Path, capsys: Capture) -> None:
    """fsr info --json lists streams with names and record counts, totals and flags."""
    capsys.readouterr()
    assert main(["info", str(fsr_file), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"streams", "records", "degraded", "integrity", "mode"} <= set(info)
    assert info["records"] == 400
    assert (info["degraded"], info["integrity"], info["mode"]) == (True, "strong", "record")
    assert sum(s["records"] for s in info["streams"]) == 400
    camera = next(s for s in info["streams"] if s["name"] == "cameras.overview.rgb")
    assert (camera["records"], camera["generations"], camera["codec"]["codec"]) == (80, [0, 1], "raw")


def test_info_text(fsr_file: Path, capsys: Capture) -> None:
    """fsr info prints a readable summary with every stream."""
    capsys.readouterr()
    assert main(["info", str(fsr_file)]) == 0
    out = capsys.readouterr().out
    assert "records 400" in out
    assert "cameras.overview.rgb" in out
    assert "degraded true" in out


LONG = "cameras.exterior_left.extrinsics.quaternion_xyzw"


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell: runs of text separated by two or more spaces."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def test_info_table_columns_fit_long_stream_names(tmp_path: Path, capsys: Capture) -> None:
    """Every column of the fsr info stream table lines up, however long a stream name or codec is."""
    path = tmp_path / "long.fsr"
    streams = [
        StreamSpec(0, LONG, "camera.quaternion", {"media_type": "application/x-float64"}),
        StreamSpec(1, "cameras.exterior_left.rgb", "camera.rgb", {"codec": "jpeg-quality-92-chroma-444-long"}),
        StreamSpec(2, "a", "event", {}),
    ]
    with open(path, "wb") as f:
        writer = FsrWriter(f, RunMetadata("r", "c"), streams)
        writer.write_batch([RecordIn.data(0, 1, 1, 0, 0, b"q" * 32), RecordIn.data(1, 2, 1, 0, 5, b"j"),
                            RecordIn.data(0, 3, 2, 1, 10**12, b"q" * 32)])
        writer.seal()
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(k for k, line in enumerate(lines) if line.startswith("stream "))
    header, rows = _cells(lines[head]), [_cells(line) for line in lines[head + 1:]]
    assert len(header) == 7
    assert len(rows) == 3
    right = (1, 2, 3)  # records, gaps and lost are right-aligned; the rest left-aligned
    for row, line in zip(rows, lines[head + 1:]):
        assert len(row) == 7, line
        for k, ((start, end), (h_start, h_end)) in enumerate(zip(row, header)):
            assert end == h_end if k in right else start == h_start, (k, line)
    assert lines[head + 1].startswith(LONG + "  ")
    assert lines[head + 1].split()[1:4] == ["2", "0", "0"]


def test_info_of_a_forged_footer_exits_1_without_a_traceback(fsr_file: Path, capsys: Capture) -> None:
    """A footer re-sealed with valid CRCs but nonsense totals is one 'invalid:' line, exit 1."""
    fsr_file.write_bytes(with_footer(fsr_file.read_bytes(), lambda footer: footer.update(streams=[{"stream_id": 0}])))
    capsys.readouterr()
    assert main(["info", str(fsr_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid: footer: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("profile", ["structural", "fast", "strong"])
def test_validate_prints_the_receipt(fsr_file: Path, capsys: Capture, profile: str) -> None:
    """fsr validate exits 0 and prints the receipt in every profile."""
    capsys.readouterr()
    assert main(["validate", str(fsr_file), "--integrity", profile, "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["profile"] == profile
    assert receipt["validated_bytes"] == fsr_file.stat().st_size
    assert (receipt["content_sha256"] is None) is (profile == "structural")


def test_validate_invalid_file_is_one_line_exit_1(fsr_file: Path, capsys: Capture) -> None:
    """A corrupt file exits 1 with one 'invalid: <reason> at offset <n>' line and no traceback."""
    data = bytearray(fsr_file.read_bytes())
    data[200] ^= 0xFF
    fsr_file.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["validate", str(fsr_file)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("invalid: ")
    assert " at offset " in err


def test_validate_of_an_unsealed_file_points_to_recover(fsr_file: Path, capsys: Capture) -> None:
    """An unsealed (truncated) file is invalid on one line that names `fsr recover`."""
    data = fsr_file.read_bytes()
    fsr_file.write_bytes(data[: len(data) - 8])
    capsys.readouterr()
    assert main(["validate", str(fsr_file)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("invalid: ")
    assert "fsr recover" in err


def test_a_lone_folder_is_validated_as_a_batch(fsr_file: Path, capsys: Capture) -> None:
    """fsr validate FOLDER checks every .fsr below it and ends with a summary line."""
    assert main(["validate", str(fsr_file.parent)]) == 0
    out = capsys.readouterr().out
    assert f"valid: {fsr_file}" in out
    assert out.rstrip().splitlines()[-1] == "validated 1 file (structural): 1 valid, 0 failed"


def test_validate_usage_errors_exit_2(fsr_file: Path, tmp_path: Path, capsys: Capture) -> None:
    """An unreadable path or fast/strong without a sha256 policy exits 2."""
    assert main(["validate", str(tmp_path / "missing.fsr")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty")]) == 2  # a folder without an .fsr file
    assert main(["validate", str(fsr_file), "--integrity", "fast", "--policy-integrity", "none"]) == 2
    assert "requires the output policy integrity 'sha256'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["validate", str(fsr_file), "--integrity", "bogus"])
    assert info.value.code == 2


def test_cat_prints_json_lines(fsr_file: Path, capsys: Capture) -> None:
    """fsr cat prints one JSON object per record, filtered and limited."""
    capsys.readouterr()
    assert main(["cat", str(fsr_file), "--stream", "cameras.overview.rgb", "--limit", "3"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["stream_sequence"] for x in lines] == [1, 2, 3]
    assert lines[0]["stream"] == "cameras.overview.rgb"
    assert set(lines[0]) >= {"stream", "kind", "global_sequence", "stream_sequence", "generation",
                             "sim_time_ns", "metadata", "payload_length"}
    assert main(["cat", str(fsr_file)]) == 0
    kinds = [json.loads(x)["kind"] for x in capsys.readouterr().out.splitlines()]
    assert (len(kinds), kinds.count("gap")) == (400, 3)


def test_cat_unknown_stream_exits_2(fsr_file: Path, capsys: Capture) -> None:
    """An unknown stream name is a usage error."""
    assert main(["cat", str(fsr_file), "--stream", "nope"]) == 2
    assert "no stream named 'nope'" in capsys.readouterr().err


def test_recover_exit_codes(tmp_path: Path, capsys: Capture) -> None:
    """fsr recover exits 0 when nothing was lost, 3 when a torn tail was dropped, 1 when hopeless."""
    src = tmp_path / "u.fsr.incomplete"
    assert main(["synth", str(src), "--records", "300", "--batch-items", "50", "--unsealed"]) == 0
    out = tmp_path / "u.fsr"
    assert main(["recover", str(src), "-o", str(out)]) == 0
    assert main(["validate", str(out)]) == 0
    data = src.read_bytes()
    src.write_bytes(data[: len(data) - 100])
    capsys.readouterr()
    assert main(["recover", str(src), "-o", str(out), "--overwrite"]) == 3
    printed = capsys.readouterr().out
    assert "recovered 250 records in 5 batches" in printed
    assert "dropped torn tail: 50 records" in printed
    src.write_bytes(data[:20])
    assert main(["recover", str(src), "-o", str(out), "--overwrite"]) == 1
    assert capsys.readouterr().err.startswith("invalid: ")
    assert main(["recover", str(tmp_path / "missing"), "-o", str(out)]) == 2


def test_synth_rejects_bad_arguments(tmp_path: Path, capsys: Capture) -> None:
    """Negative sizes are a usage error; nothing is written."""
    assert main(["synth", str(tmp_path / "x.fsr"), "--records", "-1"]) == 2
    assert "--records" in capsys.readouterr().err
    assert not (tmp_path / "x.fsr").exists()


def test_validate_exit_codes_from_a_real_process(fsr_file: Path, tmp_path: Path) -> None:
    """The fsr process exits 0/1/2 for valid/invalid/unusable input, with one stderr line and no traceback."""
    import subprocess
    import sys

    corrupt = tmp_path / "corrupt.fsr"
    data = bytearray(fsr_file.read_bytes())
    data[-100] ^= 0x10
    corrupt.write_bytes(bytes(data))
    argv = [[str(fsr_file)], [str(corrupt)], [str(tmp_path / "missing.fsr")], [str(fsr_file), "--integrity", "x"]]
    procs = [  # started together: four interpreter start-ups overlap
        subprocess.Popen([sys.executable, "-m", "fastsim_record.cli", "validate", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for args in argv
    ]
    outputs = [p.communicate() for p in procs]
    valid, invalid, missing, usage = (
        subprocess.CompletedProcess(p.args, p.returncode, out, err) for p, (out, err) in zip(procs, outputs)
    )
    assert (valid.returncode, invalid.returncode, missing.returncode, usage.returncode) == (0, 1, 2, 2)
    assert valid.stdout.startswith("valid: ")
    assert "footer_identity" in valid.stdout
    assert re.fullmatch(r"invalid: .+ at offset \d+\n", invalid.stderr), invalid.stderr
    assert missing.stderr.count("\n") == 1
    assert all("Traceback" not in p.stderr for p in (valid, invalid, missing, usage))


def test_synth_refuses_an_existing_output_unless_overwrite(tmp_path: Path, capsys: Capture) -> None:
    """fsr synth never replaces a user's file: exit 2 naming it; --overwrite opts in."""
    path = tmp_path / "mine.fsr"
    path.write_bytes(b"precious")
    assert main(["synth", str(path), "--records", "10"]) == 2
    assert path.read_bytes() == b"precious"
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(path) in err
    assert main(["synth", str(path), "--records", "10", "--overwrite"]) == 0
    assert path.read_bytes() != b"precious"


def _numeric_file(path: Path, payloads: list[bytes]) -> Path:
    layout = [
        {"name": "arm.q", "dtype": "<f8", "shape": [2], "units": ["rad", "rad"], "offset": 0, "nbytes": 16},
        {"name": "arm.n", "dtype": "<i4", "shape": [], "units": [], "offset": 16, "nbytes": 4},
    ]
    specs = [
        StreamSpec(1, "events", "events", {"payload_codec": "json"}),
        StreamSpec(2, "observations", "observations", {"payload_codec": "numeric-tick/1", "record_bytes": 20},
                   {"channels": layout, "element_names": {"arm.q": ["shoulder", "elbow"]}}),
    ]
    with FsrWriter(path, RunMetadata("r", "c", {}), specs) as writer:
        records = [RecordIn.data(1, 1, 1, 0, 0, json.dumps({"event": "go", "k": [1, 2]}).encode())]
        records += [RecordIn.data(2, 2 + i, 1 + i, 0, 10 * i, p) for i, p in enumerate(payloads)]
        writer.write_batch(records)
        writer.seal(terminal_fence={"decision": "commit"})
    return path


def test_cat_payload_decodes_json_and_numeric_ticks_with_names(tmp_path: Path, capsys: Capture) -> None:
    """fsr cat --payload: JSON payloads as values, numeric ticks as {channel: names, values}."""
    tick = np.array([0.5, -1.25], "<f8").tobytes() + np.array(7, "<i4").tobytes()
    path = _numeric_file(tmp_path / "n.fsr", [tick])
    assert main(["cat", str(path), "--payload"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["payload"] == {"event": "go", "k": [1, 2]}
    assert lines[1]["payload"] == {
        "arm.q": {"names": ["shoulder", "elbow"], "values": [0.5, -1.25]},
        "arm.n": {"names": ["arm.n"], "values": 7},
    }
    assert main(["cat", str(path)]) == 0  # without --payload nothing is decoded
    assert all("payload" not in json.loads(line) for line in capsys.readouterr().out.splitlines())


def test_cat_payload_refuses_a_tick_of_the_wrong_size_naming_its_offset(tmp_path: Path, capsys: Capture) -> None:
    """A numeric tick whose length is not the stream's record size is invalid, exit 1, with its offset."""
    path = _numeric_file(tmp_path / "bad.fsr", [bytes(12)])
    assert main(["cat", str(path), "--payload"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid: ")
    assert "record size is 20" in err
    assert re.search(r"offset \d+", err)
    assert err.count("\n") == 1
