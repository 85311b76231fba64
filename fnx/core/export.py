"""Exporting jitted functions (JAX's ``jax.export``): a program traced for one signature that
can be called, transformed, serialized and loaded in another process.

An ``Exported`` holds the traced jaxpr. Calling it binds that jaxpr as a jit call inside a
``custom_vjp`` whose backward rule calls the exported VJP, itself an ``Exported``: so an
exported function differentiates in reverse mode wherever its VJP travels with it (serialize
with ``vjp_order=1`` or more), as in JAX; forward mode is refused, as for any custom_vjp.
Serialized programs hold no Python rules: a ``custom_jvp``/``custom_vjp``/``checkpoint`` inside
is written as its primal computation, its derivative living in the serialized VJP.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from . import api, dtypes, export_format as fmt
from .core import Array, ShapedArray, Tracer, default_backend, device_put, get_aval
from .custom_derivatives import custom_vjp
from .errors import FnxError
from .jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr, jaxpr_with_consts_as_args
from .jit import Jitted, jit, pjit_p
from .lax import convert_element_type, full
from .passes import optimize
from .pytree import PyTreeDef, broadcast_prefix, tree_flatten, tree_unflatten

ExportError = fmt.ExportError
ExportVersionError = fmt.ExportVersionError

minimum_supported_calling_convention_version = min(fmt.SUPPORTED_VERSIONS)
maximum_supported_calling_convention_version = max(fmt.SUPPORTED_VERSIONS)

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


class ShapePolymorphismError(FnxError, NotImplementedError):
    """fnx exports programs for concrete shapes only: dimension variables are not supported.

    >>> try:
    ...     fnx.export.symbolic_shape("b, 4")
    ... except fnx.export.ShapePolymorphismError:
    ...     print("concrete shapes only")
    concrete shapes only
    """


class DisabledSafetyCheck:
    """A check that ``export`` and ``Exported.call`` may skip: ``platform()`` lets a program
    exported for one platform run on another (fnx's programs are the same on every platform).

    >>> fnx.export.DisabledSafetyCheck.platform()
    platform
    """

    def __init__(self, _impl: str):
        self._impl = _impl

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        return cls(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls) -> "DisabledSafetyCheck":
        return cls("shape_assertions")

    def is_custom_call(self) -> str | None:
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)


def default_export_platform() -> str:
    """The platform ``export`` targets when given none: ``'cpu'`` or ``'cuda'``.

    >>> fnx.export.default_export_platform() in ("cpu", "cuda")
    True
    """
    return _canonical_platform(default_backend())


def _canonical_platform(p: str) -> str:
    p = p.lower()
    p = "cuda" if p == "gpu" else p
    if p not in _PLATFORMS:
        raise ExportError(f"unknown platform {p!r}; export platforms are {_PLATFORMS}")
    return p


class Exported:
    """A function traced by ``export`` for one signature: call it with ``call`` (under jit,
    vmap and grad too), save it with ``serialize`` and load it with ``deserialize``.

    ``in_tree``/``out_tree`` are the structures of ``(args, kwargs)`` and of the result,
    ``in_avals``/``out_avals`` the flat shapes and dtypes. ``mlir_module()`` is the program's
    text (fnx's jaxpr, not StableHLO).

    >>> exp = fnx.export.export(fnx.jit(jnp.sin))(fnx.ShapeDtypeStruct((3,), "float32"))
    >>> exp.fun_name, exp.in_avals, exp.platforms
    ('sin', (ShapedArray(float32[3]),), ('cpu',))
    """

    def __init__(self, *, fun_name: str, in_tree: PyTreeDef, in_avals, out_tree: PyTreeDef,
                 out_avals, platforms, disabled_safety_checks=(), closed: ClosedJaxpr,
                 get_vjp: Callable[["Exported"], "Exported"] | None = None,
                 calling_convention_version: int = fmt.VERSION):
        self.fun_name = fun_name
        self.in_tree, self.in_avals = in_tree, tuple(in_avals)
        self.out_tree, self.out_avals = out_tree, tuple(out_avals)
        self.in_shardings_hlo = (None,) * len(self.in_avals)
        self.out_shardings_hlo = (None,) * len(self.out_avals)
        self.nr_devices = 1
        self.platforms = tuple(platforms)
        self.ordered_effects: tuple = ()
        self.unordered_effects: tuple = ()
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.calling_convention_version = calling_convention_version
        self.module_kept_var_idx = tuple(range(len(self.in_avals)))
        self.uses_global_constants = False
        self._closed = closed
        self._get_vjp = get_vjp
        self._vjp: Exported | None = None
        self._runnable = None
        self._caller = None

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def mlir_module(self) -> str:
        """The exported program as text: fnx's jaxpr (fnx has no StableHLO).

        >>> exp = fnx.export.export(fnx.jit(lambda x: x * 2.0))(1.0)
        >>> print(exp.mlir_module())
        { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
        """
        return str(self._closed)

    @property
    def mlir_module_serialized(self) -> bytes:
        """The program alone in fnx's serialized format (``serialize()`` without VJPs)."""
        return bytes(self.serialize())

    def in_shardings_jax(self, mesh) -> tuple:
        """One sharding per input; fnx exports none (each is None)."""
        return self.in_shardings_hlo

    def out_shardings_jax(self, mesh) -> tuple:
        """One sharding per output; fnx exports none (each is None)."""
        return self.out_shardings_hlo

    def has_vjp(self) -> bool:
        """Whether the VJP travels with this program (always before serialization; after
        ``deserialize`` only when it was serialized with ``vjp_order >= 1``)."""
        return self._get_vjp is not None

    def vjp(self) -> "Exported":
        """The exported VJP: it takes the flat primal inputs, then one cotangent per
        floating-point output, and returns the cotangents of the floating-point inputs."""
        if self._get_vjp is None:
            raise ExportError(f"No VJP is available for the exported function "
                              f"'{self.fun_name}': it was deserialized without one; serialize "
                              "with `serialize(vjp_order=1)` (or higher) to differentiate it")
        if self._vjp is None:
            self._vjp = self._get_vjp(self)
        return self._vjp

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The program as bytes in fnx's versioned format, with ``vjp_order`` orders of its VJP
        (``vjp_order=1`` lets ``grad`` differentiate the deserialized call, 2 ``grad(grad)``).

        >>> exp = fnx.export.export(fnx.jit(jnp.cos))(1.0)
        >>> again = fnx.export.deserialize(exp.serialize(vjp_order=1))
        >>> fnx.grad(again.call)(0.5)
        Array(-0.47942555, dtype=float32)
        """
        w = fmt.writer()
        return fmt.pack(_encode(self, w, int(vjp_order)), w.blobs)

    def call(self, *args, **kwargs):
        """Run the exported function on ``args`` and ``kwargs`` of the exported structure,
        shapes and dtypes (under jit, vmap and grad too).

        >>> exp = fnx.export.export(fnx.jit(lambda x: x * 2))(jnp.ones(3))
        >>> exp.call(jnp.arange(3.0))
        Array([0., 2., 4.], dtype=float32)
        """
        if self._caller is None:
            self._caller = _caller(self)
        return self._caller(*args, **kwargs)

    def _program(self):
        """The jaxpr to run (consts as leading arguments, optimized once) and its consts."""
        if self._runnable is None:
            jaxpr = optimize(jaxpr_with_consts_as_args(self._closed))
            consts = [c if isinstance(c, Array) else device_put(np.asarray(c))
                      for c in self._closed.consts]
            self._runnable = (jaxpr, consts)
        return self._runnable


# ---------------------------------------------------------------------------------------------
# export


def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = (),
           _override_lowering_rules=None) -> Callable[..., Exported]:
    """``export(jit(f))(*args, **kwargs)``: ``f`` traced for the shapes and dtypes of the
    arguments (arrays or ``ShapeDtypeStruct``s; static arguments as values) as an
    ``Exported``. A function that is not jitted is jitted first.

    >>> exp = fnx.export.export(fnx.jit(lambda x, y: x @ y))(
    ...     fnx.ShapeDtypeStruct((2, 3), "float32"), fnx.ShapeDtypeStruct((3,), "float32"))
    >>> exp.out_avals
    (ShapedArray(float32[2]),)
    >>> exp.call(jnp.ones((2, 3)), jnp.arange(3.0))
    Array([3., 3.], dtype=float32)
    """
    jitted = getattr(fun_jit, "jitted", fun_jit)       # jit with shardings: the jitted function
    if not isinstance(jitted, Jitted):
        if not callable(fun_jit):
            raise ExportError(f"export takes a jitted function, got {type(fun_jit).__name__}")
        jitted = jit(fun_jit)
    plats = tuple(_canonical_platform(p) for p in platforms) if platforms is not None \
        else (default_export_platform(),)
    checks = tuple(disabled_checks)

    def do_export(*args, **kwargs) -> Exported:
        _refuse_symbolic(args, kwargs)
        traced = jitted.trace(*args, **kwargs)
        t = traced._traced
        if t.refs:
            raise ExportError(f"cannot export {jitted.name}: it reads or writes mutable "
                              "references (fnx.new_ref) made outside it")
        dyn_args, dyn_kwargs = traced._key[0].children
        in_tree = PyTreeDef(tuple, None, [PyTreeDef(tuple, None, dyn_args.children),
                                          dyn_kwargs])
        return _exported(jitted.name, in_tree, t.closed, t.out_tree, plats, checks)
    return do_export


def _exported(name, in_tree, closed: ClosedJaxpr, out_tree, platforms, checks) -> Exported:
    return Exported(fun_name=name, in_tree=in_tree, in_avals=closed.in_avals, out_tree=out_tree,
                    out_avals=closed.out_avals, platforms=platforms,
                    disabled_safety_checks=checks, closed=closed,
                    get_vjp=lambda primal: _export_vjp(primal, closed))


def _differentiable(aval) -> bool:
    return dtypes.is_float(aval.dtype)


def _export_vjp(primal: Exported, closed: ClosedJaxpr) -> Exported:
    """The VJP of ``closed`` (which keeps its Python rules: custom_vjp's bwd is honoured) as an
    Exported over the primal inputs and the floating-point outputs' cotangents."""
    n = len(primal.in_avals)
    diff_out = [_differentiable(a) for a in primal.out_avals]
    diff_in = [_differentiable(a) for a in primal.in_avals]

    def fun_vjp(*args_and_cts):
        primals, cts = args_and_cts[:n], iter(args_and_cts[n:])
        _, pullback = api.vjp(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                              *primals)
        full_cts = [next(cts) if d else full(a.shape, 0, a.dtype)
                    for a, d in zip(primal.out_avals, diff_out)]
        in_cts = pullback(full_cts)
        return [c for c, d in zip(in_cts, diff_in) if d]

    specs = [api.ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in primal.in_avals]
    specs += [api.ShapeDtypeStruct(a.shape, a.dtype) for a, d in
              zip(primal.out_avals, diff_out) if d]
    fun_vjp.__name__ = f"vjp({primal.fun_name})"
    exp = export(jit(fun_vjp), platforms=primal.platforms,
                 disabled_checks=primal.disabled_safety_checks)(*specs)
    return exp


def _refuse_symbolic(args, kwargs):
    for leaf in tree_flatten((args, kwargs))[0]:
        if any(not isinstance(d, (int, np.integer)) for d in getattr(leaf, "shape", ())):
            raise ShapePolymorphismError(
                f"export: an argument has the shape {tuple(leaf.shape)} with a symbolic "
                "dimension; fnx exports programs for concrete shapes only")


# ---------------------------------------------------------------------------------------------
# Calling an exported function


def _caller(exp: Exported) -> Callable:
    diff_in = [_differentiable(a) for a in exp.in_avals]
    diff_out = [_differentiable(a) for a in exp.out_avals]

    # a deserialized program's results are strongly typed, as JAX's (its format keeps no weak
    # types at the boundary); the program inside may still make weak ones
    strengthen = [v.aval.weak_type and not a.weak_type
                  for v, a in zip(exp._closed.jaxpr.outvars, exp.out_avals)]

    @custom_vjp
    def f_flat(*args):
        jaxpr, consts = exp._program()
        outs = pjit_p.bind(*consts, *args, jaxpr=jaxpr, name=exp.fun_name)
        return [convert_element_type(o, a.dtype, False) if s else o
                for o, a, s in zip(outs, exp.out_avals, strengthen)]

    def fwd(*args):
        return f_flat(*args), args

    def bwd(args, cts):
        vjp = exp.vjp()
        in_cts = iter(vjp.call(*args, *[c for c, d in zip(cts, diff_out) if d]))
        return tuple(next(in_cts) if d else None for d in diff_in)

    f_flat.defvjp(fwd, bwd)

    def call(*args, **kwargs):
        leaves, tree = tree_flatten((args, kwargs))
        if tree != exp.in_tree:
            raise ExportError(
                f"the function '{exp.fun_name}' was exported for arguments of structure "
                f"{exp.in_tree} (args, kwargs), but it is called with {tree}")
        _check_platform(exp)
        leaves = [_checked_arg(exp, i, x, a) for i, (x, a) in
                  enumerate(zip(leaves, exp.in_avals))]
        return tree_unflatten(exp.out_tree, f_flat(*leaves))
    return call


def _checked_arg(exp: Exported, i: int, x, aval: ShapedArray):
    got = get_aval(x)
    if got.shape != aval.shape or got.dtype != aval.dtype:
        raise ExportError(
            f"the function '{exp.fun_name}' was exported for argument {i} of type "
            f"{aval.str_short()}, but it is called with {got.str_short()}")
    return x if isinstance(x, (Array, Tracer)) else device_put(np.asarray(x, aval.dtype))


def _check_platform(exp: Exported):
    if DisabledSafetyCheck.platform() in exp.disabled_safety_checks:
        return
    here = default_export_platform()
    if here not in exp.platforms:
        raise ExportError(f"the function '{exp.fun_name}' was exported for platforms "
                          f"{exp.platforms} but it is used on {here!r}; export with "
                          "disabled_checks=[DisabledSafetyCheck.platform()] to allow it")


def call(exported: Exported) -> Callable:
    """``exported.call`` as a function (JAX's ``export.call``).

    >>> exp = fnx.export.export(fnx.jit(jnp.cos))(jnp.zeros(2))
    >>> fnx.export.call(exp)(jnp.zeros(2))
    Array([1., 1.], dtype=float32)
    """
    if not isinstance(exported, Exported):
        raise ExportError(f"call takes an Exported, got {type(exported).__name__}")
    return exported.call


# ---------------------------------------------------------------------------------------------
# Serialization


# primitives whose body is the primal computation and whose other params are Python rules
_BODY_PARAM = {"custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
               "custom_vmap_call": "call_jaxpr", "remat": "jaxpr", "linear_call": "callee"}


def _without_rules(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with every custom_jvp/custom_vjp/custom_vmap/checkpoint call replaced by the
    equations of its body: what the function computes, without the Python rules."""
    subst: dict = {}

    def read(a):
        return subst.get(a, a) if isinstance(a, Var) else a

    eqns = []
    for e in jaxpr.eqns:
        ins = [read(a) for a in e.invars]
        body_param = _BODY_PARAM.get(e.primitive.name)
        body = e.params.get(body_param) if body_param else None
        if body is None:
            params = {k: _param_without_rules(v) for k, v in e.params.items()}
            eqns.append(e.replace(invars=ins, params=params))
            continue
        body = _without_rules(body.jaxpr if isinstance(body, ClosedJaxpr) else body)
        env = dict(zip(body.invars, ins))
        for be in body.eqns:
            outs = [Var(v.aval) for v in be.outvars]
            eqns.append(be.replace(invars=[env.get(a, a) if isinstance(a, Var) else a
                                           for a in be.invars], outvars=outs))
            env.update(zip(be.outvars, outs))
        for v, b in zip(e.outvars, body.outvars):
            subst[v] = env.get(b, b) if isinstance(b, Var) else b
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [read(v) for v in jaxpr.outvars], eqns)


def _param_without_rules(v):
    if isinstance(v, Jaxpr):
        return _without_rules(v)
    if isinstance(v, ClosedJaxpr):
        return ClosedJaxpr(_without_rules(v.jaxpr), v.consts)
    if isinstance(v, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v):
        return type(v)(_param_without_rules(x) for x in v)
    return v


def _encode(exp: Exported, w, vjp_order: int) -> dict:
    closed = ClosedJaxpr(_without_rules(exp._closed.jaxpr), exp._closed.consts)
    where = f"the exported function '{exp.fun_name}'"
    try:
        program = fmt.encode_closed(closed, w)
    except ExportError as e:
        raise ExportError(f"cannot serialize {where}: {e.args[0]}") from None
    vjp = None
    if vjp_order > 0:
        vjp = _encode(exp.vjp(), w, vjp_order - 1)
    return {"fun_name": exp.fun_name,
            "in_tree": fmt.encode_tree(exp.in_tree),
            "out_tree": fmt.encode_tree(exp.out_tree),
            "in_avals": [fmt.encode_aval(a.strip_weak_type()) for a in exp.in_avals],
            "out_avals": [fmt.encode_aval(a.strip_weak_type()) for a in exp.out_avals],
            "platforms": list(exp.platforms),
            "disabled_checks": [str(c) for c in exp.disabled_safety_checks],
            "program": program,
            "vjp": vjp}


def _decode(doc: dict, r) -> Exported:
    closed = fmt.decode_closed(doc["program"], r)
    vjp = _decode(doc["vjp"], r) if doc.get("vjp") is not None else None
    return Exported(fun_name=doc["fun_name"], in_tree=fmt.decode_tree(doc["in_tree"]),
                    in_avals=[fmt.decode_aval(a) for a in doc["in_avals"]],
                    out_tree=fmt.decode_tree(doc["out_tree"]),
                    out_avals=[fmt.decode_aval(a) for a in doc["out_avals"]],
                    platforms=doc["platforms"],
                    disabled_safety_checks=[DisabledSafetyCheck(c)
                                            for c in doc["disabled_checks"]],
                    closed=closed, get_vjp=None if vjp is None else (lambda _: vjp))


def deserialize(blob) -> Exported:
    """The ``Exported`` that ``Exported.serialize`` wrote (bytes or bytearray). Unknown format
    versions raise ``ExportVersionError``.

    >>> exp = fnx.export.export(fnx.jit(lambda x: {"y": x + 1}))(jnp.zeros(2))
    >>> fnx.export.deserialize(exp.serialize()).call(jnp.ones(2))
    {'y': Array([2., 2.], dtype=float32)}
    """
    doc, data = fmt.unpack(blob)
    try:
        return _decode(doc, fmt.reader(data))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        if isinstance(e, FnxError):
            raise
        raise ExportVersionError(f"the serialized export is damaged: {type(e).__name__}: {e}") \
            from None


def register_pytree_node_serialization(nodetype: type, *, serialized_name: str,
                                       serialize_auxdata: Callable, deserialize_auxdata:
                                       Callable) -> type:
    """Let pytrees holding ``nodetype`` (already a registered pytree node) be serialized:
    ``serialize_auxdata(aux) -> bytes`` and ``deserialize_auxdata(bytes) -> aux`` carry its
    auxiliary data, and ``serialized_name`` names it in the bytes.

    >>> class Box:
    ...     def __init__(self, v): self.v = v
    >>> _ = fnx.tree_util.register_pytree_node(Box, lambda b: ((b.v,), None),
    ...                                        lambda _, c: Box(*c))
    >>> _ = fnx.export.register_pytree_node_serialization(
    ...     Box, serialized_name="doc.Box", serialize_auxdata=lambda aux: b"",
    ...     deserialize_auxdata=lambda data: None)
    """
    fmt.register_node(nodetype, serialized_name, serialize_auxdata, deserialize_auxdata)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Let pytrees holding the NamedTuple class ``nodetype`` be serialized under
    ``serialized_name``.

    >>> from typing import NamedTuple
    >>> class Point(NamedTuple):
    ...     x: float
    ...     y: float
    >>> _ = fnx.export.register_namedtuple_serialization(Point, serialized_name="doc.Point")
    """
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
            and hasattr(nodetype, "_fields")):
        raise ValueError(f"register_namedtuple_serialization takes a NamedTuple class, got "
                         f"{nodetype!r}")
    fmt.register_node(nodetype, serialized_name, lambda aux: b"", lambda data: None)
    return nodetype


# ---------------------------------------------------------------------------------------------
# Shape polymorphism: concrete dimensions only


class SymbolicScope:
    """Dimension variables' scope in JAX; fnx exports concrete shapes only, so making one
    raises ``ShapePolymorphismError``.

    >>> try:
    ...     fnx.export.SymbolicScope()
    ... except NotImplementedError:
    ...     print("no symbolic dimensions")
    no symbolic dimensions
    """

    def __init__(self, *args, **kwargs):
        raise ShapePolymorphismError("fnx.export does not support shape polymorphism "
                                     "(symbolic dimensions): export for concrete shapes")


def is_symbolic_dim(x) -> bool:
    """False: fnx's dimensions are always integers.

    >>> fnx.export.is_symbolic_dim(3)
    False
    """
    return False


def symbolic_shape(shape_spec: str | None, *, constraints=(), scope=None, like=None) -> tuple:
    """A shape from text (``"3, 4"``); only integer dimensions are supported, a dimension
    variable (``"b, 4"``) raises ``ShapePolymorphismError``.

    >>> fnx.export.symbolic_shape("3, 4")
    (3, 4)
    """
    if shape_spec is None:
        return tuple(like) if like is not None else ()
    text = shape_spec.strip().strip("()").strip()
    dims = [d.strip() for d in text.split(",") if d.strip()] if text else []
    out = []
    for i, d in enumerate(dims):
        if d in ("...", "_") and like is not None:
            out.append(int(like[i]))
        elif re.fullmatch(r"\d+", d):
            out.append(int(d))
        else:
            raise ShapePolymorphismError(
                f"symbolic_shape({shape_spec!r}): the dimension {d!r} is symbolic; fnx exports "
                "programs for concrete shapes only (use integer dimensions)")
    return tuple(out)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """``ShapeDtypeStruct``s for ``args`` with shapes given by ``shapes_specs`` (one spec, or
    a pytree prefix of them); only integer dimensions are supported.

    >>> fnx.export.symbolic_args_specs(jnp.ones((2, 3)), "2, 3")
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """
    leaves, tree = tree_flatten(args)
    if shapes_specs is None or isinstance(shapes_specs, str):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = broadcast_prefix(shapes_specs, args, "symbolic_args_specs shapes_specs",
                                 is_leaf=lambda s: s is None or isinstance(s, str))
    out = []
    for x, spec in zip(leaves, specs):
        a = get_aval(x) if not isinstance(x, api.ShapeDtypeStruct) else x.aval
        shape = symbolic_shape(spec, like=a.shape) if spec is not None else a.shape
        out.append(api.ShapeDtypeStruct(shape, a.dtype))
    return tree_unflatten(tree, out)


__all__ = ["DisabledSafetyCheck", "Exported", "ExportError", "ExportVersionError",
           "ShapePolymorphismError", "SymbolicScope", "call", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim", "maximum_supported_calling_convention_"
           "version", "minimum_supported_calling_convention_version",
           "register_namedtuple_serialization", "register_pytree_node_serialization",
           "symbolic_args_specs", "symbolic_shape"]
