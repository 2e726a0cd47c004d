"""Result memory kept for the next read (``reading._reuse``): reused only once nothing refers
to it, at most one map kept, and the values read through it bit-exact."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format import FsrWriter, RunMetadata, StreamSpec
from fastsim_recording_format.codecs import numeric
from fastsim_recording_format.reading import _reuse, _tables
from fastsim_recording_format.writer import RecordBlock

SIZE = _reuse.MIN_BYTES + 12345


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    """Each test starts with no map kept by an earlier one."""
    _reuse._kept.clear()


def test_a_dropped_result_is_reused() -> None:
    """Once the last array over a result is gone, the next result lives in the same map."""
    a = _reuse.take(SIZE)
    at = a.ctypes.data
    del a
    b = _reuse.take(SIZE)
    assert b.ctypes.data == at
    assert len(_reuse._kept) == 1


@pytest.mark.parametrize("hold", ["view", "field view", "memoryview", "bytes view of a view"])
def test_a_result_still_referred_to_is_never_reused(hold: str) -> None:
    """A live view or buffer over a result keeps the next read out of its map: its bytes stay."""
    a = _reuse.take(SIZE)
    a[:] = 7
    kept: object
    if hold == "view":
        kept = a[:5000].reshape(-1, 5)[3:9, 1:4]
    elif hold == "field view":
        kept = a[:4000].view("<f8").reshape(100, 5)[:, 2]
    elif hold == "memoryview":
        kept = memoryview(a.data)[100:200]
    else:
        kept = np.frombuffer(a[8:].data, np.uint8)
    del a
    b = _reuse.take(SIZE)
    b[:] = 9
    assert not np.shares_memory(np.asarray(kept), b)
    assert np.ascontiguousarray(kept).tobytes() == bytes([7]) * np.asarray(kept).nbytes
    assert len(_reuse._kept) == 1  # the held map is the caller's, not kept here
    del kept
    c = _reuse.take(SIZE)
    assert not np.shares_memory(b, c)  # b still lives: c is a map of its own


def test_only_a_map_of_about_the_size_is_reused() -> None:
    """A map smaller than the request, or more than twice its size, is not reused."""
    a = _reuse.take(4 * SIZE)
    at = a.ctypes.data
    del a
    b = _reuse.take(SIZE)  # the kept map is more than twice this: a new one
    assert b.ctypes.data != at
    del b
    c = _reuse.take(4 * SIZE)  # the kept map is now too small
    assert len(c) == 4 * SIZE
    assert len(_reuse._kept) == 1


def test_the_pages_of_an_unused_result_are_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the last view of a result goes, its map is marked free-on-pressure (once)."""
    calls: list[int] = []
    monkeypatch.setattr(_reuse, "_idle", lambda m: calls.append(len(m)))
    a = _reuse.take(SIZE)
    v = a[5:50]
    del a
    assert calls == []
    del v
    assert len(calls) == 1
    assert calls[0] >= SIZE


def test_small_and_large_results_do_not_use_the_kept_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below MIN_BYTES numpy's allocator serves the result; from LARGE on, its own populated map."""
    small = _tables.empty_bytes(10, 100)
    assert isinstance(small.base, np.ndarray)
    assert small.base.base is None
    assert _reuse._kept == []
    monkeypatch.setattr(_tables, "LARGE", _reuse.MIN_BYTES * 2)
    large = _tables.empty_bytes(_reuse.MIN_BYTES * 2 // 1000 + 1, 1000)
    assert large.shape == (_reuse.MIN_BYTES * 2 // 1000 + 1, 1000)
    assert _reuse._kept == []
    middle = _tables.empty_bytes(_reuse.MIN_BYTES // 1000 + 1, 1000, 64)
    assert middle.ctypes.data % 4096 == 64
    assert len(_reuse._kept) == 1


@pytest.fixture(scope="module")
def ticks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """7,000 ticks of 34 float64 (1.9 MB) and the values written."""
    path = tmp_path_factory.mktemp("reuse") / "ticks.fsr"
    size, layout = numeric.channel_entries([
        ("a", "float64", (13,), ("rad",), "robot"), ("b", "float64", (21,), ("m",), "robot"),
    ])
    spec = StreamSpec(1, "observations", "observations", numeric.codec_description(size), {"channels": layout})
    values = np.random.default_rng(5).random((7000, size // 8))
    with FsrWriter(path, RunMetadata("r", "c"), [spec]) as writer:
        for start in range(0, 7000, 500):
            g = np.arange(start + 1, start + 501, dtype=np.uint64)
            writer.write_batch([RecordBlock(1, 0, g, g, g.astype(np.int64) * 1000, size,
                                            values[start:start + 500].tobytes())])
        writer.seal()
    return path, values


def test_reads_through_a_kept_map_are_bit_exact(ticks: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading again with the first result held, then dropped: every result keeps its own bytes."""
    path, values = ticks
    monkeypatch.setattr(_reuse, "MIN_BYTES", 1 << 16)  # this file's 1.9 MB result uses the kept map
    with fr.open(path) as rec:
        first = rec.numeric_all()
        second = rec.numeric_all()  # the first still held: a map of its own
        assert not np.shares_memory(first["a"].values, second["a"].values)
        at = second["a"].values.ctypes.data
        del second
        third = rec.numeric_all()  # the second dropped: its map again
        assert third["a"].values.ctypes.data == at
        for got in (first, third):
            assert got["a"].values.tobytes() == np.ascontiguousarray(values[:, :13]).tobytes()
            assert got["b"].values.tobytes() == np.ascontiguousarray(values[:, 13:]).tobytes()


def test_release_lets_go_of_the_kept_map() -> None:
    """After ``release`` the next result is a new map, and the kept one is no longer kept."""
    a = _reuse.take(SIZE)
    old = _reuse._kept[0]
    del a
    _reuse.release()
    assert _reuse._kept == []
    b = _reuse.take(SIZE)
    assert _reuse._kept[0] is not old
    assert b.ctypes.data != np.frombuffer(old, np.uint8).ctypes.data


def test_nothing_is_kept_where_a_buffer_over_a_map_cannot_be_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """If a map in use cannot be told from an unused one, no map is kept and none reused."""
    monkeypatch.setattr(_reuse, "_sound", [])
    monkeypatch.setattr(_reuse, "_unused", lambda m: True)  # blind: every map looks unused
    a = _reuse.take(SIZE)
    assert _reuse._sound == [False]
    assert _reuse._kept == []
    b = _reuse.take(SIZE)
    assert not np.shares_memory(a, b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_keeps_nothing_of_its_parent() -> None:
    """After a fork the child has no kept map (the parent keeps its own)."""
    a = _reuse.take(SIZE)
    del a
    assert len(_reuse._kept) == 1
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if nothing is kept
        os._exit(0 if _reuse._kept == [] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(_reuse._kept) == 1


def test_two_threads_taking_at_once_never_share_a_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``take`` from another thread while one is handing a map out gets memory of its own."""
    import threading

    first = _reuse.take(SIZE)
    del first  # the kept map is now unused: both takes below would like it
    other: list[np.ndarray] = []
    threads: list[threading.Thread] = []
    real = np.frombuffer

    def frombuffer(*args: object, **kwargs: object) -> np.ndarray:
        if not threads:  # while this thread hands the map out, another thread asks for one
            thread = threading.Thread(target=lambda: other.append(_reuse.take(SIZE)))
            threads.append(thread)
            thread.start()
            thread.join(0.3)  # it gets there first unless this take holds the map's lock
        return real(*args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(np, "frombuffer", frombuffer)
    mine = _reuse.take(SIZE)
    threads[0].join(10)
    monkeypatch.setattr(np, "frombuffer", real)
    theirs = other[0]
    assert theirs.size == SIZE
    lo, hi = sorted([(mine.ctypes.data, mine.size), (theirs.ctypes.data, theirs.size)])
    assert lo[0] + lo[1] <= hi[0], "two live results share memory"
