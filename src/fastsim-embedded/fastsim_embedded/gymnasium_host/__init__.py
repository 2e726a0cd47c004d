"""Recording Gymnasium episodes on the embedded host (entry point ``gymnasium``).

    | module          | what it owns                                                        |
    |-----------------|---------------------------------------------------------------------|
    | recorder        | ``HOST``: one ``Session`` per (sub-)env episode                      |
    | episode         | ``EpisodeWriter``: a Session opened, published and committed off    |
    |                 | the env thread                                                       |
    | capture         | the env thread's checked copies (``Chunk``), packed in bulk off it   |
    | runs            | each episode's Run: compiled once per recording, renamed per episode |
    | spaces          | packing Gymnasium observations into numeric rows                    |
    | cameras         | where each camera's frames come from; its calibration               |
    | mujoco          | honest calibration of a Gymnasium MuJoCo env's ``render()`` frames   |
    | contract_driver | the adapter as a contract-suite ``CoreDriver``                       |
"""
