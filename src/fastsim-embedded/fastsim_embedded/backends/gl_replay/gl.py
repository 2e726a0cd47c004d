"""The OpenGL side of the second renderer: a headless moderngl context, meshes, frames.

One standalone EGL context per renderer (``moderngl.create_standalone_context(backend=
"egl")``: Mesa's llvmpipe on a machine without a GPU).  Meshes are uploaded once; a frame
is one draw per item with its world transform, lit by a headlight at the camera.  The
recording carries no materials or lights (the geometry stream excludes materials), so a
draw's albedo is a false colour: grey for static bodies, one colour per moving body
(:func:`body_colour`, from the body's name, the same in every frame and file).  Read
back as ``(H, W, 3)`` uint8 RGB and, when asked, ``(H, W)`` float32 depth in metres
along the optical axis (``inf`` where nothing was drawn).

Importing this module imports moderngl; :func:`load_moderngl` turns a missing package
into one line naming the extra to install.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from importlib import metadata
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_embedded.backends.gl_replay.camera import linear_depth, projection
from fastsim_embedded.backends.gl_replay.shapes import Tessellation

__all__ = ["ALBEDO", "Draw", "GlFrame", "GlRenderer", "MissingExtra", "Particles", "body_colour", "load_moderngl"]

ALBEDO: Final = (0.78, 0.78, 0.80)
AMBIENT: Final = 0.35
DIFFUSE: Final = 0.60

_VERTEX = """
#version 330
uniform mat4 model_view;
uniform mat4 projection;
in vec3 in_position;
in vec3 in_normal;
in vec3 in_offset;  // per instance (particles); unbound elsewhere, so (0, 0, 0)
out vec3 v_normal;
out vec3 v_position;
void main() {
    vec4 eye = model_view * vec4(in_position + in_offset, 1.0);
    v_position = eye.xyz;
    v_normal = mat3(model_view) * in_normal;
    gl_Position = projection * eye;
}
"""
_FRAGMENT = """
#version 330
uniform vec3 albedo;
uniform float ambient;
uniform float diffuse;
in vec3 v_normal;
in vec3 v_position;
out vec4 colour;
void main() {
    vec3 n = normalize(v_normal);
    vec3 to_eye = normalize(-v_position);
    float lit = ambient + diffuse * abs(dot(n, to_eye));
    colour = vec4(clamp(albedo * lit, 0.0, 1.0), 1.0);
}
"""


def body_colour(name: str) -> tuple[float, float, float]:
    """A moving body's false colour: a hue from its name's CRC-32, soft saturation."""
    hue = (zlib.crc32(name.encode()) % 360) / 60.0
    x = 1.0 - abs(hue % 2.0 - 1.0)
    rgb = [(1, x, 0), (x, 1, 0), (0, 1, x), (0, x, 1), (x, 0, 1), (1, 0, x)][int(hue) % 6]
    return tuple(0.35 + 0.5 * c for c in rgb)  # type: ignore[return-value]


class MissingExtra(RuntimeError):
    """The second renderer's optional dependency is not installed (one line)."""


def load_moderngl() -> Any:
    """``moderngl``, or :class:`MissingExtra` naming the extra that installs it."""
    try:
        import moderngl
    except ImportError as exc:
        raise MissingExtra(
            f"--renderer moderngl needs the [gl] extra: pip install 'fastsim-plugin-record[gl]' ({exc})"
        ) from None
    return moderngl


@attrs.frozen
class Draw:
    """One item of a frame: an uploaded mesh and its 4x4 local -> world transform."""

    mesh: Any
    world: npt.NDArray[np.float64]
    albedo: tuple[float, float, float] = ALBEDO


@attrs.frozen
class Particles:
    """Recorded fluid particles: ``(N, 3)`` world positions drawn as spheres of ``radius``."""

    positions: npt.NDArray[np.float32]
    radius: float = 0.006  # MuJoCo Replay's particle spheres (``MujocoRenderSource``)
    albedo: tuple[float, float, float] = (0.2, 0.45, 0.95)


@attrs.frozen
class GlFrame:
    """One rendered image: RGB, and depth in metres when it was asked for."""

    rgb: npt.NDArray[np.uint8]
    depth: npt.NDArray[np.float32] | None


@attrs.define(eq=False)
class GlRenderer:
    """A headless moderngl context with one program and a framebuffer per image size."""

    _ctx: Any = attrs.field(init=False, default=None)
    _program: Any = attrs.field(init=False, default=None)
    _fbos: dict[tuple[int, int], tuple[Any, Any]] = attrs.field(init=False, factory=dict)
    _meshes: list[Any] = attrs.field(init=False, factory=list)
    _particles: dict[float, tuple[Any, Any, Any, Any, Any]] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        moderngl = load_moderngl()
        try:
            self._ctx = moderngl.create_standalone_context(backend="egl")
        except Exception as exc:  # EGL missing or no device: one line, the caller reports it
            raise RuntimeError(f"moderngl could not create an EGL context: {str(exc).splitlines()[0]}") from None
        self._ctx.enable(moderngl.DEPTH_TEST)
        self._program = self._ctx.program(vertex_shader=_VERTEX, fragment_shader=_FRAGMENT)
        self._program["ambient"].value = AMBIENT
        self._program["diffuse"].value = DIFFUSE

    @property
    def info(self) -> dict[str, str]:
        """The GL implementation that draws (e.g. Mesa's llvmpipe) and moderngl's version."""
        return {
            "renderer": "moderngl",
            "moderngl": metadata.version("moderngl"),
            "gl_renderer": str(self._ctx.info.get("GL_RENDERER", "")),
            "gl_version": str(self._ctx.info.get("GL_VERSION", "")),
        }

    def facts(self, width: int, height: int) -> dict[str, object]:
        """How a ``width`` x ``height`` frame is made, for its calibration profile (rule 6 of
        ``fastsim_recording_format.codecs.calibration``): moderngl's version, its context's GL
        platform (``egl``, as ``MUJOCO_GL`` is the ``mujoco`` backend's), the MSAA samples of the
        framebuffer that size draws into, and no shadow map (a headlight, no shadows)."""
        with self._ctx:  # the framebuffer of that size, made now if no frame was drawn yet
            fbo, _ = self._fbo(width, height)
        return {
            "name": "moderngl",
            "version": metadata.version("moderngl"),
            "gl_backend": "egl",
            "msaa_samples": int(fbo.color_attachments[0].samples),
            "shadow_map_size": 0,
        }

    def upload(self, tessellation: Tessellation) -> Any:
        """A vertex array for one tessellated shape (kept until :meth:`close`)."""
        with self._ctx:
            return self._upload(tessellation)

    def _upload(self, tessellation: Tessellation) -> Any:
        vertices, normals, triangles = tessellation
        interleaved = np.ascontiguousarray(np.hstack([vertices, normals]), dtype="f4")
        vbo = self._ctx.buffer(interleaved.tobytes())
        ibo = self._ctx.buffer(np.ascontiguousarray(triangles, dtype="u4").tobytes())
        vao = self._ctx.vertex_array(
            self._program, [(vbo, "3f 3f", "in_position", "in_normal")], index_buffer=ibo, index_element_size=4
        )
        self._meshes.append((vao, vbo, ibo))
        return vao

    def _fbo(self, width: int, height: int) -> tuple[Any, Any]:
        key = (width, height)
        if key not in self._fbos:
            colour = self._ctx.renderbuffer((width, height), components=3)
            depth = self._ctx.depth_texture((width, height))
            self._fbos[key] = (self._ctx.framebuffer(color_attachments=[colour], depth_attachment=depth), depth)
        return self._fbos[key]

    def render(
        self,
        k: npt.NDArray[np.float64],
        width: int,
        height: int,
        view: npt.NDArray[np.float64],
        draws: Sequence[Draw],
        *,
        depth: bool = False,
        particles: Particles | None = None,
    ) -> GlFrame:
        """One frame of ``draws`` (and ``particles``) seen through K and ``view`` (``camera.view``)."""
        with self._ctx:  # make this context current: MuJoCo's renderer may share the thread
            fbo, depth_texture = self._fbo(width, height)
            fbo.use()
            fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
            self._program["projection"].write(projection(k, width, height).T.astype("f4").tobytes())
            model_view, albedo = self._program["model_view"], self._program["albedo"]
            for draw in draws:
                model_view.write((view @ draw.world).T.astype("f4").tobytes())
                albedo.value = draw.albedo
                draw.mesh.render()
            if particles is not None and len(particles.positions):
                self._draw_particles(view, particles)
            raw = fbo.read(components=3, alignment=1)
            rgb = np.frombuffer(raw, np.uint8).reshape(height, width, 3)[::-1]
            metres = None
            if depth:
                window = np.frombuffer(depth_texture.read(alignment=1), np.float32).reshape(height, width)[::-1]
                metres = linear_depth(window)
            return GlFrame(np.ascontiguousarray(rgb), metres)

    def _draw_particles(self, view: npt.NDArray[np.float64], particles: Particles) -> None:
        """One instanced draw: a sphere mesh per radius, an instance buffer grown on demand."""
        from fastsim_embedded.backends.gl_replay.shapes import tessellate

        count = len(particles.positions)
        cached = self._particles.get(particles.radius)
        if cached is None or cached[4] < count:
            if cached is not None:
                for obj in cached[:4]:
                    obj.release()
            vertices, normals, triangles = tessellate("sphere", [particles.radius])
            vbo = self._ctx.buffer(np.ascontiguousarray(np.hstack([vertices, normals]), dtype="f4").tobytes())
            ibo = self._ctx.buffer(np.ascontiguousarray(triangles, dtype="u4").tobytes())
            capacity = max(count, 1024)
            offsets = self._ctx.buffer(reserve=capacity * 12)
            vao = self._ctx.vertex_array(
                self._program,
                [(vbo, "3f 3f", "in_position", "in_normal"), (offsets, "3f/i", "in_offset")],
                index_buffer=ibo, index_element_size=4,
            )
            cached = self._particles[particles.radius] = (vao, vbo, ibo, offsets, capacity)
        vao, _, _, offsets, _ = cached
        offsets.write(np.ascontiguousarray(particles.positions, dtype="f4").tobytes())
        self._program["model_view"].write(view.T.astype("f4").tobytes())
        self._program["albedo"].value = particles.albedo
        vao.render(instances=count)

    def close(self) -> None:
        """Release every GL object and the context (idempotent)."""
        if self._ctx is None:
            return
        with self._ctx:
            self._release()
        self._ctx.release()
        self._ctx = None

    def _release(self) -> None:
        for vao, vbo, ibo in self._meshes:
            vao.release()
            vbo.release()
            ibo.release()
        self._meshes.clear()
        for fbo, depth_texture in self._fbos.values():
            fbo.release()
            depth_texture.release()
        self._fbos.clear()
        for vao, vbo, ibo, offsets, _ in self._particles.values():
            for obj in (vao, vbo, ibo, offsets):
                obj.release()
        self._particles.clear()
