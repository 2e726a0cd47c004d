"""What ``fastsim_record.gym`` asks the Gymnasium host for, and what it gets back per episode."""

from __future__ import annotations

from pathlib import Path

import attrs

__all__ = ["EpisodeFile", "RecordingOptions"]


@attrs.frozen(kw_only=True)
class RecordingOptions:
    """What ``fastsim_record.gym`` asks for (its options, already checked)."""

    prefix: str = "episode"
    first_episode: int = 0
    fps: float = 30.0
    cameras: bool = True  # record render() frames as the camera ``camera`` (gymnasium_host.cameras)
    images: bool = True  # Box(uint8, (H, W, 3)) observation leaves as cameras (False: numeric, exact)
    camera: str = "render"
    camera_envs: tuple[int, ...] | None = None  # sub-envs whose frames are recorded (None: all)
    encoding: str = "jpeg"
    quality: int | None = None
    render_state: bool = False
    render_state_hz: float | None = None
    geometry: bool = False  # scene.geometry@2 of a MuJoCo env
    info_keys: tuple[str, ...] = ()
    integrity: str = "structural"
    numeric_queue_bytes: int = 32 * 1024 * 1024
    media_queue_items: int = 16
    writers: int = 4
    max_episode_bytes: int | None = None  # raw bytes (rows + frames) one episode may record, then it ends
    durable: bool = True  # the call that ends an episode returns once its file is committed (kill -9 safe)


@attrs.frozen
class EpisodeFile:
    """One committed (or refused) episode: its path, sub-env, steps, seed and outcome."""

    path: Path | None
    sub_env: int | None
    episode: int
    steps: int
    seed: int | None
    completion: str
    reason: str
