"""The options of ``RecordEpisodes``/``RecordVectorEpisodes``, the output directory and the env's description.

    | # | option          | default        | meaning                                                        |
    |---|-----------------|----------------|----------------------------------------------------------------|
    | 1 | prefix          | ``"episode"``  | file names ``<prefix>-<episode:06d>[-env<i:03d>].fsr``          |
    | 2 | resume          | ``False``      | continue after the episodes already in ``directory`` (else any |
    |   |                 |                | file with this run's names is refused)                         |
    | 3 | fps             | the env's      | tick rate of the recorded time axis (``metadata["render_fps"]``, |
    |   |                 | ``render_fps``, else 30 |                                                       |
    | 4 | cameras         | ``True``       | record ``render()`` frames (``render_mode="rgb_array"``) as the |
    |   |                 |                | camera ``render``: MuJoCo envs calibrated, any other env        |
    |   |                 |                | ``uncalibrated`` (no K, no pose: never invented)               |
    | 4b| images          | ``True``       | image observation leaves as cameras (one per leaf,             |
    |   |                 |                | uncalibrated): ``Box(uint8, (H, W, 3))``, and grey ``(H, W)``, |
    |   |                 |                | ``(H, W, 1)`` / RGBA ``(H, W, 4)`` with bounds 0..255 (always  |
    |   |                 |                | PNG); ``False`` keeps them numeric (exact)                     |
    | 5 | camera_envs     | all            | vector envs: the sub-envs whose frames are recorded            |
    | 6 | encoding        | ``"jpeg"``     | ``"jpeg"`` or ``"png"`` (encoded in the Record worker) for RGB  |
    |   |                 |                | cameras; grey and RGBA cameras are always PNG (JPEG is RGB)    |
    | 7 | quality         | Record's       | JPEG quality 1-100                                             |
    | 8 | render_state    | ``False``      | MuJoCo envs: record ``render.state`` (for ``fsr replay``)       |
    | 8b| geometry        | ``False``      | MuJoCo envs: record ``scene.geometry@2`` (meshes and transforms)|
    | 9 | info_keys       | ``()``         | scalar ``info`` entries kept as channels ``info.<key>``         |
    | 10| integrity       | ``"structural"`` | Record's ``integrity``                                       |
    | 11| writers         | 4              | open slots and threads that open and commit episode files off  |
    |   |                 |                | the env thread (``gymnasium_host.episode``)                    |
    | 12| max_episode_bytes | none         | raw bytes (rows + frames, before JPEG/PNG) one episode may     |
    |   |                 |                | record; the step that would pass it ends the episode's file    |
    |   |                 |                | (truncated, completion ``stopped``, the reason says so)        |
    | 13| durable         | ``True``       | ``kill -9`` safe: the ``step``/``reset``/``close`` that ends an |
    |   |                 |                | episode returns once its file is committed, and the one that   |
    |   |                 |                | starts one once its file is open (with a writer slot: it then  |
    |   |                 |                | streams into its ``.incomplete`` from its first step; the      |
    |   |                 |                | slots stay ``writers``, so open files stay bounded).  Costs the |
    |   |                 |                | commit per episode on the env thread; ``False`` commits in the |
    |   |                 |                | pool while the env goes on (faster; a ``kill -9`` may then lose |
    |   |                 |                | the episodes that ended just before it)                        |

Every refusal is a ``GymWrapError`` with one line.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastsim_record.gym._host import GymWrapError

__all__ = ["OPTIONS", "check_directory", "describe", "host_options"]

OPTIONS = (
    "prefix", "resume", "fps", "cameras", "images", "camera_envs", "encoding", "quality", "render_state", "geometry",
    "info_keys", "integrity", "writers", "max_episode_bytes", "durable",
)
_PREFIX = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}$")


def host_options(host: Any, env: Any, options: Mapping[str, object], *, num_envs: int, first: int) -> Any:
    """The host's ``Options`` from the user's keyword options (module table)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise GymWrapError(f"unknown option {unknown[0]!r} (options: {', '.join(OPTIONS)})")
    prefix = options.get("prefix", "episode")
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise GymWrapError(f"prefix: must be 1-101 letters, digits, '_', '.' or '-' (got {prefix!r})")
    fps = options.get("fps") or (getattr(env, "metadata", None) or {}).get("render_fps") or 30.0
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not math.isfinite(fps) or fps <= 0:
        raise GymWrapError(f"fps: must be a positive number (got {fps!r})")
    encoding = options.get("encoding", "jpeg")
    if encoding not in ("jpeg", "png"):
        raise GymWrapError(f"encoding: must be 'jpeg' or 'png' (got {encoding!r})")
    quality = options.get("quality")
    if quality is not None and (isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100):
        raise GymWrapError(f"quality: must be an integer from 1 to 100 (got {quality!r})")
    camera_envs = options.get("camera_envs")
    if camera_envs is not None:
        try:
            camera_envs = tuple(sorted({int(i) for i in camera_envs}))  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            raise GymWrapError(f"camera_envs: must be sub-env indices (got {camera_envs!r})") from None
        bad = [i for i in camera_envs if not 0 <= i < num_envs]
        if bad:
            raise GymWrapError(f"camera_envs: sub-env {bad[0]} does not exist (the env has {num_envs})")
    info_keys = options.get("info_keys", ())
    if isinstance(info_keys, str) or not all(isinstance(k, str) and k for k in info_keys):  # type: ignore[attr-defined]
        raise GymWrapError(f"info_keys: must be a list of info key names (got {info_keys!r})")
    workers = options.get("writers", 4)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
        raise GymWrapError(f"writers: must be an integer from 1 to 64 (got {workers!r})")
    durable = options.get("durable", True)
    if not isinstance(durable, bool):
        raise GymWrapError(f"durable: must be True or False (got {durable!r})")
    integrity = options.get("integrity", "structural")
    limit = options.get("max_episode_bytes")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise GymWrapError(f"max_episode_bytes: must be a positive integer (got {limit!r})")
    return host.Options(
        prefix=prefix, first_episode=first, fps=float(fps), cameras=bool(options.get("cameras", True)),
        images=bool(options.get("images", True)),
        camera_envs=camera_envs, encoding=encoding, quality=quality,
        render_state=bool(options.get("render_state", False)), geometry=bool(options.get("geometry", False)),
        info_keys=tuple(info_keys),  # type: ignore[arg-type]
        integrity=integrity, writers=workers, max_episode_bytes=limit, durable=durable,
    )


def check_directory(directory: str | Path, prefix: str, *, resume: bool) -> tuple[Path, int]:
    """``(directory, first episode number)``: a directory that holds files with this run's
    names is refused unless ``resume`` (then numbering continues).  Nothing is created here."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise GymWrapError(f"{path}: not a directory")
    if not path.exists():
        return path, 0
    pattern = re.compile(rf"^\.?{re.escape(prefix)}-(\d{{6,}})(?:-env\d{{3,}})?\.fsr(?:\..*)?$")
    numbers = [int(m.group(1)) for p in path.iterdir() if (m := pattern.match(p.name))]
    if numbers and not resume:
        taken = sorted(p.name for p in path.iterdir() if pattern.match(p.name))
        raise GymWrapError(
            f"{path / taken[0]}: this directory already holds {len(taken)} file(s) named like this run's episodes; "
            "choose another directory or prefix, or pass resume=True to continue after them"
        )
    return path, (max(numbers) + 1 if numbers else 0)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _spec(spec: Any) -> dict[str, object] | None:
    if spec is None:
        return None
    return {"id": getattr(spec, "id", None), "kwargs": _plain(dict(getattr(spec, "kwargs", {}) or {})),
            "max_episode_steps": getattr(spec, "max_episode_steps", None),
            "entry_point": str(getattr(spec, "entry_point", ""))}


def _plain(value: Any) -> Any:
    """``value`` as JSON data of its own type: NumPy scalars and arrays as numbers and lists (never their text)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # a NumPy array or scalar
        return _plain(value.tolist())
    return value


def _wrappers(env: Any) -> list[str]:
    stack = []
    while env is not None:
        stack.append(type(env).__name__)
        env = getattr(env, "env", None)
    return stack


def describe(env: Any, *, sub_env: Any = None) -> dict[str, object]:
    """The env as recorded with every episode: spec, wrapper stack, versions, spaces."""
    inner = sub_env if sub_env is not None else env
    unwrapped = getattr(inner, "unwrapped", inner)
    package = type(unwrapped).__module__.split(".")[0]
    versions = {"gymnasium": _version("gymnasium"), package: _version(package.replace("_", "-")) or _version(package)}
    if type(getattr(unwrapped, "model", None)).__module__.startswith("mujoco"):
        versions["mujoco"] = _version("mujoco")
    spaces = getattr(env, "single_observation_space", None), getattr(env, "single_action_space", None)
    if spaces[0] is None:
        spaces = getattr(env, "observation_space", None), getattr(env, "action_space", None)
    return {
        "source": "gymnasium",
        "spec": _spec(getattr(inner, "spec", None) or getattr(env, "spec", None)),
        "wrappers": _wrappers(env) + (["sub-env: " + " > ".join(_wrappers(sub_env))] if sub_env not in (None, env) else []),
        "versions": versions,
        "observation_space": repr(spaces[0]),
        "action_space": repr(spaces[1]),
        "num_envs": getattr(env, "num_envs", None),
        "autoreset_mode": str(getattr(env, "metadata", {}).get("autoreset_mode", "")) or None,
    }
