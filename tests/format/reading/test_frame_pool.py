"""Decoded frames of ``Dataset`` samples live in maps that are reused once nothing refers to
them (``reading._reuse.take_frames``): a DataLoader worker no longer decodes every sample into
fresh pages.  The pool is bounded, a frame still referred to is never reused, and the values
are the frames' own."""

from __future__ import annotations

import gc
import mmap
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format.reading import _reuse

JOINTS = "robot.joint_position"
SIZE = 240 * 320 * 3


@pytest.fixture(autouse=True)
def _empty_pool() -> None:
    """Each test starts with no released frame map from an earlier one."""
    _reuse._frames.clear()


def _map_of(array: np.ndarray) -> int:
    """The address of the map under ``array`` (its first byte)."""
    return int(array.ctypes.data)


def _mmap_under(array: np.ndarray) -> mmap.mmap | None:
    """The map ``array`` is a view of, if any (numpy's memory otherwise)."""
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    obj = base.obj if isinstance(base, memoryview) else None
    return obj if isinstance(obj, mmap.mmap) else None


def test_a_dropped_frame_map_is_taken_again() -> None:
    """Once the last array over a frame map is gone, the next frames of its size take it."""
    a = _reuse.take_frames(SIZE)
    at = _map_of(a)
    del a
    gc.collect()
    assert len(_reuse._frames) == 1
    b = _reuse.take_frames(SIZE)
    assert _map_of(b) == at
    assert not _reuse._frames  # taken out of the pool while b lives


def test_a_frame_still_referred_to_is_never_reused() -> None:
    """A live view keeps its map out of the pool: the next frames get other memory."""
    a = _reuse.take_frames(SIZE)
    a[:] = 7
    kept = a.reshape(240, 320, 3)[10:20, 5]  # a view keeps the map
    del a
    gc.collect()
    b = _reuse.take_frames(SIZE)
    b[:] = 9
    assert not np.shares_memory(kept, b)
    assert (kept == 7).all()


def test_only_a_map_of_the_same_size_is_taken() -> None:
    """A released map of another size waits for a request of its own size."""
    a = _reuse.take_frames(4 * SIZE)
    at = _map_of(a)
    del a
    gc.collect()
    b = _reuse.take_frames(SIZE)
    assert _map_of(b) != at
    assert len(_reuse._frames) == 1  # the larger map waits for a request of its size


def test_the_pool_keeps_at_most_frames_kept_bytes_and_closes_the_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Released maps beyond ``FRAMES_KEPT`` bytes are closed, the oldest first."""
    arrays = [_reuse.take_frames(SIZE) for _ in range(5)]
    maps = [_mmap_under(a) for a in arrays]
    assert all(m is not None for m in maps)
    room = len(maps[0])  # type: ignore[arg-type]
    assert room >= SIZE
    monkeypatch.setattr(_reuse, "FRAMES_KEPT", 2 * room)
    del arrays
    gc.collect()
    assert len(_reuse._frames) == 2
    assert sum(m.closed for m in maps if m is not None) == 3  # the three released first were closed
    assert all(not m.closed for m in _reuse._frames)


def test_a_main_process_decodes_into_numpys_memory(droid_fsr: Path) -> None:
    """Outside a worker process the pool is not used: numpy's memory, the same images."""
    ds = fr.Dataset(droid_fsr, channels=[JOINTS], cameras=["wrist"])
    with fr.open(droid_fsr) as rec:
        frames = [f.image for f in rec.frames("wrist")]
    sample = ds[3]["wrist"]
    assert _mmap_under(sample) is None
    np.testing.assert_array_equal(sample, frames[3])


def test_dataset_frames_reuse_the_maps_of_dropped_samples_and_hold_the_frames(
    droid_fsr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a worker process a dropped sample lends its maps to the next; the images are exact."""
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())  # as in a worker
    ds = fr.Dataset(droid_fsr, channels=[JOINTS], cameras=["wrist"])
    with fr.open(droid_fsr) as rec:
        frames = [f.image for f in rec.frames("wrist")]
    first = ds[3]["wrist"]
    np.testing.assert_array_equal(first, frames[3])
    m = _mmap_under(first)
    assert m is not None  # a frame map, not numpy's fresh memory
    del first
    gc.collect()
    assert list(_reuse._frames) == [m]
    second = ds[4]["wrist"]
    assert _mmap_under(second) is m
    np.testing.assert_array_equal(second, frames[4])
    held = ds[5]["wrist"]  # second still lives: a map of its own
    assert not np.shares_memory(held, second)
    np.testing.assert_array_equal(second, frames[4])
    np.testing.assert_array_equal(held, frames[5])


def test_threads_taking_and_dropping_frames_never_share_a_live_map() -> None:
    """Two threads taking and dropping frames at once never share a live map, and nothing raises."""
    import threading

    errors: list[BaseException] = []
    live: list[np.ndarray] = []
    lock = threading.Lock()

    def run(tag: int) -> None:
        try:
            for _ in range(200):
                a = _reuse.take_frames(SIZE)
                a[:8] = tag
                with lock:
                    assert not any(np.shares_memory(a, b) for b in live)
                    live.append(a)
                    if len(live) > 6:
                        live.pop(0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(len(m) for m in _reuse._frames) <= _reuse.FRAMES_KEPT


def test_taking_a_frame_keeps_the_other_maps_in_release_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking a map of one size leaves the others in release order: the trim closes the oldest."""
    x, y, z = _reuse.take_frames(2 * SIZE), _reuse.take_frames(SIZE), _reuse.take_frames(3 * SIZE)
    mx, mz = _mmap_under(x), _mmap_under(z)
    del x, y, z
    gc.collect()  # released in the order x, y, z
    again = _reuse.take_frames(SIZE)  # y's map
    assert [len(m) for m in _reuse._frames] == [len(mx), len(mz)]  # type: ignore[arg-type]
    monkeypatch.setattr(_reuse, "FRAMES_KEPT", len(mz) + len(again.base.obj))  # type: ignore[arg-type, union-attr]
    del again
    gc.collect()  # y's map comes back: one map too many, and the oldest (x's) goes
    assert mx is not None
    assert mx.closed
    assert mz is not None
    assert not mz.closed


def test_a_map_released_while_frames_are_taken_on_the_same_thread_joins_the_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release that runs inside ``take_frames`` (its last array collected there) neither deadlocks nor is lost."""
    import threading

    held: list[np.ndarray | None] = [_reuse.take_frames(SIZE)]
    other = _mmap_under(held[0])  # type: ignore[arg-type]
    real_unused = _reuse._unused
    spare = _reuse.take_frames(2 * SIZE)  # a map in the pool, so that take_frames checks one
    del spare
    gc.collect()

    def unused_dropping_the_held_frame(m: object) -> bool:
        held[0] = None  # the last array over ``other`` goes here: _released runs on this thread
        gc.collect()
        return real_unused(m)  # type: ignore[arg-type]

    monkeypatch.setattr(_reuse, "_unused", unused_dropping_the_held_frame)
    done: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: done.append(_reuse.take_frames(2 * SIZE)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive()  # no deadlock
    assert done
    assert other in list(_reuse._frames)  # the map released inside the call joined the pool
