"""Mixed precision as a policy, with the jmp library's API: parameters kept in one dtype (the
float32 master weights), computation in another (bfloat16 or float16), outputs in a third, and
loss scaling for float16 gradients.

A model needs no rewriting: ``apply_policy`` casts a function's floating-point arguments to the
compute dtype and its results to the output dtype. Gradients flow back through the casts, so
they arrive in the parameters' dtype. Inside, fnx's sums, means, variances, softmax and norms
accumulate half-precision values in float32, and products of bfloat16/float16 operands
accumulate in float32, as JAX's do.

>>> import fnx, fnx.numpy as jnp
>>> policy = get_policy("params=float32,compute=bfloat16,output=float32")
>>> loss = apply_policy(lambda w, x: jnp.sum(jnp.tanh(x @ w)), policy)
>>> fnx.grad(loss)(jnp.ones((3, 2)), jnp.ones((4, 3))).dtype     # the master weights' dtype
dtype('float32')
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import numpy as jnp
from .core import dtypes
from .core.errors import FnxError
from .core.pytree import register_pytree_node, tree_leaves, tree_map
from .core.traceback_util import api_boundary


class PolicyError(FnxError, ValueError):
    """A mixed-precision policy string or dtype fnx cannot read.

    >>> try:
    ...     fnx.amp.get_policy("nonsense=3")
    ... except fnx.amp.PolicyError as e:
    ...     print(type(e).__name__)
    PolicyError
    """


_DTYPE_NAMES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "f16": "float16", "float16": "float16", "half": "float16",
    "f32": "float32", "float32": "float32", "full": "float32", "single": "float32",
    "f64": "float64", "float64": "float64", "double": "float64",
}
_SHORT_NAMES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}
_KEYS = {"p": "param_dtype", "params": "param_dtype", "param": "param_dtype",
         "c": "compute_dtype", "compute": "compute_dtype",
         "o": "output_dtype", "output": "output_dtype"}


def half_dtype():
    """The half-precision dtype ``"half"`` means: float16 (fnx runs on CPUs and NVIDIA GPUs).

    >>> fnx.amp.half_dtype()
    dtype('float16')
    """
    return np.dtype(np.float16)


def _as_float_dtype(dtype) -> np.dtype:
    if isinstance(dtype, str):
        name = _DTYPE_NAMES.get(dtype.strip().lower())
        if name is None:
            raise PolicyError(f"unknown dtype {dtype!r} in a mixed-precision policy; use one "
                              f"of {sorted(_DTYPE_NAMES)}")
        dtype = dtypes.bfloat16 if name == "bfloat16" else name
    dtype = np.dtype(dtype)
    if not dtypes.is_float(dtype):
        raise PolicyError(f"a mixed-precision policy takes floating-point dtypes, got {dtype}")
    return dtype


def _cast_floating(tree, dtype):
    """``tree`` with its floating-point array leaves cast to ``dtype``; integers, booleans and
    Python numbers stay as they are (as jmp does)."""
    def cast(x):
        if hasattr(x, "dtype") and hasattr(x, "shape") and dtypes.is_float(np.dtype(x.dtype)):
            return jnp.asarray(x).astype(dtype)
        return x
    return tree_map(cast, tree)


@dataclasses.dataclass(frozen=True)
class Policy:
    """The dtypes of parameters, computation and outputs (``jmp.Policy``). Hashable, so it may
    be a static argument of ``jit``.

    >>> p = Policy(jnp.float32, jnp.bfloat16, jnp.float32)
    >>> p.cast_to_compute({"w": jnp.ones(2), "step": 3})["w"].dtype
    dtype(bfloat16)
    """
    param_dtype: np.dtype
    compute_dtype: np.dtype
    output_dtype: np.dtype

    def __post_init__(self):
        for field in ("param_dtype", "compute_dtype", "output_dtype"):
            object.__setattr__(self, field, _as_float_dtype(getattr(self, field)))

    def cast_to_param(self, x):
        """``x``'s floating-point leaves in ``param_dtype``."""
        return _cast_floating(x, self.param_dtype)

    def cast_to_compute(self, x):
        """``x``'s floating-point leaves in ``compute_dtype``."""
        return _cast_floating(x, self.compute_dtype)

    def cast_to_output(self, x):
        """``x``'s floating-point leaves in ``output_dtype``."""
        return _cast_floating(x, self.output_dtype)

    def with_param_dtype(self, dtype) -> Policy:
        return dataclasses.replace(self, param_dtype=dtype)

    def with_compute_dtype(self, dtype) -> Policy:
        return dataclasses.replace(self, compute_dtype=dtype)

    def with_output_dtype(self, dtype) -> Policy:
        return dataclasses.replace(self, output_dtype=dtype)

    def __str__(self):
        return ",".join(f"{k}={_SHORT_NAMES[np.dtype(d).name]}" for k, d in
                        (("p", self.param_dtype), ("c", self.compute_dtype),
                         ("o", self.output_dtype)))


def get_policy(policy_name: str) -> Policy:
    """A ``Policy`` from a string (``jmp.get_policy``): ``"params=float32,compute=bfloat16,
    output=float32"``, short keys and names (``"p=f32,c=f16,o=f32"``), or one dtype for all
    three (``"bf16"``). A missing ``params`` is float32, a missing ``compute`` the params'
    dtype and a missing ``output`` the compute dtype.

    >>> str(get_policy("params=float32,compute=half"))
    'p=f32,c=f16,o=f16'
    """
    if not isinstance(policy_name, str):
        raise PolicyError(f"get_policy takes a string, got {type(policy_name).__name__}")
    if "=" not in policy_name:
        dtype = _as_float_dtype(policy_name)
        return Policy(dtype, dtype, dtype)
    chosen: dict = {}
    for part in policy_name.split(","):
        key, sep, value = part.partition("=")
        field = _KEYS.get(key.strip().lower())
        if not sep or field is None:
            raise PolicyError(f"cannot read {part!r} in the policy {policy_name!r}: each part "
                              "is params=DTYPE, compute=DTYPE or output=DTYPE")
        chosen[field] = _as_float_dtype(value)
    param = chosen.get("param_dtype", np.dtype(np.float32))
    compute = chosen.get("compute_dtype", param)
    return Policy(param, compute, chosen.get("output_dtype", compute))


def _as_policy(policy) -> Policy:
    return get_policy(policy) if isinstance(policy, str) else policy


def apply_policy(fun, policy):
    """``fun`` run under ``policy``: its floating-point arguments (parameters and inputs) are
    cast to the compute dtype and its floating-point results to the output dtype. Keep the
    parameters in ``policy.param_dtype`` outside: their gradients come back in that dtype.

    >>> model = apply_policy(lambda w, x: x @ w, "p=f32,c=bf16,o=f32")
    >>> model(jnp.ones((3, 2)), jnp.ones((4, 3))).dtype
    dtype('float32')
    """
    policy = _as_policy(policy)

    @functools.wraps(fun)
    @api_boundary
    def under_policy(*args, **kwargs):
        args, kwargs = policy.cast_to_compute((args, kwargs))
        return policy.cast_to_output(fun(*args, **kwargs))
    return under_policy


def cast_to_full(tree):
    """``tree``'s floating-point leaves in float32.

    >>> fnx.amp.cast_to_full({"w": jnp.ones(2, jnp.float16), "step": 3})
    {'step': 3, 'w': Array([1., 1.], dtype=float32)}
    """
    return _cast_floating(tree, np.float32)


def cast_to_half(tree):
    """``tree``'s floating-point leaves in ``half_dtype()``.

    >>> fnx.amp.cast_to_half({"w": jnp.ones(2), "step": 3})
    {'step': 3, 'w': Array([1., 1.], dtype=float16)}
    """
    return _cast_floating(tree, half_dtype())


def all_finite(tree):
    """A scalar boolean array: whether every leaf of ``tree`` holds only finite values.

    >>> all_finite({"a": jnp.ones(2), "b": jnp.array([1.0, jnp.inf])})
    Array(False, dtype=bool)
    """
    leaves = tree_leaves(tree)
    if not leaves:
        return jnp.asarray(True)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def select_tree(pred, a, b):
    """``a`` where the scalar boolean ``pred`` holds, else ``b``, leaf by leaf (to skip an
    update whose gradients were not finite).

    >>> fnx.amp.select_tree(jnp.array(False), {"w": jnp.ones(2)}, {"w": jnp.zeros(2)})
    {'w': Array([0., 0.], dtype=float32)}
    """
    pred = jnp.asarray(pred)
    if pred.shape != () or pred.dtype != np.bool_:
        raise PolicyError(f"select_tree needs a scalar boolean predicate, got "
                          f"{pred.dtype}{list(pred.shape)}")
    return tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


# ---------------------------------------------------------------------------------------------
# Loss scaling: multiply the loss before differentiating so that small float16 gradients do
# not flush to zero, and divide the gradients afterwards.


class NoOpLossScale:
    """No loss scaling (for float32 and bfloat16).

    >>> scale = fnx.amp.NoOpLossScale()
    >>> scale.scale(jnp.array(2.0)), scale.loss_scale
    (Array(2., dtype=float32, weak_type=True), 1)
    """

    @property
    def loss_scale(self):
        return 1

    def scale(self, tree):
        return tree

    def unscale(self, tree):
        return tree

    def adjust(self, grads_finite) -> NoOpLossScale:
        return self


register_pytree_node(NoOpLossScale, lambda s: ((), None), lambda _, __: NoOpLossScale())


class StaticLossScale:
    """Multiply by a fixed ``loss_scale``.

    >>> StaticLossScale(2.0 ** 10).scale(jnp.float32(3.0))
    Array(3072., dtype=float32)
    """

    def __init__(self, loss_scale):
        self.loss_scale = jnp.asarray(loss_scale, jnp.float32)

    def scale(self, tree):
        return tree_map(lambda x: x * self.loss_scale, tree)

    def unscale(self, tree):
        inverse = 1 / self.loss_scale
        return tree_map(lambda x: x * inverse, tree)

    def adjust(self, grads_finite) -> StaticLossScale:
        return self


register_pytree_node(StaticLossScale, lambda s: ((s.loss_scale,), None),
                     lambda _, children: _static_from(children[0]))


def _static_from(loss_scale):
    s = object.__new__(StaticLossScale)
    s.loss_scale = loss_scale
    return s


@dataclasses.dataclass(frozen=True)
class DynamicLossScale:
    """A loss scale that halves (down to ``min_loss_scale``) after a step whose gradients were
    not finite, and doubles (by ``factor``, while the result is finite) after ``period`` finite
    steps in a row, as ``jmp.DynamicLossScale``. A pytree: pass it through ``jit``.

    >>> ls = DynamicLossScale(jnp.float32(2 ** 15))
    >>> ls.adjust(jnp.asarray(False)).loss_scale
    Array(16384., dtype=float32)
    """
    loss_scale: object
    counter: object = dataclasses.field(default_factory=lambda: np.zeros([], np.int32))
    period: int = 2000
    factor: int = 2
    min_loss_scale: object = dataclasses.field(default_factory=lambda: np.ones([], np.float32))

    def scale(self, tree):
        return tree_map(lambda x: x * self.loss_scale, tree)

    def unscale(self, tree):
        inverse = 1 / jnp.asarray(self.loss_scale)
        return tree_map(lambda x: x * inverse, tree)

    def adjust(self, grads_finite) -> DynamicLossScale:
        """The loss scale for the next step, given whether this step's gradients were
        finite."""
        grads_finite = jnp.asarray(grads_finite)
        loss_scale, counter = jnp.asarray(self.loss_scale), jnp.asarray(self.counter)
        grown = loss_scale * self.factor
        on_finite = jnp.where((counter == self.period - 1) & jnp.isfinite(grown), grown,
                              loss_scale)
        on_overflow = jnp.maximum(jnp.asarray(self.min_loss_scale, loss_scale.dtype),
                                  loss_scale / self.factor)
        new_counter = ((counter + 1) % self.period) * grads_finite.astype(counter.dtype)
        return dataclasses.replace(self, loss_scale=jnp.where(grads_finite, on_finite,
                                                              on_overflow),
                                   counter=new_counter)


register_pytree_node(
    DynamicLossScale,
    lambda s: ((s.loss_scale, s.counter), (s.period, s.factor, float(s.min_loss_scale))),
    lambda aux, children: DynamicLossScale(children[0], children[1], aux[0], aux[1],
                                           np.asarray(aux[2], np.float32)))


__all__ = ["Policy", "PolicyError", "get_policy", "apply_policy", "half_dtype", "cast_to_full",
           "cast_to_half", "all_finite", "select_tree", "NoOpLossScale", "StaticLossScale",
           "DynamicLossScale"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line
