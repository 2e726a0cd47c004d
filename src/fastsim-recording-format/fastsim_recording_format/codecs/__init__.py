"""The payload codecs of FSR 1.2: one module per payload, byte level only.

    | module         | stream kind / payload_codec                   | encode | decode | error                   |
    |----------------|-----------------------------------------------|--------|--------|-------------------------|
    | numeric        | ``numeric-tick/1`` (observations)             | layout | layout | NumericPayloadError     |
    | calibration    | intrinsics profile metadata, 72-byte K        | digest | check  | CalibrationProfileError |
    | image          | JPEG SOF / PNG IHDR header bounds             |   -    | bounds | ImagePayloadError       |
    | render_state   | ``render.state`` (zlib, schema render-state/1) |  yes   |  yes   | RenderStatePayloadError |
    | geometry       | ``scene.geometry@2`` (chunked, deduplicated)  |  yes   |  yes   | GeometryPayloadError    |
    | fluid          | ``fluid.emissions`` (canonical JSON batches)  |  yes   |  yes   | FluidPayloadError       |

Every error is a :class:`fastsim_recording_format.errors.PayloadError`.  The codecs know
bytes, numpy arrays and plain values only: what turns the Core contract's values into
these inputs is the plugin's (``fastsim_record.adapters``).
"""
