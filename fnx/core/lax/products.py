"""``dot_general`` (every product), its rules, and the product precision names."""
from __future__ import annotations

import enum
import numpy as np

from .. import dtypes
from ..ad_util import defjvp, is_undefined
from ..core import ShapedArray, get_aval
from ..errors import DTypeError, ShapeError
from .base import _shp, convert_element_type, not_mapped, primitive, transpose
from ..config import register_option


dot_general_p = primitive("dot_general")


def _dot_general_aval(lhs, rhs, *, dimension_numbers, precision=None,
                      preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dot_general: contracting dimension {a} of lhs {_shp(lhs.shape)} "
                             f"does not match dimension {b} of rhs {_shp(rhs.shape)}")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dot_general: batch dimension {a} of lhs {_shp(lhs.shape)} "
                             f"does not match dimension {b} of rhs {_shp(rhs.shape)}")
    if lhs.dtype != rhs.dtype:
        raise DTypeError(f"dot_general got dtypes {lhs.dtype} and {rhs.dtype}")
    batch = tuple(lhs.shape[a] for a in lb)
    lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    dtype = preferred_element_type or lhs.dtype
    return ShapedArray(batch + lfree + rfree, dtype, lhs.weak_type and rhs.weak_type)


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _remaining(original, *removed_lists):
    removed = set(i for r in removed_lists for i in r)
    return [i for i in original if i not in removed]


def _dot_general_transpose_lhs(g, x_aval, y, *, dimension_numbers, precision=None,
                               preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = len(x_aval.shape)
    y_ndim = get_aval(y).ndim
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = [c for _, c in sorted(zip(y_contract, x_contract))]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    out = dot_general(*_alike(g, y), dims, precision=precision,
                      preferred_element_type=preferred_element_type)
    return _to_layout(out, out_axes, x_aval.dtype)


def _dot_general_transpose_rhs(g, x, y_aval, *, dimension_numbers, precision=None,
                               preferred_element_type=None):
    # x^T g with x first, not (g^T x)^T: for a dense layer's weight gradient the product comes
    # out in the weight's layout, with no transpose after it
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = get_aval(x).ndim
    y_ndim = len(y_aval.shape)
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    ans_batch, ans_x, _ = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(x_kept), ans_x), (tuple(x_batch), ans_batch))
    y_contract_sorted_by_x = [c for _, c in sorted(zip(x_contract, y_contract))]
    out_axes = np.argsort(list(y_batch) + y_contract_sorted_by_x + y_kept)
    out = dot_general(*_alike(x, g), dims, precision=precision,
                      preferred_element_type=preferred_element_type)
    return _to_layout(out, out_axes, y_aval.dtype)


def _alike(a, b):
    """A cotangent has the product's dtype (``preferred_element_type``, bfloat16 operands
    accumulating in float32, say), the other operand its own: both go, exactly, to their
    common dtype for the transposed product."""
    da, db = get_aval(a).dtype, get_aval(b).dtype
    if da == db:
        return a, b
    common, _ = dtypes.result_type((da, False), (db, False))
    return convert_element_type(a, common), convert_element_type(b, common)


def _to_layout(out, out_axes, dtype):
    """A transposed product's axes put in the operand's order and its dtype restored."""
    out = transpose(out, tuple(int(a) for a in out_axes))
    if get_aval(out).dtype != dtype:
        out = convert_element_type(out, dtype)
    return out


def _dot_general_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs) and not is_undefined(rhs):
        return [_dot_general_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if is_undefined(rhs) and not is_undefined(lhs):
        return [None, _dot_general_transpose_rhs(ct, lhs, rhs.aval, **params)]
    raise ValueError("dot_general is not linear in both operands at once")


def _dot_general_batch(vals, dims, *, dimension_numbers, **params):
    # the batch axis stays where it is, named in the dimension numbers: a batch dimension of
    # the product when both operands carry it, a free dimension when one does (as JAX), so
    # vmap adds no transposes before a product
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shift(ax, d):
        return tuple(a + (a >= d) for a in ax) if d is not not_mapped else tuple(ax)

    lc, lb, rc, rb = shift(lc, ld), shift(lb, ld), shift(rc, rd), shift(rb, rd)
    if ld is not not_mapped and rd is not not_mapped:
        return dot_general(lhs, rhs, ((lc, rc), ((ld,) + lb, (rd,) + rb)), **params), 0
    out = dot_general(lhs, rhs, ((lc, rc), (lb, rb)), **params)
    lhs_free = [a for a in range(get_aval(lhs).ndim) if a not in lc and a not in lb]
    if ld is not not_mapped:
        return out, len(lb) + lhs_free.index(ld)
    rhs_free = [a for a in range(get_aval(rhs).ndim) if a not in rc and a not in rb]
    return out, len(lb) + len(lhs_free) + rhs_free.index(rd)


dot_general_p.abstract_eval = _dot_general_aval


def _pp_dot_general(params):
    """As JAX prints it: dimension lists, no unset precision or preferred type."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    out = {"dimension_numbers": _Printed(f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))")}
    if params.get("precision") is not None:
        p = {"highest": "HIGHEST", "tensorfloat32": "HIGH"}[params["precision"]]
        out["precision"] = _Printed(f"(Precision.{p}, Precision.{p})")
    if params.get("preferred_element_type") is not None:
        out["preferred_element_type"] = params["preferred_element_type"]
    return out


class _Printed(str):
    """A parameter's text, printed as it is."""
    __slots__ = ()


dot_general_p.pp_params = _pp_dot_general
defjvp(dot_general_p,
       lambda t, x, y, **p: dot_general_p.bind(t, y, **p),
       lambda t, x, y, **p: dot_general_p.bind(x, t, **p))
dot_general_p.transpose = _dot_general_transpose
dot_general_p.batch = _dot_general_batch


class Precision(enum.Enum):
    """JAX's ``lax.Precision``, accepted wherever ``precision=`` is: DEFAULT follows
    ``default_matmul_precision``, HIGH allows TF32 (as XLA's GPU products do), HIGHEST is full
    float32.

    >>> lax.dot(jnp.ones((2, 3)), jnp.ones(3), precision=lax.Precision.HIGHEST)
    Array([3., 3.], dtype=float32)
    """
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self):
        return self.name


# fnx's two product precisions, by every name JAX accepts (there is no bfloat16 product: the
# cheaper names take the cheaper of fnx's two)
_PRECISION_NAMES = {
    "highest": "highest", "float32": "highest", "tensorfloat32": "tensorfloat32",
    "high": "tensorfloat32", "bfloat16_3x": "tensorfloat32", "fastest": "tensorfloat32",
    "bfloat16": "tensorfloat32", "default": None,
}
_PRECISION_OF = {Precision.DEFAULT: None, Precision.HIGH: "tensorfloat32",
                 Precision.HIGHEST: "highest"}


# JAX's algorithm presets (lax.DotAlgorithmPreset, or their names as strings): full float32
# (or wider) products are fnx's "highest"; those through narrower operands its cheaper product
_PRESETS = {"default", "any_f8_any_f8_f32", "any_f8_any_f8_f32_fast_accum", "any_f8_any_f8_any",
            "any_f8_any_f8_any_fast_accum", "f16_f16_f16", "f16_f16_f32", "bf16_bf16_bf16",
            "bf16_bf16_f32", "bf16_bf16_f32_x3", "bf16_bf16_f32_x6", "bf16_bf16_f32_x9",
            "tf32_tf32_f32", "tf32_tf32_f32_x3", "f32_f32_f32", "f64_f64_f64"}


def _preset(name):
    if name == "default":
        return None
    if name.startswith(("f16", "any_f8")):
        raise ValueError(f"the precision {name.upper()!r} is not supported by fnx's dot_general "
                         "(as on JAX's CPU)")
    return "highest" if name in ("f32_f32_f32", "f64_f64_f64") else "tensorfloat32"


def canonicalize_precision(precision):
    """``precision`` (None, a name, a ``Precision``, or a pair of these for the two operands) as
    fnx's ``None`` (the configured default), ``"highest"`` or ``"tensorfloat32"``."""
    if isinstance(precision, (tuple, list)):
        got = [canonicalize_precision(p) for p in precision]
        # the higher of the operands' precisions wins, as in XLA
        return "highest" if "highest" in got else ("tensorfloat32" if any(got) else None)
    if precision is None or isinstance(precision, Precision):
        return _PRECISION_OF.get(precision)
    name = str(getattr(precision, "name", precision)).lower()   # a DotAlgorithmPreset too
    if name.startswith("precision."):
        name = name[len("precision."):]
    if name in _PRESETS:
        return _preset(name)
    if name not in _PRECISION_NAMES:
        raise ValueError(f"unknown precision {precision!r}; expected a lax.Precision or one of "
                         f"{sorted(_PRECISION_NAMES)}")
    return _PRECISION_NAMES[name]


register_option("default_matmul_precision",
                validate=lambda value: canonicalize_precision(value) or "highest")


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """The general tensor product: ``dimension_numbers`` is
    ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``; the result's axes are the
    batch axes, then ``lhs``'s free axes, then ``rhs``'s.

    >>> a, b = jnp.ones((5, 2, 3)), jnp.ones((5, 3, 4))
    >>> lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))).shape
    (5, 2, 4)
    """
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(map(int, lc)), tuple(map(int, rc))), (tuple(map(int, lb)), tuple(map(int, rb))))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred_element_type)


def dot(a, b, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    """Vector/matrix product of 1-D or 2-D operands (lax.dot); with ``dimension_numbers``,
    ``dot_general``'s general product.

    >>> lax.dot(jnp.ones((2, 3)), jnp.ones(3))
    Array([3., 3.], dtype=float32)
    >>> lax.dot(jnp.ones((2, 3, 4)), jnp.ones((2, 4)), dimension_numbers=(((2,), (1,)),
    ...                                                                    ((0,), (0,))))
    Array([[4., 4., 4.],
           [4., 4., 4.]], dtype=float32)
    """
    if dimension_numbers is not None:
        return dot_general(a, b, dimension_numbers, precision, preferred_element_type)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    return dot_general(a, b, (((na - 1,), (0 if nb == 1 else nb - 2,)), ((), ())),
                       precision, preferred_element_type)
