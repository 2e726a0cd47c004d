"""The media lane of a recorded episode's Run holds whole frames of every camera (``gymnasium_host.runs``)."""

from __future__ import annotations

from fastsim_embedded.gymnasium_host.options import RecordingOptions
from fastsim_embedded.gymnasium_host.runs import SAMPLES_PER_FRAME, EpisodeRuns


def _media(runs: EpisodeRuns, cameras: dict[str, tuple[int, ...]]) -> dict[str, int]:
    document = runs.document("episode-000000", cameras=cameras, render_state=False)
    config = document["plugins"]["record"]["config"]  # type: ignore[index]
    return config["queues"]["media"]  # type: ignore[no-any-return]


def test_the_media_lane_holds_media_queue_items_frames_of_every_camera() -> None:
    """16 frames (4 samples each) of one camera, of each of two; the publisher runs 2 frames ahead of Record's pressure."""
    options = RecordingOptions()
    runs = EpisodeRuns(options)
    assert SAMPLES_PER_FRAME == 4
    assert _media(runs, {"render": (480, 640, 3)})["max_items"] == options.media_queue_items * 4 == 64
    assert _media(runs, {"render": (48, 64, 3), "wrist": (48, 64, 3)})["max_items"] == 128
    assert _media(runs, {})["max_items"] == 64  # numeric only: the lane is unused
