"""The ``render.state`` record codec: worker-side zlib level 1, bounded decoding.

Byte-level only: layout, encoding, validation and bounded decoding.  The plugin's
``fastsim_record.adapters.render_state`` feeds it the captured mappings.

The capture path hands Record a mapping of read-only arrays, one entry per
``"<group>/<entity>/<field>"`` key, untouched (no compression, no quantization).  The
writer worker encodes each mapping exactly once with :func:`encode_render_state`; an
offline reader (Replay) decodes it with :func:`decode_render_state`.

State keys (``check_state``):

    | # | group        | field            | shape  | dtype              | presence                 |
    |---|--------------|------------------|--------|--------------------|--------------------------|
    | 1 | articulation | joint_position   | (n,)   | float64 or float32 | required per entity      |
    | 2 | articulation | joint_velocity   | (n,)   | as joint_position  | required, same n         |
    | 3 | articulation | root_pose        | (7,)   | float64 or float32 | optional                 |
    | 4 | articulation | root_twist       | (6,)   | float64 or float32 | optional                 |
    | 5 | rigid        | pose             | (7,)   | float64 or float32 | required per entity      |
    | 6 | rigid        | linear_velocity  | (3,)   | float64 or float32 | required per entity      |
    | 7 | rigid        | angular_velocity | (3,)   | float64 or float32 | required per entity      |
    | 8 | fluid        | positions        | (N, 3) | float32 (packed)   | required per entity      |

A pose is ``x, y, z, qx, qy, qz, qw`` (world frame, metres, unit quaternion); a twist
is ``vx, vy, vz, wx, wy, wz``.  Entity names are non-empty and contain no ``/``.
Every buffer is stored little-endian and C-contiguous; fluid positions are always
packed little-endian float32 XYZ (the worker converts other float dtypes, never the
capture path).

Payload layout (all integers little-endian; a steady stream's layout is validated once,
see :func:`layout_for`):

    | offset | size | field                                                           |
    |--------|------|-----------------------------------------------------------------|
    | 0      | 4    | magic ``FSRS``                                                  |
    | 4      | 2    | version ``1``                                                   |
    | 6      | 2    | flags ``0``                                                     |
    | 8      | 4    | body_length: the declared decompressed size of the body         |
    | 12     | ...  | one zlib stream (level 1) of the body, and nothing after it     |

    body := u32 meta_length | meta (canonical JSON) | zero pad to 8 | buffer area
    buffer area := each buffer at its declared offset (relative to the area's start,
                   8-aligned) with its declared byte length, zero padding between

``meta`` is ``{"schema": "fastsim-render-state/1", "entries": [{"key", "dtype",
"shape", "offset", "nbytes"}, ...]}`` with entries sorted by key.

Decoding rules (every violation is one :class:`RenderStatePayloadError` line):

    | # | rule                                                                              |
    |---|-----------------------------------------------------------------------------------|
    | 1 | magic, version and flags as above                                                 |
    | 2 | ``body_length <= MAX_BODY_BYTES`` (256 MiB) and ``<= max_body_bytes`` if given    |
    | 3 | inflation writes into one preallocated buffer of ``body_length`` bytes, in steps   |
    |   | of at most 1 MiB out / 64 KiB in, and stops there: the stream must end exactly     |
    |   | there, with no trailing compressed or raw bytes                                    |
    | 4 | meta is canonical JSON, ``<= MAX_META_BYTES``, holds at most one ``{`` or ``[``   |
    |   | per 32 bytes (checked before parsing), and names the schema above                 |
    | 5 | each entry passes the key table, lies inside the body, is 8-aligned, does not     |
    |   | overlap another and has ``nbytes == prod(shape) * itemsize``                      |

So a hostile payload never makes the decoder allocate more than its declared size (plus
one 1 MiB step), and never more than ``MAX_BODY_BYTES``: the decoded arrays are read-only
views of that one buffer.
"""

from fastsim_recording_format.codecs.render_state._decode import RenderState, decode_render_state
from fastsim_recording_format.codecs.render_state._encode import (
    Layout,
    encode_render_state,
    encode_with_layout,
    layout_for,
    layout_of,
    state_signature,
)
from fastsim_recording_format.codecs.render_state._keys import (
    FIELDS,
    MAGIC,
    MAX_BODY_BYTES,
    MAX_META_BYTES,
    SCHEMA,
    STREAM_CODEC,
    STREAM_NAME,
    VERSION,
    ZLIB_LEVEL,
    check_state,
    record_metadata,
    state_key,
)
from fastsim_recording_format.errors import RenderStatePayloadError

__all__ = [
    "FIELDS",
    "MAGIC",
    "MAX_BODY_BYTES",
    "MAX_META_BYTES",
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "VERSION",
    "ZLIB_LEVEL",
    "Layout",
    "RenderState",
    "RenderStatePayloadError",
    "check_state",
    "decode_render_state",
    "encode_render_state",
    "encode_with_layout",
    "layout_for",
    "layout_of",
    "record_metadata",
    "state_key",
    "state_signature",
]
