"""The Run of each recorded episode, compiled once per recording and renamed per episode.

Every episode of one recording runs the same Run: the ``gymnasium`` backend and Record
with the recording's options.  Only Record's ``output.name`` (the episode's file name)
differs, and which cameras the episode declares and whether it records the render side
(both fixed per sub-env).  So the Run is compiled (``compile_run``: the document parsed,
Record's config compiled against its catalog) once per ``(cameras, render side)`` of a
recording, and each episode gets that compilation with its own name:

    | # | what                                  | computed                                        |
    |---|---------------------------------------|-------------------------------------------------|
    | 1 | the component catalogs, the Record    | once per recording                              |
    |   | plugin factory                        |                                                 |
    | 2 | the compiled Run                      | once per recording and ``(cameras, render side)``|
    |   |                                       | (the first episode's name; ``template`` counts) |
    | 3 | an episode's compiled Run             | the template renamed by Core                    |
    |   |                                       | (``fastsim_contract.run_rename``: the document's|
    |   |                                       | Record entry, and Record's own                  |
    |   |                                       | ``RecordConfig.with_output_name``): what        |
    |   |                                       | compiling the renamed document gives            |

The cache belongs to one recording (``GymRecording``), so two recordings with different
options never share a compiled Run.  A name is checked with the host's output-name rule
before it is used.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from fastsim_contract.run import run_from_mapping
from fastsim_contract.run_compiler import CompiledRun, compile_run, discover_catalogs
from fastsim_contract.run_rename import with_output_name
from fastsim_embedded.backends.gymnasium_env import camera_channels
from fastsim_embedded.output.names import check_output_name
from fastsim_embedded.session.plugins import discover_plugin

__all__ = ["RECORD", "EpisodeRuns"]

RECORD = "plugin://fastsim/record"
ALIAS = "record"  # Record's alias in the episode's Run


class EpisodeRuns:
    """The compiled Runs of one recording's episodes (module table)."""

    def __init__(self, options: Any) -> None:
        self.options = options
        self.catalogs = discover_catalogs()
        self.factories = {RECORD: discover_plugin(RECORD)}
        self._templates: dict[tuple[tuple[tuple[str, int], ...], bool], CompiledRun] = {}
        self._lock = threading.Lock()  # episodes open in several threads
        self.compiled_templates = 0  # how many times a Run was compiled (counted by the tests)

    def compiled(self, name: str, *, cameras: Mapping[str, tuple[int, ...]], render_state: bool) -> CompiledRun:
        """The episode's compiled Run (row 3; ``ValueError`` for a name the host refuses);
        ``cameras``: alias -> its frames' ``(H, W, C)``."""
        problem = check_output_name(name)
        if problem is not None:
            raise ValueError(f"output name {name!r}: {problem}")
        key = (tuple((alias, shape[-1]) for alias, shape in cameras.items()), render_state)
        with self._lock:
            template = self._templates.get(key)
            if template is None:
                template = compile_run(run_from_mapping(self.document(name, cameras=cameras, render_state=render_state)),
                                       self.catalogs)
                self._templates[key] = template
                self.compiled_templates += 1
        return with_output_name(template, ALIAS, name, self.catalogs)

    def document(self, name: str, *, cameras: Mapping[str, tuple[int, ...]], render_state: bool) -> dict[str, object]:
        """The episode's Run: the ``gymnasium`` backend and Record with this episode's name.
        A grey or RGBA camera (C of 1 or 4) is PNG whatever ``encoding`` says (JPEG is RGB only)."""
        o = self.options
        streams: dict[str, object] = {"observations": {"mode": "all_numeric"}}
        if cameras:
            streams["cameras"] = configured = {}
            for alias in cameras:
                rgb, k, t, q = camera_channels(alias)
                encoding = o.encoding if cameras[alias][-1] == 3 else "png"
                cam: dict[str, object] = {"rgb": rgb, "intrinsics": k, "translation": t, "quaternion_xyzw": q,
                                          "encoding": encoding}
                if o.quality is not None and encoding == "jpeg":
                    cam["quality"] = o.quality
                configured[alias] = cam
        if render_state and o.render_state:
            streams["render_state"] = {"enabled": True, "rate_hz": o.render_state_hz or o.fps}
        if render_state and o.geometry:
            streams["geometry"] = {"enabled": True, "rate_hz": o.render_state_hz or o.fps}
        queues = {"numeric": {"max_items": 4096, "max_bytes": o.numeric_queue_bytes},
                  "media": {"max_items": o.media_queue_items, "max_bytes": 512 * 1024 * 1024}}
        config: dict[str, object] = {"output": {"name": name}, "streams": streams, "queues": queues,
                                     "integrity": o.integrity}
        return {
            "schema": "fastsim/2", "name": o.prefix, "backend": "gymnasium", "scenario": {"scene": {}},
            "runtime": {"sensor_hz": o.fps, "duration_s": 365 * 24 * 3600.0},
            "plugins": {ALIAS: {"use": RECORD, "config": config}},
        }

