"""``numeric_layout`` (rules 1-2 of ``numeric-tick/1``): each refusal's line, and element names."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import StreamSpec
from fastsim_recording_format.codecs.numeric import (
    channel_entries,
    codec_description,
    numeric_layout,
)
from fastsim_recording_format.errors import NumericPayloadError

WHERE = "stream 'obs' attributes.channels"


def spec(entries: Any, record_bytes: Any = None, **attributes: Any) -> StreamSpec:
    if record_bytes is None:
        record_bytes = sum(int(e["nbytes"]) for e in entries)
    return StreamSpec(1, "obs", "observation", codec_description(record_bytes), {"channels": entries, **attributes})


def entry(name: str, dtype: str = "<f8", shape: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    dims = [1] if shape is None else shape
    return {"name": name, "dtype": dtype, "shape": dims, "units": [], "offset": 0,
            "nbytes": int(np.prod(dims)) * np.dtype(dtype).itemsize, **extra}


def tiled(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    at = 0
    for e in entries:
        e["offset"] = at
        at += e["nbytes"]
    return list(entries)


@pytest.mark.parametrize(("entries", "line"), [
    ([entry("a", shape=[-1, -2])], f"{WHERE}[0] (a): unsupported dtype <f8 or shape"),
    ([entry("a", shape=[2]), entry("b", shape=[-1])], f"{WHERE}[1] (b): unsupported dtype <f8 or shape"),
    ([entry("a", dtype=">f8")], f"{WHERE}[0] (a): unsupported dtype >f8 or shape"),
    ([entry("a", dtype="<U2")], f"{WHERE}[0] (a): unsupported dtype <U2 or shape"),
    ([entry("a", dtype="<c16")], f"{WHERE}[0] (a): unsupported dtype <c16 or shape"),
    ([{**entry("a"), "nbytes": 4}], f"{WHERE}[0] (a): offset/nbytes do not tile the record"),
    ([entry("a"), entry("b")], f"{WHERE}[1] (b): offset/nbytes do not tile the record"),
])
def test_a_bad_channel_is_refused_naming_it(entries: list[dict[str, Any]], line: str) -> None:
    """A bad channel is refused naming it."""
    with pytest.raises(NumericPayloadError) as err:
        numeric_layout(spec(entries))
    assert str(err.value) == line


@pytest.mark.parametrize("broken", [{"shape": 3}, {"dtype": "nonsense"}, {"offset": "x"}, {"name": None, "shape": None}])
def test_a_malformed_entry_is_refused(broken: dict[str, Any]) -> None:
    """A malformed entry is refused."""
    with pytest.raises(NumericPayloadError, match=r"^stream 'obs' attributes\.channels\[0\]: malformed \("):
        numeric_layout(spec([{**entry("a"), **broken}], record_bytes=8))
    with pytest.raises(NumericPayloadError, match=r"attributes\.channels\[0\]: malformed"):
        numeric_layout(spec(["not an object"], record_bytes=8))


def test_the_record_size_must_be_covered() -> None:
    """The record size must be covered."""
    with pytest.raises(NumericPayloadError) as err:
        numeric_layout(spec(tiled(entry("a"), entry("b")), record_bytes=24))
    assert str(err.value) == f"{WHERE}: channels cover 16 bytes, record_bytes is 24"


def test_element_names_in_c_order_unless_the_file_names_them() -> None:
    """Element names in c order unless the file names them."""
    record_bytes, layout = channel_entries([
        ("grid", "<f4", [2, 3], [], None), ("pose", "<f8", [3], ["m"] * 3, "robot"),
        ("flag", "|u1", [], [], None), ("named", "<i4", [2], [], None), ("bad", "<i4", [2], [], None),
        ("empty", "<f8", [0], [], None),
    ])
    layout[3]["names"] = ["left", "right"]
    stream = spec(layout, record_bytes, element_names={"pose": ["x", "y", "z"], "bad": ["one", 2], "grid": ["g"]},
                  per_step_channels=["flag"])
    _, channels = numeric_layout(stream)
    names = {c.name: c.element_names for c in channels}
    assert names["grid"] == tuple(f"grid[{i},{j}]" for i, j in np.ndindex(2, 3))
    assert names["pose"] == ("x", "y", "z")
    assert names["flag"] == ("flag",)
    assert names["named"] == ("left", "right")
    assert names["bad"] == ("bad[0]", "bad[1]")  # a name that is not a string: the generated ones
    assert names["empty"] == ()
    assert [c.per_step for c in channels] == [False, False, True, False, False, False]
    assert [(c.dtype, c.shape, c.offset, c.units) for c in channels[:2]] == [
        (np.dtype("<f4"), (2, 3), 0, ()), (np.dtype("<f8"), (3,), 24, ("m", "m", "m"))]
