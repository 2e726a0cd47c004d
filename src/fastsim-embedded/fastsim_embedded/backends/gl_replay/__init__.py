"""Cross-backend Replay's second renderer: a recording drawn with moderngl, no physics engine.

    | # | module    | what                                                                   |
    |---|-----------|------------------------------------------------------------------------|
    | 1 | scene     | the recorded geometry, body poses per tick and camera calibration,     |
    |   |           | read through the format's bounded decoders                             |
    | 2 | shapes    | triangles for every shape the geometry stream carries                   |
    | 3 | camera    | the pinhole model both renderers honour, as OpenGL matrices            |
    | 4 | gl        | the headless moderngl context, uploads and frames (imports moderngl)   |
    | 5 | backend   | the ``moderngl`` backend ``fsr replay --renderer moderngl`` builds       |

Importing this package imports neither moderngl nor MuJoCo; ``gl`` imports moderngl,
and ``gl.load_moderngl`` turns its absence into one line naming the ``[gl]`` extra.
"""
