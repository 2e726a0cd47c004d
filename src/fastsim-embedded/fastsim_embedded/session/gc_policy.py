"""The cyclic garbage collector's policy for the length of one scripted Run (``run_session``).

With Record on, every tick leaves a handful of GC-tracked objects (envelopes, payload
mappings, observation values) alive in Record's lanes until the writer worker drains
them, so the collector's young generation fills and collects objects that are about to
die anyway, on whichever thread allocates next -- usually the simulation thread.  And a
full collection traces the whole startup heap (the Run document, the compiled scene,
every imported module's objects): tens of milliseconds at a random tick.

``run_session`` therefore runs its ticks and its finalization under this policy:

    | what                  | while the Run is live                          | afterwards     |
    |-----------------------|------------------------------------------------|----------------|
    | startup heap          | ``gc.freeze()`` once the Run is opened: out of | ``gc.unfreeze``|
    |                       | every collection's scan (only when nothing     |                |
    |                       | else froze objects before: that freeze is kept)|                |
    | gen-0 threshold       | raised to ``RUN_GEN0_THRESHOLD`` (never lowered,| the old triple |
    |                       | and 0 -- collection off -- stays 0)            |                |
    | ``gc.enable/disable`` | untouched                                      | untouched      |

It is applied identically with Record on and off (the baseline stays fair), restored on
every exit path (exceptions, ``KeyboardInterrupt``), and reference counted, so Runs that
overlap in threads of one process share one policy and the last one out restores it.
The Gymnasium paths (``FastSimRun-v0``, the Gymnasium recorder) never set it: their
process is the user's training loop.

Opt-out: the environment variable ``FASTSIM_RUN_GC``: ``run`` (default) applies the
policy, ``inherit`` leaves the process's collector exactly as it is.  Any other value is
refused before anything runs (``RunConfigError`` naming the variable; ``fsr record``
exits 2).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from fastsim_contract.run_errors import RunConfigError, RunIssue

__all__ = ["GC_POLICY_ENV", "RUN_GEN0_THRESHOLD", "gc_policy_enabled", "run_gc_policy"]

#: the environment variable that chooses the policy
GC_POLICY_ENV = "FASTSIM_RUN_GC"
_CHOICES = {"run": True, "inherit": False}
#: the young generation's threshold during a Run (CPython's default is 700): about ten
#: times what Record holds between two drains of its worker at 120 Hz and above
RUN_GEN0_THRESHOLD = 10_000

_lock = threading.Lock()
_depth = 0
_saved: tuple[tuple[int, ...], bool] | None = None  # (thresholds, whether this policy froze)


def gc_policy_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``FASTSIM_RUN_GC`` asks for the Run policy; ``RunConfigError`` if it is
    set to anything but ``run`` or ``inherit``."""
    value = (os.environ if environ is None else environ).get(GC_POLICY_ENV, "run")
    choice = _CHOICES.get(value.strip().lower())
    if choice is None:
        raise RunConfigError(
            [RunIssue(GC_POLICY_ENV, f"expected 'run' or 'inherit', got {value!r} (environment variable)")]
        )
    return choice


@contextmanager
def run_gc_policy(enabled: bool = True) -> Iterator[None]:
    """The Run's collector policy for the ``with`` block (nothing when not ``enabled``)."""
    if not enabled:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _leave()


def _enter() -> None:
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        thresholds = gc.get_threshold()
        froze = gc.get_freeze_count() == 0  # an embedding process's own freeze is kept as it is
        _saved = (thresholds, froze)
        if froze:
            gc.freeze()
        if thresholds[0]:  # 0: the process turned automatic collection off; kept
            gc.set_threshold(max(thresholds[0], RUN_GEN0_THRESHOLD), *thresholds[1:])


def _leave() -> None:
    global _depth, _saved
    with _lock:
        _depth -= 1
        if _depth > 0 or _saved is None:
            return
        thresholds, froze = _saved
        _saved = None
        gc.set_threshold(*thresholds)
        if froze:
            gc.unfreeze()
