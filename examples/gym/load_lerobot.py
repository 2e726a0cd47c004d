"""Load an exported dataset with LeRobot's own ``LeRobotDataset`` (a local root, no hub) and decode every item.

    python examples/gym/load_lerobot.py dataset/pusht
    python examples/gym/load_lerobot.py dataset/pusht --dump items.npz   # every item's values, for a check

Prints one JSON line: items, episodes, fps, every feature's key, the ``action``,
``observation.state`` and ``observation.environment_state`` features, and each camera's
decoded shape.  ``--dump`` also writes every item's values of those features, its indexes
and its decoded frames (uint8, H x W x 3) to an ``.npz``.  Runs with lerobot installed
(Python >= 3.12 for lerobot 0.6); ``HF_HUB_OFFLINE=1`` is set, so nothing is fetched.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from lerobot.datasets.lerobot_dataset import LeRobotDataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--repo-id", default="local/fsr-export")
    parser.add_argument("--dump", default=None, help="write every item's values to this .npz")
    args = parser.parse_args()
    ds = LeRobotDataset(args.repo_id, root=args.root, video_backend="pyav")
    cameras = list(ds.meta.camera_keys)
    keys = [k for k in ("action", "observation.state", "observation.environment_state") if k in ds.features]
    columns: dict[str, list[np.ndarray]] = {k: [] for k in [*keys, *cameras, "episode_index", "frame_index"]}
    for i in range(len(ds)):  # every item: its frames decoded at from_timestamp + timestamp
        item = ds[i]
        for key in [*keys, "episode_index", "frame_index"]:
            columns[key].append(item[key].numpy())
        for cam in cameras:  # C x H x W float in [0, 1] -> H x W x C uint8
            columns[cam].append((item[cam].permute(1, 2, 0).numpy() * 255.0).round().astype(np.uint8))
    summary = {
        "items": len(ds), "episodes": ds.num_episodes, "fps": ds.fps, "keys": sorted(ds.features),
        "features": {k: {"dtype": ds.features[k]["dtype"], "shape": list(ds.features[k]["shape"]),
                         "names": ds.features[k]["names"]} for k in keys},
        "cameras": {cam: list(columns[cam][0].shape) if columns[cam] else None for cam in cameras},
    }
    if args.dump:
        np.savez(args.dump, **{k: np.stack(v) for k, v in columns.items() if v})
    print(json.dumps(summary))  # noqa: T201


if __name__ == "__main__":
    main()
