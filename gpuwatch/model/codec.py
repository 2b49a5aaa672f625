"""Frames and verdicts to JSON-ready dicts and back, driven by the dataclasses' type hints.

Hand-written rather than a library (pydantic, cattrs): the model is a few frozen dataclasses,
and this keeps the runtime dependency list to what the product needs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from functools import lru_cache
from typing import Any, Union

from gpuwatch.model.values import Unsupported, older_reason
from gpuwatch.untrusted import clean

SCHEMA_VERSION = 1
"""Version of the JSON frame schema (docs/SCHEMA.md). Bumped on any incompatible change."""


MAX_FLOAT = 1e18
"""The largest magnitude a decoded number may have (an exabyte, 30 years in nanoseconds): a crafted
1e308 would overflow to infinity in the first sum or rate computed from it."""


class DecodeError(ValueError):
    """A dict did not match the dataclass it was decoded as."""


class OutOfRange(DecodeError):
    """A number beyond :data:`MAX_FLOAT` (1e999 reads as infinity). Inside a value that may be
    unreadable (``Maybe[...]``) it makes that value :class:`Unsupported`, saying so, rather than the
    whole frame unreadable: the recording's other readings of the tick stay true."""


def to_dict(obj: Any) -> Any:
    """A JSON-ready structure for a model object (dataclass, tuple, Unsupported, scalar)."""
    kind = type(obj)
    if kind in _AS_IS:
        return obj
    encode = _ENCODERS.get(kind)
    if encode is None:
        encode = _ENCODERS[kind] = _encoder(kind)
    return encode(obj)


_AS_IS = frozenset((str, int, bool, type(None)))
"""Types returned as they are (the bulk of a frame's leaves: checked first, by exact type)."""
_ENCODERS: dict[type, Any] = {}
"""One encoding function per type met, chosen once by :func:`_encoder`: a tick's frame holds
~1,400 values, and asking each which kind it is (dataclass? tuple? dict?) was most of ``--json``'s
serialising CPU."""


def _encoder(kind: type) -> Any:
    """How to encode a value of ``kind``: the same cases, in the same order, as a value would be asked."""
    if issubclass(kind, Unsupported):
        return lambda obj: {"unsupported": obj.reason}
    if dataclasses.is_dataclass(kind):
        names = tuple(f.name for f in _fields(kind))
        return lambda obj: {name: to_dict(getattr(obj, name)) for name in names}
    if issubclass(kind, (tuple, list)):
        return lambda obj: [to_dict(x) for x in obj]
    if issubclass(kind, dict):
        return lambda obj: {str(k): to_dict(v) for k, v in obj.items()}
    if issubclass(kind, float):  # NaN and infinities are not JSON
        return lambda obj: obj if math.isfinite(obj) else None
    return lambda obj: obj


def to_json(obj: Any) -> str:
    """``to_dict(obj)`` as compact JSON text (no spaces, no NaN), byte for byte, made faster: the
    C encoder walks the containers and scalars itself and calls back only for the model objects
    (:func:`_plain`), about 50 a tick's frame and verdict, instead of to_dict visiting each of its
    ~1,400 values in Python first. A NaN or an infinity, which to_dict writes as null, makes the C
    encoder refuse the whole object; that object goes through to_dict instead. (to_dict also
    writes a dict's non-string keys with str(); no model type holds a dict.)"""
    try:
        return _COMPACT.encode(obj)
    except ValueError:  # a number that is not finite: only to_dict writes it (as null)
        return _COMPACT.encode(to_dict(obj))


def _plain(obj: Any) -> Any:
    """One model object as the C encoder takes it: a dataclass as a dict of its fields, as they
    are (the encoder visits them next), an Unsupported as its marker."""
    kind = type(obj)
    names = _PLAIN.get(kind)
    if names is None:
        if issubclass(kind, Unsupported):
            return {"unsupported": obj.reason}
        if not dataclasses.is_dataclass(kind):
            raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")
        names = _PLAIN[kind] = tuple(f.name for f in _fields(kind))
    return {name: getattr(obj, name) for name in names}


_PLAIN: dict[type, tuple[str, ...]] = {}
"""The field names of each dataclass :func:`_plain` has met (Unsupported, itself one, excepted)."""
_COMPACT = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False, default=_plain)
"""One encoder for every call: no spaces (as recordings are written), no NaN, no cycle check
(model objects are trees)."""


def from_dict(cls: type, data: Any) -> Any:
    """Rebuild a model object of type ``cls`` from :func:`to_dict` output. Strings come back
    cleaned (gpuwatch/untrusted.py) and numbers finite: the dict may come from a crafted file."""
    return _decode(cls, data, cls.__name__)


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return tuple(dataclasses.fields(cls))


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _decode_union(typing.get_args(tp), data, where)
    if tp is Any:
        return data
    if tp is type(None):
        if data is not None:
            raise DecodeError(f"{where}: expected null")
        return None
    if tp is Unsupported:
        if not (isinstance(data, dict) and "unsupported" in data):
            raise DecodeError(f"{where}: expected an unsupported marker")
        return Unsupported(older_reason(clean(str(data["unsupported"]))))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object for {tp.__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in _fields(tp):
            if f.name in data:
                kwargs[f.name] = _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DecodeError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list):
            raise DecodeError(f"{where}: expected a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], x, f"{where}[{i}]") for i, x in enumerate(data))
        if len(args) != len(data):
            raise DecodeError(f"{where}: expected {len(args)} items")
        return tuple(_decode(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, data)))
    if origin is dict:
        _, vt = typing.get_args(tp)
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object")
        return {clean(k): _decode(vt, v, f"{where}.{k}") for k, v in data.items()}
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            if data is None:  # NaN was written as null
                return float("nan")
            raise DecodeError(f"{where}: expected a number")
        if isinstance(data, float) and not -MAX_FLOAT <= data <= MAX_FLOAT:  # 1e999 (inf), 1e308 in the file
            raise OutOfRange(f"{where}: {data} is out of range")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise DecodeError(f"{where}: expected an integer")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise DecodeError(f"{where}: expected a string")
        return clean(data)  # a recording is as untrusted as the job it came from
    if tp is bool:
        if not isinstance(data, bool):
            raise DecodeError(f"{where}: expected true or false")
        return data
    raise DecodeError(f"{where}: cannot decode type {tp!r}")


def _decode_union(args: tuple[Any, ...], data: Any, where: str) -> Any:
    if isinstance(data, dict) and "unsupported" in data and Unsupported in args:
        return Unsupported(older_reason(clean(str(data["unsupported"]))))
    if data is None and type(None) in args:
        return None
    errors = []
    for a in args:
        if a is Unsupported or a is type(None):
            continue
        try:
            return _decode(a, data, where)
        except OutOfRange as e:
            if Unsupported in args:
                return Unsupported(f"unreadable in the recording: {e}")
            errors.append(str(e))
        except DecodeError as e:
            errors.append(str(e))
    raise DecodeError(errors[0] if errors else f"{where}: no matching type")
