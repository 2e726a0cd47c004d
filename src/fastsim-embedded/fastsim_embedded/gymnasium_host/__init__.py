"""Recording Gymnasium episodes on the embedded host (entry point ``gymnasium``).

    | module          | what it owns                                                        |
    |-----------------|---------------------------------------------------------------------|
    | recorder        | ``HOST``: one ``Session`` per (sub-)env episode                      |
    | episode         | ``EpisodeWriter``: a Session opened and committed off the env thread |
    | spaces          | packing Gymnasium observations into numeric rows                    |
    | cameras         | where each camera's frames come from; its calibration               |
    | mujoco          | honest calibration of a Gymnasium MuJoCo env's ``render()`` frames   |
    | contract_driver | the adapter as a contract-suite ``CoreDriver``                       |
"""
