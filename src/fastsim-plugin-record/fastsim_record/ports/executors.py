"""The executor port: where per-file batch jobs run.

A batch command (``fsr validate|info|index|export`` over many files, ``fsr upload``,
``fsr record --episodes N --ray``) turns its work into independent jobs, each a
module-level function applied to one picklable item.  An executor runs them and yields
the results in the order of the items.  The embedded default is a local process pool
(``fastsim_record.batch.executors.ProcessPool``); ``RayTasks`` runs the same jobs as
plain ``@ray.remote`` tasks on a Ray cluster.  Nothing else schedules work.

    | # | adapter       | chosen by                   | workers                        |
    |---|---------------|-----------------------------|--------------------------------|
    | 1 | ``ProcessPool``| default, ``--jobs J``      | J processes (1: in-process)    |
    | 2 | ``RayTasks``  | ``--ray [ADDRESS]``, ``RAY_ADDRESS`` | the cluster's CPUs    |
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["Executor"]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs one function over many items; results come back in item order."""

    @property
    def name(self) -> str:
        """A short label for summaries, e.g. ``pool(2)`` or ``ray``."""
        ...

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, idempotent: bool = True) -> Iterator[R]:
        """``fn(item)`` for every item, possibly in parallel; yielded in item order.

        ``fn`` must be a module-level function and items and results picklable.  Items that
        are not ``idempotent`` (recording an episode) run one per task and are never retried."""
        ...

    def close(self) -> None:
        """Release the workers (a Ray connection this executor opened is shut down)."""
        ...
