"""Strict structuring of authored data into attrs classes, with ``path: message`` issues.

Used only at the edge, where YAML becomes typed values.  ``strict_converter()`` returns
a *fresh* cattrs ``Converter(forbid_extra_keys=True)`` for the caller to keep private,
with hooks that never coerce (``"3"`` is not an integer, ``true`` is not a number) and
that run each attrs field validator while the field's path is still known, so every
invalid field of a class is reported, each with the validator's own text.

Translation of a structuring failure into issues:

    | # | exception                     | issue                                          |
    |---|-------------------------------|------------------------------------------------|
    | 1 | ForbiddenExtraKeysError       | one per key: ``unknown key; did you mean ...`` |
    | 2 | ClassValidationError          | recurse, path + attribute name                 |
    | 3 | IterableValidationError       | recurse, path + mapping key / list index       |
    | 4 | KeyError (field missing)      | ``is required``                                |
    | 5 | anything else                 | ``str(exc)``: the validator's or hook's text   |
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, override

from fastsim_contract.run_errors import RunIssue

__all__ = [
    "describe",
    "join_path",
    "non_empty",
    "one_of",
    "optional_positive_number",
    "positive_number",
    "strict_converter",
    "structure_issues",
    "unknown_key_message",
    "value_at",
    "without_paths",
]

T = TypeVar("T")


def describe(value: object) -> str:
    """Render an authored value the way messages quote it (YAML-ish, short)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def join_path(prefix: str, key: object) -> str:
    """Dotted path of ``key`` under ``prefix``."""
    return f"{prefix}.{key}" if prefix else str(key)


def unknown_key_message(key: str, valid: Iterable[str]) -> str:
    """``unknown key`` plus the nearest valid key, or the list of valid keys.

    Nearest: difflib's closest match (ratio >= 0.6), else a valid key containing the
    authored one (``timeout`` -> ``requested_timeout_s``).
    """
    names = sorted(valid)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if not close and len(key) >= 3:
        close = [n for n in names if key.lower() in n.lower()][:1]
    if close:
        return f"unknown key; did you mean '{close[0]}'?"
    if not names:
        return "unknown key; no keys are accepted here"
    return "unknown key; valid keys are " + ", ".join(f"'{n}'" for n in names)


def one_of(choices: tuple[str, ...], *, legacy: tuple[str, ...] = ()) -> Any:
    """attrs validator: the value is one of ``choices`` (``legacy`` values pass silently)."""
    listed = ", ".join(f"'{c}'" for c in choices)

    def check(_: object, __: attrs.Attribute[Any], value: str) -> None:
        if value not in choices and value not in legacy:
            raise ValueError(f"must be one of {listed} (got {describe(value)})")

    return check


def non_empty(_: object, __: attrs.Attribute[Any], value: str) -> None:
    """attrs validator: a non-blank string."""
    if not value.strip():
        raise ValueError("must not be empty")


def positive_number(_: object, __: attrs.Attribute[Any], value: float) -> None:
    """attrs validator: a finite number greater than zero."""
    if not 0 < value < float("inf"):
        raise ValueError(f"must be a positive number (got {describe(value)})")


def optional_positive_number(_: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    """attrs validator: ``null`` or a finite number greater than zero."""
    if value is not None:
        positive_number(_, attribute, value)


def value_at(data: object, *keys: str) -> Any:
    """``data[k1][k2]...``, or ``None`` where a key is missing or a level is no mapping."""
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def without_paths(data: Mapping[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """A copy of ``data`` with every reported dotted path removed, so its default applies.

    A path that is absent (a missing required key) removes its parent entry instead.
    Used to check the rest of a document despite issues already reported.
    """
    root: dict[str, Any] = _copy(data)
    for path in paths:
        if path:
            _remove(root, path.split("."))
    return root


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _remove(root: dict[str, Any], parts: list[str]) -> None:
    parent: Any = root
    for part in parts[:-1]:
        if not isinstance(parent, dict) or part not in parent:
            return  # already removed with an ancestor
        parent = parent[part]
    if isinstance(parent, dict) and parts[-1] in parent:
        del parent[parts[-1]]
    elif len(parts) > 1:
        _remove(root, parts[:-1])


def _int(value: object, _: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer (got {describe(value)})")
    return value


def _float(value: object, _: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number (got {describe(value)})")
    return float(value)


def _str(value: object, _: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string (got {describe(value)})")
    return value


def _bool(value: object, _: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false (got {describe(value)})")
    return value


def _is_mapping_type(tp: Any) -> bool:
    origin = get_origin(tp)
    return origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)


def _mapping_hook(conv: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    args = get_args(tp)
    value_type: Any = args[1] if len(args) == 2 else Any

    def hook(value: object, _: object) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a mapping (got {describe(value)})")
        out: dict[str, Any] = {}
        errors: list[Exception] = []
        for key, item in value.items():
            if not isinstance(key, str):
                exc: Exception = ValueError(f"keys must be strings (got {describe(key)})")
                exc.__notes__ = [cattrs.errors.IterableValidationNote(
                    f"Structuring mapping key @ key {key!r}", describe(key), str)]
                errors.append(exc)
                continue
            try:
                out[key] = item if value_type is Any else conv.structure(item, value_type)
            except Exception as err:  # collected, re-raised as a group below
                err.__notes__ = [*getattr(err, "__notes__", []), cattrs.errors.IterableValidationNote(
                    f"Structuring mapping value @ key {key!r}", key, value_type)]
                errors.append(err)
        if errors:
            raise IterableValidationError("While structuring a mapping", errors, dict)
        return out

    return hook


def _attrs_hook(conv: cattrs.Converter, cl: type[Any]) -> Callable[[Any, Any], Any]:
    attrs.resolve_types(cl)
    overrides: dict[str, Any] = {}
    for field in attrs.fields(cl):
        if field.validator is None:
            continue

        def field_hook(value: object, _: object, field: attrs.Attribute[Any] = field) -> object:
            result = conv.structure(value, field.type if field.type is not None else Any)
            if field.validator is not None:
                field.validator(None, field, result)
            return result

        overrides[field.name] = override(struct_hook=field_hook)
    base = make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **overrides)

    def hook(value: object, _: object) -> object:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a mapping (got {describe(value)})")
        return base(value, cl)

    return hook


def strict_converter() -> cattrs.Converter:
    """A fresh private converter: forbid extra keys, no coercion, validators per field."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook_factory(_is_mapping_type, lambda tp: _mapping_hook(conv, tp))
    conv.register_structure_hook_factory(attrs.has, lambda cl: _attrs_hook(conv, cl))
    return conv


def _valid_keys(cl: type[Any] | None) -> list[str]:
    return [f.alias or f.name for f in attrs.fields(cl)] if cl is not None and attrs.has(cl) else []


def _translate(exc: BaseException, path: str, out: list[RunIssue]) -> None:
    if isinstance(exc, ForbiddenExtraKeysError):
        valid = _valid_keys(exc.cl)
        for key in sorted(exc.extra_fields):
            out.append(RunIssue(join_path(path, key), unknown_key_message(key, valid)))
    elif isinstance(exc, ClassValidationError | IterableValidationError):
        noted, plain = exc.group_exceptions()
        for sub, note in noted:  # an attribute's name, or an item's index
            _translate(sub, join_path(path, getattr(note, "name", None) or note.index), out)
        for sub in plain:
            _translate(sub, path, out)
    elif isinstance(exc, KeyError):
        out.append(RunIssue(path, "is required"))
    else:
        out.append(RunIssue(path, str(exc)))


def structure_issues(
    conv: cattrs.Converter, data: object, cl: type[T], *, path: str = ""
) -> tuple[T | None, list[RunIssue]]:
    """Structure ``data`` as ``cl``; on failure return ``None`` and every issue found."""
    try:
        return conv.structure(data, cl), []
    except Exception as exc:  # every failure becomes issues; none escapes as a traceback
        issues: list[RunIssue] = []
        _translate(exc, path, issues)
        return None, issues
