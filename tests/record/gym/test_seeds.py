"""Seeds drawn for unseeded resets: a forked process never repeats its parent's."""

from __future__ import annotations

import os

from fastsim_record.gym._single import draw_seed


def test_a_forked_child_draws_other_seeds_than_its_parent() -> None:
    """After fork, parent and child each draw 8 seeds; the two sequences differ (the child reseeds)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its 8 seeds to the parent, then leave without pytest's teardown
        os.close(read)
        os.write(write, ",".join(str(draw_seed()) for _ in range(8)).encode())
        os._exit(0)
    os.close(write)
    parent = [draw_seed() for _ in range(8)]
    with os.fdopen(read, "rb") as pipe:
        child = [int(v) for v in pipe.read().decode().split(",")]
    os.waitpid(pid, 0)
    assert len(child) == 8
    assert child != parent
