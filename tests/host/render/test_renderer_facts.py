"""Profile rule 6 beyond the main job: the ``mujoco-shapes`` backend and moderngl Replay.

Each camera's calibration profile names the renderer that drew its frames (name, version,
GL backend, MSAA samples, shadow map size), and ``fsr info`` shows it (issue 26; audit46
row 20 (a) and (c)).  One short shapes recording (0.4 s at 15 Hz, 64 x 48) serves both.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("mujoco")

import fastsim_record as fr
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main as fsr_main

pytestmark = pytest.mark.mujoco

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _write(path: Path, base: Path, duration_s: float | None = None) -> Path:
    document = yaml.safe_load(base.read_text(encoding="utf-8"))
    document["runtime"]["sensor_hz"] = 15
    if duration_s is not None:
        document["runtime"]["duration_s"] = duration_s
    document["scenario"]["scene"]["mujoco-shapes"] = {"width": 64, "height": 48}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def shapes_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/shapes/run.yaml for 0.4 s (6 ticks) at 64 x 48, with render.state and geometry."""
    root = tmp_path_factory.mktemp("shapes-facts")
    prepared = prepare_run(_write(root / "source.yaml", EXAMPLES / "shapes" / "run.yaml", 0.4))
    result = run_session(prepared, root)
    assert result.outcome.ok, result.outcome.reason
    return root / prepared.output_names[0]


def _renderers(path: Path) -> dict[str, dict[str, Any]]:
    """Each camera's renderer, the same in every calibration epoch (``rec.calibration``)."""
    out: dict[str, dict[str, Any]] = {}
    with fr.open(path) as rec:
        for camera in rec.cameras():
            calibration = rec.calibration(camera)
            assert calibration.problems == ()
            found = [epoch.profile["renderer"] for epoch in calibration.epochs]
            assert found
            assert all(r == found[0] for r in found), found
            out[camera] = dict(found[0])
    return out


def _info(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    capsys.readouterr()
    assert fsr_main(["info", str(path), "--json"]) == 0
    cameras = json.loads(capsys.readouterr().out)["cameras"]
    assert fsr_main(["info", str(path)]) == 0
    return cameras, capsys.readouterr().out


def test_mujoco_shapes_profiles_name_the_renderer(shapes_source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(a) mujoco-shapes: MuJoCo, its version, MUJOCO_GL and the scene's <quality>; fsr info shows them."""
    import mujoco

    from fastsim_embedded.backends import mujoco_shapes

    asset = Path(mujoco_shapes.__file__).parent / "assets" / "shapes.xml"
    quality = mujoco.MjModel.from_xml_path(str(asset)).vis.quality  # offsamples="0" shadowsize="0"
    expected = {"name": "mujoco", "version": mujoco.__version__, "gl_backend": "egl",
                "msaa_samples": int(quality.offsamples), "shadow_map_size": int(quality.shadowsize)}
    renderers = _renderers(shapes_source)
    assert renderers == {"front": expected, "top": expected}
    cameras, text = _info(shapes_source, capsys)
    assert {name: c["renderer"] for name, c in cameras.items()} == renderers
    assert f"camera front: rendered by mujoco {mujoco.__version__} (egl), MSAA 0 samples, shadow map 0" in text
    assert "renderer not recorded" not in text


def test_moderngl_replay_profiles_name_moderngl(
    shapes_source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(c) fsr replay --renderer moderngl: moderngl, its version, EGL, MSAA 0 and no shadow map; fsr info shows them."""
    pytest.importorskip("moderngl")
    run = _write(tmp_path / "replay.yaml", EXAMPLES / "shapes-replay" / "run.yaml")
    code = fsr_main(["replay", str(shapes_source), str(run), "--output-dir", str(tmp_path), "--renderer", "moderngl"])
    assert code == 0, capsys.readouterr().err
    version = metadata.version("moderngl")
    expected = {"name": "moderngl", "version": version, "gl_backend": "egl", "msaa_samples": 0, "shadow_map_size": 0}
    output = tmp_path / "shapes-replay.fsr"
    renderers = _renderers(output)
    assert renderers == {"front": expected, "top": expected}
    cameras, text = _info(output, capsys)
    assert {name: c["renderer"] for name, c in cameras.items()} == renderers
    assert f"camera top: rendered by moderngl {version} (egl), MSAA 0 samples, shadow map 0" in text

