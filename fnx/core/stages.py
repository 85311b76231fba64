"""Ahead-of-time stages of ``jit``: ``jit(f).trace(*args)`` -> ``Traced`` -> ``.lower()`` ->
``Lowered`` -> ``.compile()`` -> ``Compiled``, as in ``jax.stages``. Arguments may be arrays or
``ShapeDtypeStruct`` specs; a ``Compiled`` runs only arguments of the signature it was built for.
"""
from __future__ import annotations

import numpy as np

from .core import Array, Tracer, get_backend
from .errors import ArgumentTypeError
from .jaxpr import ClosedJaxpr, _Namer, pp_jaxpr
from .pytree import tree_flatten, tree_unflatten
from .traceback_util import api_boundary


class Traced:
    """A jitted function traced for one argument signature.

    >>> traced = fnx.jit(lambda x: x * 2).trace(fnx.ShapeDtypeStruct((3,), "float32"))
    >>> traced.out_info
    ShapeDtypeStruct(shape=(3,), dtype=float32)
    """

    def __init__(self, jitted, traced, key, leaves):
        self._jitted, self._traced, self._key, self._leaves = jitted, traced, key, leaves

    @property
    def jaxpr(self) -> ClosedJaxpr:
        """The traced program, before fnx's optimizations."""
        return self._traced.closed

    @property
    def out_info(self):
        """The output pytree, with a ``ShapeDtypeStruct`` for each array."""
        from .api import ShapeDtypeStruct
        outvars = self._traced.jaxpr.outvars
        outvars = outvars[:len(outvars) - len(self._traced.refs)]
        return tree_unflatten(self._traced.out_tree,
                              [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, v.aval.weak_type)
                               for v in outvars])

    def lower(self) -> "Lowered":
        return Lowered(self._traced, self._leaves, self._jitted, self._key)


class Lowered:
    """A traced program prepared for the backend: ``as_text()`` prints its optimized jaxpr
    (and on the GPU the launches it runs as); ``compile()`` builds the executable.

    >>> lowered = fnx.jit(lambda x: x + 1).lower(fnx.ShapeDtypeStruct((2,), "float32"))
    >>> lowered.compile()(jnp.ones(2))
    Array([2., 2.], dtype=float32)
    """

    def __init__(self, traced, leaves, jitted=None, key=None):
        self.traced = traced
        self._leaves = leaves
        self._jitted, self._key = jitted, key
        self._groups = None

    @property
    def backend(self):
        """The backend the program runs on (that of its array arguments, or the default)."""
        return next((x._backend for x in self._leaves if type(x) is Array), None) \
            or get_backend()

    @property
    def fusion_groups(self):
        """The launches the backend runs the optimized jaxpr as (``FusionGroup`` records of
        fnx.cuda.plan on the GPU); empty where the backend fuses nothing (the CPU)."""
        if self._groups is None:
            grouping = getattr(self.backend, "fusion_groups", None)
            self._groups = grouping(self.traced.jaxpr) if grouping else []
        return self._groups

    def as_text(self) -> str:
        """The optimized jaxpr, then the launches the backend runs it as, in its variable
        names."""
        namer = _Namer()
        text = pp_jaxpr(self.traced.jaxpr, namer=namer)
        if not self.fusion_groups:
            return text
        return text + "\n" + self.backend.pp_fusion_groups(self.traced.jaxpr, self.fusion_groups,
                                                           namer)

    __str__ = as_text

    def compile(self, compiler_options=None) -> "Compiled":
        """The compiled program (``compiler_options``, XLA's flags, are accepted and ignored)."""
        return Compiled(self, self._jitted.executable_for(self.traced, self.backend))


def _types(signature) -> str:
    return ", ".join(f"{np.dtype(d).name}[{','.join(map(str, s))}]" for s, d in signature)


def _structures(want, got) -> str:
    """The pytree structures of a mismatched call, where they differ (positional arguments
    against keywords, a list for a tuple)."""
    return "" if want == got else f"; argument structure compiled for {want}, called with {got}"


class Compiled:
    """A program compiled for one signature. Call it with the jitted function's non-static
    arguments; other shapes or dtypes raise ``ArgumentTypeError`` (a ``TypeError``, no
    retracing), and so do
    transformations (it is no longer a traceable function). The backend executable's own
    attributes (``describe()``, ...) are reachable through it, and it is ``.executable``.

    >>> compiled = fnx.jit(jnp.sin).lower(fnx.ShapeDtypeStruct((), "float32")).compile()
    >>> compiled(jnp.float32(0.0))
    Array(0., dtype=float32)
    """

    def __init__(self, lowered: Lowered, executable):
        self._lowered = lowered
        self.executable = executable

    @api_boundary
    def __call__(self, *args, **kwargs):
        jitted = self._lowered._jitted
        traced, key = self._lowered.traced, self._lowered._key
        leaves, tree = tree_flatten((list(args), kwargs))
        tracer = next((x for x in leaves if isinstance(x, Tracer)), None)
        if tracer is not None:
            raise ArgumentTypeError(
                "a compiled function cannot be transformed (it was compiled for one signature), "
                f"got a tracer {tracer.aval.str_short()}; transform the jitted function instead")
        got = tuple(jitted.leaf_signature(x)[:2] for x in leaves)
        want = tuple(s[:2] for s in key[1]) if key is not None else got
        if (key is not None and tree != key[0]) or got != want:
            raise ArgumentTypeError(f"{jitted.name} was compiled for arguments ({_types(want)}) "
                                    f"but called with ({_types(got)})"
                                    + _structures(key[0], tree))
        return jitted.run_traced(traced, leaves)

    def __getattr__(self, name):
        return getattr(self.__dict__["executable"], name)
