"""A LeRobot v3.0 dataset read with pyarrow and PyAV the way LeRobot loads one (no torch).

Rules followed (lerobot ``dataset_metadata``/``video_utils``): ``meta/info.json`` gives
``fps``, ``features`` and the path templates; ``meta/episodes`` rows give each
episode's data rows (``dataset_from_index``..``dataset_to_index``) and per video key
the mp4 and its ``from_timestamp``; a frame is the decoded frame whose presentation time
is within 1e-4 s of ``from_timestamp + timestamp``, else LeRobot raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

TOLERANCE_S = 1e-4


class FrameTimestampError(AssertionError):
    """No decoded frame within the tolerance of a query time (LeRobot's FrameTimestampError)."""


class LeRobotRules:
    """A dataset folder loaded by the rules above."""

    def __init__(self, root: Path) -> None:
        import pyarrow.parquet as pq

        self.root = root
        self.info: dict[str, Any] = json.loads((root / "meta" / "info.json").read_text())
        assert self.info["codebase_version"] == "v3.0"
        assert isinstance(self.info["fps"], int)
        self.episodes = pq.read_table(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
        files = {(e["data/chunk_index"], e["data/file_index"]) for e in self.episodes}
        tables = [pq.read_table(root / self.info["data_path"].format(chunk_index=c, file_index=f))
                  for c, f in sorted(files)]
        self.data = [row for t in tables for row in t.to_pylist()]
        self.tasks = pq.read_table(root / "meta" / "tasks.parquet").to_pylist()
        self.stats = json.loads((root / "meta" / "stats.json").read_text())
        self._decoded: dict[tuple[str, int, int], list[tuple[float, npt.NDArray[np.uint8]]]] = {}

    @property
    def video_keys(self) -> list[str]:
        """Features stored as video."""
        return [k for k, f in self.info["features"].items() if f["dtype"] == "video"]

    def _video(self, key: str, chunk: int, file: int) -> list[tuple[float, npt.NDArray[np.uint8]]]:
        import av

        if (key, chunk, file) not in self._decoded:
            path = self.root / self.info["video_path"].format(video_key=key, chunk_index=chunk, file_index=file)
            with av.open(str(path)) as container:
                stream = container.streams.video[0]
                frames: list[tuple[float, npt.NDArray[np.uint8]]] = []
                for f in container.decode(stream):
                    assert f.pts is not None
                    assert stream.time_base is not None
                    frames.append((float(f.pts * stream.time_base), np.asarray(f.to_ndarray(format="rgb24"), np.uint8)))
                self._decoded[(key, chunk, file)] = frames
        return self._decoded[(key, chunk, file)]

    def video_frame_count(self, key: str) -> int:
        """Frames decoded from every mp4 of a video key."""
        files = {(e[f"videos/{key}/chunk_index"], e[f"videos/{key}/file_index"]) for e in self.episodes}
        return sum(len(self._video(key, c, f)) for c, f in files)

    def frame(self, key: str, row: dict[str, Any]) -> npt.NDArray[np.uint8]:
        """The decoded frame of a data row, by LeRobot's timestamp rule."""
        ep = self.episodes[row["episode_index"]]
        query = ep[f"videos/{key}/from_timestamp"] + row["timestamp"]
        frames = self._video(key, ep[f"videos/{key}/chunk_index"], ep[f"videos/{key}/file_index"])
        times = np.array([t for t, _ in frames])
        k = int(np.argmin(np.abs(times - query)))
        if abs(times[k] - query) >= TOLERANCE_S:
            raise FrameTimestampError(f"{key}: query {query} s, nearest frame at {times[k]} s")
        return frames[k][1]


def psnr(a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]) -> float:
    """Peak signal-to-noise ratio in dB of two uint8 images."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)
