"""fnx's serialization format for exported programs: versioned, and safe to load.

A serialized program is ``MAGIC``, a 4-byte big-endian format version, an 8-byte length, a JSON
document, then a binary section holding the arrays (constants, array-valued parameters) that the
document points into. Loading reads JSON and raw array bytes only: it never unpickles, never
imports, and resolves names (primitives, dtypes, enums, pytree node types) only through tables of
what fnx already has or what the user registered.

The document encodes a jaxpr as its equations over numbered variables (one numbering for the
whole program, so a nested jaxpr can name a variable of the jaxpr around it), each equation as
its primitive's name, its operands, its results and its parameters.
"""
from __future__ import annotations

import enum
import json
import struct
import sys
from typing import Any, Callable

import numpy as np

from . import dtypes
from .core import Array, ShapedArray, device_put
from .errors import FnxError
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from .lax import all_primitives
from .pytree import PyTreeDef

MAGIC = b"fnx.export\x00"
VERSION = 1
SUPPORTED_VERSIONS = (1,)


class ExportError(FnxError, ValueError):
    """A function cannot be exported, serialized or called as exported: a mismatch between an
    exported program and its arguments, or something the format cannot hold.

    >>> exp = fnx.export.export(fnx.jit(jnp.sin))(jnp.zeros(3))
    >>> try:
    ...     exp.call(jnp.zeros(4))
    ... except fnx.export.ExportError as e:
    ...     print(str(e).splitlines()[0])
    the function 'sin' was exported for argument 0 of type f32[3], but it is called with f32[4]
    """


class ExportVersionError(ExportError):
    """The bytes are not an fnx export, or one written in a format version this fnx does not
    read.

    >>> try:
    ...     fnx.export.deserialize(b"not an export")
    ... except fnx.export.ExportVersionError as e:
    ...     print(str(e).splitlines()[0])
    the data is not a serialized fnx export (it does not start with b'fnx.export\\x00')
    """


# ---------------------------------------------------------------------------------------------
# The container: magic, version, document, arrays


def pack(doc: dict, blobs: list[bytes]) -> bytearray:
    text = json.dumps(doc, separators=(",", ":")).encode()
    out = bytearray(MAGIC)
    out += struct.pack(">IQ", VERSION, len(text))
    out += text
    for b in blobs:
        out += b
    return out


def unpack(data) -> tuple[dict, memoryview]:
    data = memoryview(bytes(data))
    head = len(MAGIC) + 12
    if len(data) < head or bytes(data[:len(MAGIC)]) != MAGIC:
        raise ExportVersionError("the data is not a serialized fnx export (it does not start "
                                 f"with {MAGIC!r})")
    version, n = struct.unpack(">IQ", data[len(MAGIC):head])
    if version not in SUPPORTED_VERSIONS:
        raise ExportVersionError(
            f"serialized with fnx export format version {version}; this fnx reads versions "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    try:
        doc = json.loads(bytes(data[head:head + n]))
    except ValueError as e:
        raise ExportVersionError(f"the serialized export is damaged: {e}") from None
    return doc, data[head + n:]


# ---------------------------------------------------------------------------------------------
# Values: dtypes, arrays, parameters


def _dtype_table() -> dict[str, np.dtype]:
    table = {np.dtype(d).name: np.dtype(d) for d in dtypes._SUPPORTED}
    table["float0"] = dtypes.float0
    return table


def dtype_name(d) -> str:
    d = np.dtype(d)
    return "float0" if d == dtypes.float0 else d.name


def dtype_of(name: str) -> np.dtype:
    try:
        return _dtype_table()[name]
    except KeyError:
        raise ExportVersionError(f"the serialized export names an unknown dtype {name!r}") \
            from None


def encode_aval(a: ShapedArray) -> list:
    return [list(a.shape), dtype_name(a.dtype), bool(a.weak_type)]


def decode_aval(e) -> ShapedArray:
    shape, dtype, weak = e
    return ShapedArray(tuple(shape), dtype_of(dtype), weak)


class _Writer:
    """Collects the array bytes of one program while its document is built."""

    def __init__(self):
        self.blobs: list[bytes] = []
        self.offset = 0
        self.var_ids: dict[Var, int] = {}

    def array(self, x) -> dict:
        a = np.asarray(x)
        data = a.tobytes(order="C")
        ref = {"t": "array", "dtype": dtype_name(a.dtype), "shape": list(a.shape),
               "at": self.offset, "n": len(data), "fnx": isinstance(x, Array)}
        self.blobs.append(data)
        self.offset += len(data)
        return ref

    def var(self, v: Var) -> int:
        if v not in self.var_ids:
            self.var_ids[v] = len(self.var_ids)
        return self.var_ids[v]


class _Reader:
    def __init__(self, data: memoryview):
        self.data = data
        self.vars: dict[int, Var] = {}
        self.primitives = {p.name: p for p in all_primitives()}

    def array(self, ref) -> np.ndarray:
        dtype = dtype_of(ref["dtype"])
        start, n = ref["at"], ref["n"]
        if start < 0 or start + n > len(self.data):
            raise ExportVersionError("the serialized export is damaged: an array lies outside "
                                     "its data")
        a = np.frombuffer(self.data[start:start + n], dtype=dtype)
        return a.reshape(ref["shape"]).copy()


def _fnx_class(qualified: str):
    """A class of fnx's own (an enum, a NamedTuple) found by ``module:qualname`` among modules
    already imported; nothing is imported, nothing outside fnx is looked up."""
    module, _, name = qualified.partition(":")
    obj = sys.modules.get(module) if module.split(".")[0] == "fnx" else None
    for part in name.split("."):
        obj = getattr(obj, part, None)
    ok = isinstance(obj, type) and (issubclass(obj, enum.Enum) or
                                    (issubclass(obj, tuple) and hasattr(obj, "_fields")))
    if not ok:
        raise ExportVersionError(f"the serialized export names {qualified!r}, which is not an "
                                 "enum or NamedTuple of fnx")
    return obj


def _qualified(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode_value(x, w: _Writer, where: str):
    """A parameter value as JSON, arrays into ``w``; ExportError for what the format cannot
    hold (Python functions, arbitrary objects)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int) and not isinstance(x, enum.Enum):
        return x
    if isinstance(x, float):
        return {"t": "float", "v": repr(x)}
    if isinstance(x, complex):
        return {"t": "complex", "v": [repr(x.real), repr(x.imag)]}
    if isinstance(x, np.dtype):
        return {"t": "dtype", "v": dtype_name(x)}
    if isinstance(x, type) and issubclass(x, np.generic):
        return {"t": "dtype", "v": dtype_name(x)}
    if isinstance(x, enum.Enum) and type(x).__module__.startswith("fnx."):
        return {"t": "enum", "cls": _qualified(type(x)), "v": x.name}
    if isinstance(x, tuple) and hasattr(x, "_fields") and type(x).__module__.startswith("fnx."):
        return {"t": "namedtuple", "cls": _qualified(type(x)),
                "v": [encode_value(c, w, where) for c in x]}
    if isinstance(x, (tuple, list)):
        return {"t": type(x).__name__, "v": [encode_value(c, w, where) for c in x]}
    if isinstance(x, slice):
        return {"t": "slice", "v": [encode_value(c, w, where) for c in (x.start, x.stop, x.step)]}
    if isinstance(x, np.generic):
        return {"t": "scalar", "v": w.array(x)}
    if isinstance(x, (np.ndarray, Array)):
        return w.array(x)
    if isinstance(x, Jaxpr):
        return {"t": "jaxpr", "v": encode_jaxpr(x, w)}
    if isinstance(x, ClosedJaxpr):
        return {"t": "closed_jaxpr", "v": encode_jaxpr(x.jaxpr, w),
                "consts": [w.array(c) for c in x.consts]}
    what = f"the Python function {getattr(x, '__name__', x)!r}" if callable(x) \
        else f"a {type(x).__name__}"
    raise ExportError(f"cannot serialize {where}: it holds {what}, which fnx's export format "
                      "cannot store (callbacks and Python rules stay in the process that "
                      "defined them)")


def decode_value(e, r: _Reader):
    if not isinstance(e, dict):
        return e
    t = e.get("t")
    if t == "float":
        return float(e["v"])
    if t == "complex":
        return complex(float(e["v"][0]), float(e["v"][1]))
    if t == "dtype":
        return dtype_of(e["v"])
    if t == "enum":
        return _fnx_class(e["cls"])[e["v"]]
    if t == "namedtuple":
        return _fnx_class(e["cls"])(*[decode_value(c, r) for c in e["v"]])
    if t in ("tuple", "list"):
        vals = [decode_value(c, r) for c in e["v"]]
        return tuple(vals) if t == "tuple" else vals
    if t == "slice":
        return slice(*[decode_value(c, r) for c in e["v"]])
    if t == "scalar":
        return r.array(e["v"])[()]
    if t == "array":
        a = r.array(e)
        return device_put(a) if e.get("fnx") else a
    if t == "jaxpr":
        return decode_jaxpr(e["v"], r)
    if t == "closed_jaxpr":
        return ClosedJaxpr(decode_jaxpr(e["v"], r), [r.array(c) for c in e["consts"]])
    raise ExportVersionError(f"the serialized export holds a value of unknown kind {t!r}")


# ---------------------------------------------------------------------------------------------
# Jaxprs


def encode_jaxpr(jaxpr: Jaxpr, w: _Writer) -> dict:
    def binder(v):
        return [w.var(v), encode_aval(v.aval)]

    def atom(a, where):
        if isinstance(a, Literal):
            return {"lit": encode_value(a.val, w, where), "aval": encode_aval(a.aval)}
        return w.var(a)

    eqns = []
    for e in jaxpr.eqns:
        where = f"the parameters of primitive {e.primitive.name!r}"
        eqns.append({"p": e.primitive.name,
                     "in": [atom(a, where) for a in e.invars],
                     "out": [binder(v) for v in e.outvars],
                     "params": {k: encode_value(v, w, f"parameter {k!r} of primitive "
                                                       f"{e.primitive.name!r}")
                                for k, v in e.params.items()}})
    return {"constvars": [binder(v) for v in jaxpr.constvars],
            "invars": [binder(v) for v in jaxpr.invars],
            "eqns": eqns,
            "outvars": [atom(a, "an output") for a in jaxpr.outvars]}


def decode_jaxpr(d: dict, r: _Reader) -> Jaxpr:
    prims = r.primitives

    def binder(b):
        # a variable bound in two places (a jaxpr nested twice) is one Var, as it was written
        i, aval = b
        if i not in r.vars:
            r.vars[i] = Var(decode_aval(aval))
        return r.vars[i]

    def atom(a):
        if isinstance(a, dict):
            aval = decode_aval(a["aval"])
            val = decode_value(a["lit"], r)
            return Literal(val, aval)
        try:
            return r.vars[a]
        except KeyError:
            raise ExportVersionError(f"the serialized export reads variable {a} before it is "
                                     "defined") from None

    constvars = [binder(b) for b in d["constvars"]]
    invars = [binder(b) for b in d["invars"]]
    eqns = []
    for e in d["eqns"]:
        prim = prims.get(e["p"])
        if prim is None:
            raise ExportVersionError(f"the serialized export uses primitive {e['p']!r}, which "
                                     "this fnx does not have")
        ins = [atom(a) for a in e["in"]]
        params = {k: decode_value(v, r) for k, v in e["params"].items()}
        eqns.append(JaxprEqn(ins, [binder(b) for b in e["out"]], prim, params))
    return Jaxpr(constvars, invars, [atom(a) for a in d["outvars"]], eqns)


def encode_closed(closed: ClosedJaxpr, w: _Writer) -> dict:
    return {"jaxpr": encode_jaxpr(closed.jaxpr, w), "consts": [w.array(c) for c in closed.consts]}


def decode_closed(d: dict, r: _Reader) -> ClosedJaxpr:
    return ClosedJaxpr(decode_jaxpr(d["jaxpr"], r), [r.array(c) for c in d["consts"]])


# ---------------------------------------------------------------------------------------------
# Pytree structures


class _NodeSerialization:
    __slots__ = ("nodetype", "name", "to_bytes", "from_bytes")

    def __init__(self, nodetype, name, to_bytes, from_bytes):
        self.nodetype, self.name = nodetype, name
        self.to_bytes, self.from_bytes = to_bytes, from_bytes


_by_type: dict[type, _NodeSerialization] = {}
_by_name: dict[str, _NodeSerialization] = {}


def register_node(nodetype: type, name: str, to_bytes: Callable[[Any], bytes],
                  from_bytes: Callable[[bytes], Any]) -> None:
    if name in _by_name and _by_name[name].nodetype is not nodetype:
        raise ValueError(f"a pytree node type is already registered for serialization under "
                         f"the name {name!r}: {_by_name[name].nodetype}")
    if nodetype in _by_type and _by_type[nodetype].name != name:
        raise ValueError(f"{nodetype} is already registered for serialization as "
                         f"{_by_type[nodetype].name!r}")
    entry = _NodeSerialization(nodetype, name, to_bytes, from_bytes)
    _by_type[nodetype] = _by_name[name] = entry


_BUILTIN_NODES = {tuple: "tuple", list: "list", dict: "dict", type(None): "None"}
_BUILTIN_TYPES = {v: k for k, v in _BUILTIN_NODES.items()}


def encode_tree(t: PyTreeDef):
    if t.node is None:
        return None
    kids = [encode_tree(c) for c in t.children]
    if t.node in _BUILTIN_NODES:
        out = {"k": _BUILTIN_NODES[t.node], "c": kids}
        if t.node is dict:
            out["keys"] = [_encode_key(k) for k in t.aux]
        return out
    entry = _by_type.get(t.node)
    if entry is None:
        kind = "NamedTuple" if hasattr(t.node, "_fields") else "pytree node type"
        how = "register_namedtuple_serialization" if hasattr(t.node, "_fields") \
            else "register_pytree_node_serialization"
        raise ExportError(f"cannot serialize a pytree holding the {kind} {t.node.__name__}: "
                          f"register it first with fnx.export.{how}")
    return {"k": "custom", "name": entry.name, "aux": entry.to_bytes(t.aux).hex(), "c": kids}


def _encode_key(k):
    if isinstance(k, (str, int, bool)) or k is None:
        return [type(k).__name__, k]
    if isinstance(k, float):
        return ["float", repr(k)]
    raise ExportError(f"cannot serialize a dict key of type {type(k).__name__} ({k!r}): "
                      "keys must be str, int, float, bool or None")


def _decode_key(e):
    kind, v = e
    return float(v) if kind == "float" else v


def decode_tree(e) -> PyTreeDef:
    if e is None:
        return PyTreeDef(None, None, ())
    kids = [decode_tree(c) for c in e["c"]]
    kind = e["k"]
    if kind in _BUILTIN_TYPES:
        aux = tuple(_decode_key(k) for k in e["keys"]) if kind == "dict" else None
        return PyTreeDef(_BUILTIN_TYPES[kind], aux, kids)
    entry = _by_name.get(e.get("name"))
    if kind != "custom" or entry is None:
        raise ExportError(f"the serialized export holds a pytree node {e.get('name', kind)!r} "
                          "that is not registered for deserialization in this process (fnx."
                          "export.register_pytree_node_serialization)")
    return PyTreeDef(entry.nodetype, entry.from_bytes(bytes.fromhex(e["aux"])), kids)


def writer() -> _Writer:
    return _Writer()


def reader(data: memoryview) -> _Reader:
    return _Reader(data)
