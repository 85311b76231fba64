"""Host callbacks: ``pure_callback`` calls Python on concrete values from inside jit and vmap.

``pure_callback`` is a primitive whose impl calls the user's function on the operands' values
(arrays on the host) and checks what it returns against the declared shapes and dtypes; its
abstract evaluation is those declared shapes, so jit and make_jaxpr trace through it. It is pure
(dead-code elimination may drop an unused call, as in JAX) and has no derivative. Under vmap,
``vmap_method`` says how the batch reaches the callback: one call per example ("sequential", a
``lax.map``), or one call on the batched arrays ("expand_dims", "broadcast_all").
"""
from __future__ import annotations

import numpy as np

from .batching import bdim_at_front, not_mapped
from .control_flow import map as lax_map
from .core import Array, ShapedArray, Tracer, device_put, get_aval
from .lax import broadcast_in_dim, primitive
from .pytree import tree_flatten, tree_unflatten

pure_callback_p = primitive("pure_callback", multiple_results=True)
# io_callback: the same call, but an effect (never dropped, merged or folded); an ordered one
# cannot be vmapped, and neither has a derivative
io_callback_p = primitive("io_callback", multiple_results=True)
io_callback_p.has_effect = True

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized")


def _impl(*args, callback, result_avals, vmap_method):
    outs = callback(*args)
    name = getattr(callback, "__name__", "callback")
    return [device_put(o) for o in _checked(outs, result_avals, name)]


def _jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `fnx.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_batch(vals, dims, *, callback, result_avals, vmap_method):
    if vmap_method == "ordered":
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _batch(vals, dims, callback=callback, result_avals=result_avals,
                  vmap_method="sequential", prim=io_callback_p)


def _batch(vals, dims, *, callback, result_avals, vmap_method, prim=pure_callback_p):
    if vmap_method not in _VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            f"{', '.join(repr(m) for m in _VMAP_METHODS)}. Got vmap_method={vmap_method!r}.")
    size = next(v.shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    mapped = [d is not not_mapped for d in dims]
    vals = [bdim_at_front(v, d, size) if m else v for v, d, m in zip(vals, dims, mapped)]
    params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method)
    if vmap_method.startswith("sequential"):
        outs = _sequential(vals, mapped, params, prim)
    else:
        outs = _vectorized(vals, mapped, size, vmap_method == "broadcast_all", params)
    return outs, [0] * len(outs)


def _sequential(vals, mapped, params, prim=pure_callback_p):
    """One call per example: a ``lax.map`` over the batched operands (so nested vmaps, each
    with its own method, compose as traced code does)."""

    def one(xs):
        it = iter(xs)
        return prim.bind(*[next(it) if m else v for v, m in zip(vals, mapped)], **params)
    return lax_map(one, [v for v, m in zip(vals, mapped) if m])


def _vectorized(vals, mapped, size, broadcast, params):
    """One call on the batched operands, unbatched ones given a leading axis of 1
    (``expand_dims``) or of the batch size (``broadcast_all``)."""

    def widen(v):
        shape = tuple(get_aval(v).shape)
        return broadcast_in_dim(v, ((size if broadcast else 1),) + shape,
                                tuple(range(1, len(shape) + 1)))
    avals = tuple(ShapedArray((size,) + a.shape, a.dtype) for a in params["result_avals"])
    return pure_callback_p.bind(*[v if m else widen(v) for v, m in zip(vals, mapped)],
                                **dict(params, result_avals=avals))


pure_callback_p.impl = _impl
pure_callback_p.abstract_eval = lambda *avals, result_avals, **_: list(result_avals)
pure_callback_p.jvp = _jvp
pure_callback_p.batch = _batch
io_callback_p.impl = _impl
io_callback_p.abstract_eval = pure_callback_p.abstract_eval
io_callback_p.jvp = _io_jvp
io_callback_p.batch = _io_batch


def _checked(outs, avals, name):
    """The callback's outputs as NumPy arrays of the declared dtypes, shapes checked."""
    got = []
    for o, a in zip(outs, avals):
        o = np.asarray(o, dtype=a.dtype)
        if o.shape != a.shape:
            raise ValueError(f"pure_callback {name} returned an array of shape {o.shape} where "
                             f"result_shape_dtypes declares {a.shape}")
        got.append(o)
    return got


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  vectorized=None, **kwargs):
    """Call the Python function ``callback(*args, **kwargs)`` on concrete arrays, from inside
    jit and vmap too; ``result_shape_dtypes`` (a pytree of ``ShapeDtypeStruct`` or arrays)
    declares what it returns. ``vmap_method`` ("sequential", "expand_dims", "broadcast_all")
    says how vmap calls it; there is no derivative.

    >>> def host_sin(x):
    ...     return np.sin(x)
    >>> fnx.jit(lambda x: fnx.pure_callback(host_sin, fnx.ShapeDtypeStruct(x.shape, x.dtype),
    ...                                     x, vmap_method="sequential"))(jnp.ones(3))
    Array([0.841471, 0.841471, 0.841471], dtype=float32)
    """
    if vectorized is not None and vmap_method is None:     # older JAX's spelling
        vmap_method = "legacy_vectorized" if vectorized else "sequential"
    return _bind_callback(pure_callback_p, "pure_callback", callback, result_shape_dtypes,
                          args, kwargs, vmap_method)


def _bind_callback(prim, what, callback, result_shape_dtypes, args, kwargs, vmap_method):
    """Bind callback primitive ``prim`` on the flattened ``(args, kwargs)``, with results of
    ``result_shape_dtypes``' structure (checked when the callback runs)."""
    leaves, in_tree = tree_flatten((args, kwargs))
    leaves = [x if isinstance(x, (Array, Tracer)) else device_put(x) for x in leaves]
    out_leaves, out_tree = tree_flatten(result_shape_dtypes)
    avals = tuple(ShapedArray(tuple(o.shape), np.dtype(o.dtype)) for o in out_leaves)
    name = getattr(callback, "__name__", "callback")

    def flat_callback(*xs):
        a, kw = tree_unflatten(in_tree, xs)
        outs, tree = tree_flatten(callback(*a, **kw))
        if tree != out_tree:
            raise TypeError(f"{what} {name} returned a result of structure {tree}, but "
                            f"result_shape_dtypes has structure {out_tree}")
        return outs
    flat_callback.__name__ = name
    outs = prim.bind(*leaves, callback=flat_callback, result_avals=avals,
                     vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False,
                **kwargs):
    """Call ``callback(*args, **kwargs)`` on concrete arrays for its side effects (printing,
    drawing from a host generator) and its result, declared by ``result_shape_dtypes``. Unlike
    ``pure_callback`` it is never dropped as dead code; ``ordered=True`` calls keep program
    order and cannot be vmapped; neither kind can be differentiated.

    >>> fnx.jit(lambda x: io_callback(lambda v: v * 2, x, x))(jnp.ones(2))
    Array([2., 2.], dtype=float32)
    """
    return _bind_callback(io_callback_p, "io_callback", callback, result_shape_dtypes, args,
                          kwargs, "ordered" if ordered else "sequential")
