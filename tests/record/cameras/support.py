"""Camera test support: a backend wrapper that keeps (or doctors) what it publishes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from fastsim_embedded.backends import create_backend, register_backend
from fastsim_embedded.backends.base import Backend, BackendSpec, CameraReading
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import SessionResult, run_session

RECORD = "plugin://fastsim/record"
ROLE_STREAMS = {
    "rgb": "rgb",
    "intrinsics": "intrinsics",
    "translation": "extrinsics.translation",
    "quaternion_xyzw": "extrinsics.quaternion_xyzw",
}

Doctor = Callable[[int, list[CameraReading]], list[CameraReading]]


@attrs.define(eq=False)
class KeepingBackend:
    """Delegates to a real backend; keeps every camera reading it hands the host.

    ``doctor(tick, readings)`` may change what is published (fault injection).
    """

    inner: Backend
    doctor: Doctor | None = None
    kept: list[tuple[int, CameraReading]] = attrs.field(factory=list)
    _tick: int = 0

    @property
    def name(self) -> str:
        """The wrapped backend's name."""
        return self.inner.name

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def channels(self) -> Any:
        """As the wrapped backend."""
        return self.inner.channels()

    def reset(self, generation: int) -> None:
        """As the wrapped backend."""
        self.inner.reset(generation)

    def script(self, tick: int) -> Any:
        """As the wrapped backend; remembers the tick."""
        self._tick = tick
        return self.inner.script(tick)

    def apply_control(self, command: Any) -> Any:
        """As the wrapped backend."""
        return self.inner.apply_control(command)

    def step(self, substeps: int) -> None:
        """As the wrapped backend."""
        self.inner.step(substeps)

    def sample_numeric(self) -> Any:
        """As the wrapped backend."""
        return self.inner.sample_numeric()

    def sample_cameras(self) -> Sequence[CameraReading]:
        """The wrapped readings, doctored if asked, and kept."""
        readings = list(self.inner.sample_cameras())
        if self.doctor is not None:
            readings = self.doctor(self._tick, readings)
        self.kept += [(self._tick, r) for r in readings]
        return readings

    def close(self) -> None:
        """As the wrapped backend."""
        self.inner.close()


def camera_alias(name: str, **extra: object) -> dict[str, object]:
    """A camera alias config on the standard ``sensors.<name>.camera.*`` channels."""
    base = f"sensors.{name}.camera"
    return {
        "rgb": f"{base}.rgb",
        "intrinsics": f"{base}.intrinsics",
        "translation": f"{base}.extrinsics.translation",
        "quaternion_xyzw": f"{base}.extrinsics.quaternion_xyzw",
        **extra,
    }


@attrs.define(eq=False)
class CameraRun:
    """Runs one Record Run on the embedded host through a KeepingBackend."""

    tmp_path: Path
    backend: KeepingBackend | None = None
    plugins: list[Any] = attrs.field(factory=list)

    def __call__(
        self,
        *,
        inner: str,
        scene: Mapping[str, object],
        cameras: Mapping[str, Mapping[str, object]],
        sensor_hz: float = 30.0,
        duration_s: float = 1.0,
        doctor: Doctor | None = None,
        observations: Mapping[str, object] | None = None,
        media: Mapping[str, object] | None = None,
        lock: str | None = None,
    ) -> SessionResult:
        """Write the Run, wrap ``inner`` in a KeepingBackend and run it to its outcome.

        ``lock`` pins the Record catalog version (``lock.components``).
        """
        name = f"keeping-{inner}"

        def factory(spec: BackendSpec) -> KeepingBackend:
            self.backend = KeepingBackend(create_backend(inner, spec), doctor)
            return self.backend

        register_backend(name, factory)
        config: dict[str, Any] = {
            "output": {"name": "cams.fsr"},
            "streams": {
                "observations": observations or {"mode": "none", "include": {}},
                "cameras": {k: dict(v) for k, v in cameras.items()},
            },
            "queues": {"media": dict(media or {"max_items": 4096, "max_bytes": 1 << 30})},
        }
        run = {
            "schema": "fastsim/2",
            "name": "camera-test",
            "backend": name,
            "scenario": {"scene": dict(scene)},
            "runtime": {"sensor_hz": sensor_hz, "duration_s": duration_s},
            "plugins": {"record": {"use": RECORD, "config": config}},
        }
        if lock is not None:
            run["lock"] = {"components": {RECORD: lock}}
        path = self.tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(run, sort_keys=False))

        from fastsim_record.bootstrap import create_plugin

        def keep_plugin(context: Any) -> Any:
            plugin = create_plugin(context)
            self.plugins.append(plugin)
            return plugin

        return run_session(
            prepare_run(path), self.tmp_path / "out", factories={RECORD: keep_plugin}
        )

    @property
    def output(self) -> Path:
        """Where a committed recording lands."""
        return self.tmp_path / "out" / "cams.fsr"

