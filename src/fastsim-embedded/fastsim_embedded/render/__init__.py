"""Render-side capture and camera-only render Replay.

    | module        | what it owns                                                           |
    |---------------|------------------------------------------------------------------------|
    | capture       | ``RenderCapture``: render.state, geometry and fluid per tick            |
    | mujoco        | the MuJoCo render source (render.state, kinematic posing)              |
    | synthetic     | the synthetic backend's render source                                  |
    | geometry      | ``scene.geometry@2`` of a MuJoCo model                                 |
    | fluid         | the deterministic particle emitter (``fluid.audit``)                   |
    | camera_mounts | cameras a Run adds to a scene (``extra_cameras``)                      |
    | replay        | ``replay``: pose a scene from a recorded render.state, never step it   |
"""
