"""Result memory for large reads, handed out again once nothing uses it (``empty_bytes``).

A read of tens of megabytes into fresh memory pays the kernel for every page twice: the
page is zeroed when it is first touched, and the read then overwrites it.  numpy's
allocator returns a block that large to the kernel when the last array over it goes
away, so each such read starts on fresh pages.  Into memory that is already backed the
same read took 8.3-9.8 ms here, against 12.4-14.3 ms into fresh memory (the 0.05 h file
of ``benchmarks/bench_read.py``, 46.7 MB; ``docs/notes/issue-26-read26c.md``).

So a result from :data:`MIN_BYTES` up to ``LARGE`` lives in an anonymous map (asking
for transparent huge pages, as numpy does for blocks this big), and this module keeps
the most recent map.  The next such read reuses it when nothing else refers to it any
more, else it gets a map of its own and the old one is left to its users.  It is never
reused while any array or buffer over it lives: every array over the map holds a buffer
of it (numpy keeps one for ``frombuffer``), and a map with a buffer out refuses to be
resized, which :func:`_unused` asks (a resize to its own length, which changes nothing).
Where that does not hold (checked once, on a small map) nothing is kept.

Bounded memory: at most one map is kept beyond what the caller's arrays hold, at most
``LARGE`` bytes; and once the last array over a map is gone its pages are handed back to
the kernel as free-on-pressure (``MADV_FREE``): they stay in place for the next read
unless the machine needs the memory, when the kernel takes them without writing them
anywhere.

Decoded frames (:func:`take_frames`, ``Dataset`` samples) are smaller, about 1 MB a
640x480 image, and a sample holds several.  A fresh process (a DataLoader worker) frees
them at the top of its heap, where glibc hands them back to the kernel, so every sample
was decoded into fresh pages: a worker spent 4.1 ms of CPU a 3-camera sample against
2.5 ms in a long-lived process (stop 47, ``docs/notes/stop-47.md``).  So frames live in
maps of their own, and a map whose arrays are all gone goes back to a pool that the
next frames take first (``_released``: it is reused only once ``_unused`` agrees).  At most
``FRAMES_KEPT`` bytes of released maps are kept in each process, oldest first out, and they
stay resident: marking them free-on-pressure (``MADV_FREE``) as ``take`` does cost both
paths about 5% more (stop 47), so a worker keeps at most that much idle.
The pool serves worker processes only (:func:`frames`, a process that ``multiprocessing``
started: DataLoader workers, ``bench_read``'s pool).  A main process, whose heap keeps its
pages, decodes into numpy's memory, which read 5-12% faster there in ``bench_read``'s
one-process arm; a worker gains about 50% (``docs/notes/stop-47.md``).
"""

from __future__ import annotations

import collections
import mmap
import multiprocessing
import os
import threading
import weakref
from collections.abc import Callable

import numpy as np

from fastsim_recording_format.encoding import Array

__all__ = ["FRAMES_KEPT", "HUGE", "MIN_BYTES", "frames", "release", "take", "take_frames"]

MIN_BYTES = 4 << 20  # from here numpy asks for huge pages too; smaller results use numpy's allocator
HUGE = 2 << 20  # a map is a whole number of huge pages (the kernel then aligns it to one)
_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)
_FREE = getattr(mmap, "MADV_FREE", None)
_kept: list[mmap.mmap] = []  # the most recent map (at most one), in use or idle
_lock = threading.Lock()
_sound: list[bool] = []  # whether an array over a map shows as a buffer of it (checked once)
FRAMES_KEPT = 128 << 20  # released frame maps kept for the next frames, at most (bytes): a collated
#: batch of 32 samples of three 640x480 cameras is about 88 MB
_frames: collections.deque[mmap.mmap] = collections.deque()  # released frame maps, newest last
#: guards ``_frames``; re-entrant, because a frame map can be released (its last array
#: collected) on the thread that is taking frames
_frames_lock = threading.RLock()


def _unused(m: mmap.mmap) -> bool:
    """Whether no buffer over ``m`` is alive: a map with one refuses to be resized."""
    try:
        m.resize(len(m))
    except (BufferError, OSError, SystemError, TypeError, ValueError):  # in use, or cannot tell
        return False
    return True


def _check() -> bool:
    """Whether :func:`_unused` sees an array over a map, and then sees it gone."""
    m = mmap.mmap(-1, mmap.PAGESIZE, flags=_FLAGS)
    view = np.frombuffer(m, np.uint8)[1:]
    seen = not _unused(m)
    del view
    return seen and _unused(m)


def _sound_now() -> bool:
    """:func:`_check`'s answer, asked once a process."""
    with _lock:
        if not _sound:
            _sound.append(_check())
        return _sound[0]


def _new_map(room: int, what: str) -> mmap.mmap:
    """A fresh anonymous map of ``room`` bytes; ``MemoryError`` as numpy's allocator would say it."""
    try:
        return mmap.mmap(-1, room, flags=_FLAGS)
    except OSError as e:
        raise MemoryError(f"cannot allocate {room} bytes for {what}: {e}") from None


def _when_unreferenced(root: Array, callback: Callable[[mmap.mmap], None], m: mmap.mmap) -> None:
    """Call ``callback(m)`` when the last array over ``root`` goes: numpy's buffer of the map
    (``root.base``) goes with it."""
    holder = root.base if isinstance(root.base, memoryview) else root
    weakref.finalize(holder, callback, m).atexit = False


def _idle(m: mmap.mmap) -> None:
    """The last buffer over ``m`` is gone: its pages may be taken back under memory pressure."""
    if _FREE is not None and not m.closed and _unused(m):
        m.madvise(_FREE)


def take(size: int) -> Array:
    """``size`` bytes (uint8, uninitialised) in a map this module keeps for the next read."""
    room = -(-size // HUGE) * HUGE
    sound = _sound_now()
    with _lock:
        m = _kept[0] if _kept else None
        if m is None or not room <= len(m) <= 2 * room or not _unused(m):
            m = _new_map(room, "a read's result")
            if _HUGEPAGE is not None:
                m.madvise(_HUGEPAGE)
            _kept[:] = [m] if sound else []  # a map still in use stays with its arrays, not here
        # the buffer is taken under the lock: another thread's ``take`` in between would
        # otherwise find the map unused and hand the same memory out twice
        root = np.frombuffer(m, np.uint8, size)
    _when_unreferenced(root, _idle, m)
    return root


def _released(m: mmap.mmap) -> None:
    """The last array over frame map ``m`` is gone: it joins the pool; the oldest maps beyond
    ``FRAMES_KEPT`` bytes are closed.  Runs on whichever thread drops the last reference."""
    with _frames_lock:
        if m.closed:
            return
        _frames.append(m)
        kept = sum(map(len, list(_frames)))  # a snapshot: a nested release may append meanwhile
        while kept > FRAMES_KEPT:
            old = _frames.popleft()
            kept -= len(old)
            if _unused(old):
                old.close()


def take_frames(size: int) -> Array:
    """``size`` bytes (uint8, uninitialised) for decoded frames: a released map of the same
    page-rounded size when there is one that nothing refers to, else a new map."""
    room = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
    sound = _sound_now()
    with _frames_lock:
        # the newest released map of this size; the others keep their places (oldest first out)
        m = next((k for k in reversed(list(_frames)) if len(k) == room and _unused(k)), None)
        if m is not None:
            _frames.remove(m)
        else:
            m = _new_map(room, "decoded frames")
        root = np.frombuffer(m, np.uint8, size)
    if sound:  # else nothing is pooled: the map goes with its arrays
        _when_unreferenced(root, _released, m)
    return root


def frames(size: int) -> Array:
    """``size`` bytes (uint8, uninitialised) for decoded frames: from the pool
    (:func:`take_frames`) in a process that ``multiprocessing`` started, else numpy's."""
    if multiprocessing.parent_process() is not None:
        return take_frames(size)
    return np.empty(size, np.uint8)


def _forked() -> None:
    """A forked child keeps nothing of its parent's (its copy of the map would be copied on
    write) and gets a lock no parent thread can hold."""
    global _lock, _frames_lock
    _lock = threading.Lock()
    _frames_lock = threading.RLock()
    _kept.clear()
    _frames.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def release() -> None:
    """Keep no map: the next read gets fresh memory, and the kept map's memory goes back to
    the kernel now (or, if arrays still use it, when the last of them goes)."""
    with _lock:
        _kept.clear()
