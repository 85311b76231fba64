"""One table of op specs drives the forward, gradient, vmap, jit and GPU-parity tests.

Each spec is a function over fnx arrays, its float64 NumPy reference, and how to draw inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

import fnx.lax as lax
import fnx.lax.linalg as lax_linalg
import fnx.nn as nn
import fnx.numpy as jnp
from fnx.ad_checkpoint import checkpoint_name

# input domains: name -> sampler(rng, shape) in float64
DOMAINS = {
    "any": lambda r, s: r.standard_normal(s),
    "pos": lambda r, s: r.uniform(0.5, 2.0, s),
    "unit": lambda r, s: r.uniform(-0.9, 0.9, s),
    "gt1": lambda r, s: r.uniform(1.2, 3.0, s),
    "away0": lambda r, s: r.choice([-1.0, 1.0], s) * r.uniform(0.5, 2.0, s),
    "int": lambda r, s: r.integers(-5, 6, s).astype(np.int32),
    "int_nz": lambda r, s: r.choice([-1, 1], s).astype(np.int32) * r.integers(1, 5, s).astype(np.int32),
    "idx4": lambda r, s: r.integers(0, 4, s).astype(np.int32),
    "bool": lambda r, s: r.random(s) > 0.5,
    "u32": lambda r, s: r.integers(0, 2**32, s, dtype=np.uint32),
    "shift_u32": lambda r, s: r.integers(0, 40, s).astype(np.uint32),
    "shift_i32": lambda r, s: r.integers(-2, 40, s).astype(np.int32),
}


@dataclass
class OpSpec:
    name: str
    fn: Callable
    ref: Callable
    args: list                  # [(shape, domain)]
    grad: bool = True           # differentiable (check_grads to second order)
    atol: float = 1e-6
    tags: tuple = field(default_factory=tuple)

    def draw(self, rng, batch: int | None = None):
        out = []
        for shape, dom in self.args:
            s = shape if batch is None else (batch,) + tuple(shape)
            out.append(DOMAINS[dom](rng, s))
        return out

    def __repr__(self):
        return self.name


def _erf(x):
    return np.vectorize(math.erf)(x)


def _unary(name, fn, ref, dom="any", grad=True, shape=(3, 4)):
    return OpSpec(name, fn, ref, [(shape, dom)], grad)


def _binary(name, fn, ref, d1="any", d2="any", grad=True, s1=(3, 4), s2=(3, 4)):
    return OpSpec(name, fn, ref, [(s1, d1), (s2, d2)], grad)


def _conv_nhwc_ref(x, w, strides, pads, groups):
    """An NHWC/HWIO convolution: over kernel offsets, a sum of strided slices of the padded
    input times the kernel's slice, each feature group on its own."""
    x = np.pad(x, [(0, 0), *pads, (0, 0)])
    (kh, kw, c, o), (sh, sw), n = w.shape, strides, x.shape[0]
    oh, ow = (x.shape[1] - kh) // sh + 1, (x.shape[2] - kw) // sw + 1
    out = 0
    for i, j in np.ndindex(kh, kw):
        patch = x[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
        patch = patch.reshape(n, oh, ow, groups, c)
        out = out + np.einsum("nhwgc,cgo->nhwgo", patch,
                              w[i, j].reshape(c, groups, o // groups))
    return out.reshape(n, oh, ow, o)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _scatter_ref(mode):
    def ref(x, v):
        out = x.copy()
        idx = np.array([0, 2, 2])
        if mode == "set":
            out[idx[:2]] = v[:2]
        elif mode == "add":
            np.add.at(out, idx, v)
        elif mode == "mul":
            out[idx[:2]] *= v[:2]
        else:
            getattr(np, {"min": "minimum", "max": "maximum"}[mode]).at(out, idx[:2], v[:2])
        return out
    return ref


def _scatter_fn(mode):
    def fn(x, v):
        x = jnp.asarray(x)
        if mode == "add":
            return x.at[jnp.array([0, 2, 2])].add(v)
        method = {"set": "set", "mul": "multiply", "min": "min", "max": "max"}[mode]
        return getattr(x.at[jnp.array([0, 2])], method)(v[:2])
    return fn


SPECS = [
    _unary("neg", jnp.negative, np.negative),
    _unary("sin", jnp.sin, np.sin),
    _unary("cos", jnp.cos, np.cos),
    _unary("tan", jnp.tan, np.tan, "unit"),
    _unary("arcsin", jnp.arcsin, np.arcsin, "unit"),
    _unary("arccos", jnp.arccos, np.arccos, "unit"),
    _unary("arctan", jnp.arctan, np.arctan),
    _unary("sinh", jnp.sinh, np.sinh),
    _unary("cosh", jnp.cosh, np.cosh),
    _unary("tanh", jnp.tanh, np.tanh),
    _unary("arcsinh", jnp.arcsinh, np.arcsinh),
    _unary("arccosh", jnp.arccosh, np.arccosh, "gt1"),
    _unary("arctanh", jnp.arctanh, np.arctanh, "unit"),
    _unary("exp", jnp.exp, np.exp),
    _unary("log", jnp.log, np.log, "pos"),
    _unary("log1p", jnp.log1p, np.log1p, "pos"),
    _unary("expm1", jnp.expm1, np.expm1),
    _unary("sqrt", jnp.sqrt, np.sqrt, "pos"),
    _unary("rsqrt", lax.rsqrt, lambda x: 1 / np.sqrt(x), "pos"),
    _unary("abs", jnp.abs, np.abs, "away0"),
    _unary("sign", jnp.sign, np.sign, "away0", grad=False),
    _unary("floor", jnp.floor, np.floor, grad=False),
    _unary("ceil", jnp.ceil, np.ceil, grad=False),
    _unary("round", jnp.round, np.round, grad=False),
    _unary("logistic", nn.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    _unary("erf", lax.erf, _erf),
    _unary("integer_pow", lambda x: x ** 3, lambda x: x ** 3),
    _unary("square", jnp.square, np.square),
    _unary("isfinite", jnp.isfinite, np.isfinite, grad=False),
    _unary("not", jnp.logical_not, np.logical_not, "bool", grad=False),
    _unary("stop_gradient", lambda x: lax.stop_gradient(x) * x, lambda x: x * x, grad=False),
    _unary("name", lambda x: jnp.sin(checkpoint_name(x, "n")), np.sin),
    _binary("add", jnp.add, np.add),
    _binary("sub", jnp.subtract, np.subtract),
    _binary("mul", jnp.multiply, np.multiply),
    _binary("div", jnp.divide, np.divide, "any", "away0"),
    _binary("pow", jnp.power, np.power, "pos", "any"),
    _binary("max", jnp.maximum, np.maximum),
    _binary("min", jnp.minimum, np.minimum),
    _binary("atan2", jnp.arctan2, np.arctan2, "any", "away0"),
    _binary("rem", jnp.fmod, np.fmod, "any", "away0", grad=False),
    _binary("mod", jnp.mod, np.mod, "any", "away0", grad=False),
    _binary("floor_divide", jnp.floor_divide, np.floor_divide, "int", "away0", grad=False),
    _binary("int_floor_divide", jnp.floor_divide,
            lambda a, b: np.floor_divide(a, b.astype(np.int32)), "int", "int_nz", grad=False),
    _binary("nextafter", jnp.nextafter, np.nextafter, grad=False),
    _binary("eq", jnp.equal, np.equal, "int", "int", grad=False),
    _binary("ne", jnp.not_equal, np.not_equal, "int", "int", grad=False),
    _binary("lt", jnp.less, np.less, grad=False),
    _binary("le", jnp.less_equal, np.less_equal, grad=False),
    _binary("gt", jnp.greater, np.greater, grad=False),
    _binary("ge", jnp.greater_equal, np.greater_equal, grad=False),
    _binary("and", jnp.logical_and, np.logical_and, "bool", "bool", grad=False),
    _binary("or", jnp.logical_or, np.logical_or, "bool", "bool", grad=False),
    _binary("xor", jnp.bitwise_xor, np.bitwise_xor, "int", "int", grad=False),
    _binary("broadcast_add", jnp.add, np.add, s1=(3, 1), s2=(4,)),
    _binary("scalar_mul", jnp.multiply, np.multiply, s2=()),
    _binary("scalar_sub", jnp.subtract, np.subtract, s1=()),
    _binary("scalar_div", jnp.divide, np.divide, "any", "away0", s2=()),
    _binary("scalar_max", jnp.maximum, np.maximum, s1=()),
    OpSpec("where", lambda c, x, y: jnp.where(c, x, y), np.where,
           [((3, 4), "bool"), ((3, 4), "any"), ((4,), "any")]),
    _unary("astype", lambda x: x.astype(jnp.float32), lambda x: x.astype(np.float32),
           grad=False),
    _unary("broadcast_to", lambda x: jnp.broadcast_to(x, (2, 3, 4)),
           lambda x: np.broadcast_to(x, (2, 3, 4))),
    _unary("reshape", lambda x: x.reshape(4, 3), lambda x: x.reshape(4, 3)),
    _unary("transpose", lambda x: x.T, lambda x: x.T),
    _unary("flip", lambda x: jnp.flip(x, 1), lambda x: np.flip(x, 1)),
    _unary("slice", lambda x: x[1:3, ::2], lambda x: x[1:3, ::2]),
    _unary("neg_step_slice", lambda x: x[::-2, 1:], lambda x: x[::-2, 1:]),
    _unary("pad", lambda x: jnp.pad(x, ((1, 2), (0, 1)), constant_values=0.5),
           lambda x: np.pad(x, ((1, 2), (0, 1)), constant_values=0.5)),
    _binary("concatenate", lambda a, b: jnp.concatenate([a, b], 1),
            lambda a, b: np.concatenate([a, b], 1), s2=(3, 2)),
    _unary("arange_mul", lambda x: x * jnp.arange(4), lambda x: x * np.arange(4)),
    OpSpec("take", lambda x, i: x[i], lambda x, i: x[i], [((4, 3), "any"), ((5,), "idx4")],
           grad=True),
    OpSpec("fancy_index", lambda x, i: x[i, 1:, i], lambda x, i: x[i, 1:, i],
           [((4, 3, 4), "any"), ((2,), "idx4")]),
    OpSpec("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, 1),
           lambda x, i: np.take_along_axis(x, i, 1), [((3, 4), "any"), ((3, 2), "idx4")]),
    *[OpSpec(f"scatter_{m}", _scatter_fn(m), _scatter_ref(m), [((4,), "any"), ((3,), "any")],
             grad=m in ("set", "add", "mul")) for m in ("set", "add", "mul", "min", "max")],
    _unary("sum", lambda x: jnp.sum(x, 0), lambda x: np.sum(x, 0)),
    _unary("max", lambda x: jnp.max(x, 1), lambda x: np.max(x, 1)),
    _unary("min", lambda x: jnp.min(x, (0, 1)), lambda x: np.min(x, (0, 1))),
    _unary("prod", lambda x: jnp.prod(x, 1), lambda x: np.prod(x, 1)),
    _unary("mean_var", lambda x: jnp.var(x, 0) + jnp.mean(x),
           lambda x: np.var(x, 0) + np.mean(x)),
    _unary("argmax", lambda x: jnp.argmax(x, 1), lambda x: np.argmax(x, 1), grad=False),
    _unary("argmin", lambda x: jnp.argmin(x, 0), lambda x: np.argmin(x, 0), grad=False),
    _unary("any", lambda x: jnp.any(x, 1), lambda x: np.any(x, 1), "bool", grad=False),
    _unary("all", lambda x: jnp.all(x, 0), lambda x: np.all(x, 0), "bool", grad=False),
    _unary("cumsum", lambda x: jnp.cumsum(x, 1), lambda x: np.cumsum(x, 1)),
    _unary("cumprod", lambda x: jnp.cumprod(x, 0), lambda x: np.cumprod(x, 0)),
    _unary("cummax", lambda x: lax.cummax(x, 1), lambda x: np.maximum.accumulate(x, 1)),
    _binary("matmul", jnp.matmul, np.matmul, s1=(3, 4), s2=(4, 2)),
    _binary("batched_matmul", jnp.matmul, np.matmul, s1=(2, 3, 4), s2=(4, 5)),
    _binary("einsum", lambda a, b: jnp.einsum("bij,bkj->bik", a, b),
            lambda a, b: np.einsum("bij,bkj->bik", a, b), s1=(2, 3, 4), s2=(2, 5, 4)),
    _binary("conv_nhwc_grouped",
            lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (1, 1)),
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                  feature_group_count=2),
            lambda x, w: _conv_nhwc_ref(x, w, (2, 1), [(1, 0), (1, 1)], 2),
            s1=(2, 5, 4, 4), s2=(2, 3, 2, 4)),
    _unary("sort", lambda x: jnp.sort(x, 1), lambda x: np.sort(x, 1)),
    _unary("argsort", lambda x: jnp.argsort(x, 0), lambda x: np.argsort(x, 0, kind="stable"),
           grad=False),
    _unary("softmax", nn.softmax, _softmax),
    _unary("logsumexp", lambda x: nn.logsumexp(x, 1),
           lambda x: np.log(np.sum(np.exp(x), 1))),
]



# -- bits, erf_inv and linear algebra


def _shift_ref(kind):
    """XLA's shifts on Python ints: counts outside [0, bits) give 0 (or -1 for a negative
    operand shifted arithmetically)."""
    def one(x, y, bits):
        if not 0 <= y < bits:
            return -1 if kind == "arithmetic" and x < 0 else 0
        if kind == "left":
            return x << y
        return (x % 2 ** bits) >> y if kind == "logical" else x >> y

    def ref(x, y):
        bits = 8 * x.dtype.itemsize
        x, y = np.broadcast_arrays(x, y)
        vals = [one(int(a), int(b), bits) % 2 ** bits for a, b in zip(x.ravel(), y.ravel())]
        return np.array(vals, np.uint64).astype(x.dtype).reshape(x.shape)
    return ref


def _erf_inv_ref(u):
    """erf^-1 by bisection on math.erf (float64, no SciPy needed)."""
    lo, hi = np.full(u.shape, -6.0), np.full(u.shape, 6.0)
    erf = np.vectorize(math.erf)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = erf(mid) < u
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def _spd(x):
    return x @ np.swapaxes(x, -1, -2) + 3 * np.eye(x.shape[-1])


def _spd_fx(x):
    return x @ jnp.swapaxes(x, -1, -2) + 3 * jnp.eye(x.shape[-1])


def _fx_tri(x):
    return jnp.tril(x) + 4 * jnp.eye(x.shape[-1])


def _qr_unique(q, r, xp):
    """Q and R with R's diagonal made positive, which makes the factors unique."""
    s = xp.sign(xp.diagonal(r, 0, -2, -1))
    return q * s[..., None, :], r * s[..., :, None]


SPECS += [
    _binary("shift_left", lambda x, y: lax.shift_left(x, y), _shift_ref("left"), "u32",
            "shift_u32", grad=False),
    _binary("shift_left_scalar", lambda x, y: lax.shift_left(x, y), _shift_ref("left"), "u32",
            "shift_u32", grad=False, s2=()),
    _binary("shift_right_logical", lambda x, y: lax.shift_right_logical(x, y),
            _shift_ref("logical"), "int", "shift_i32", grad=False),
    _binary("shift_right_arithmetic", lambda x, y: lax.shift_right_arithmetic(x, y),
            _shift_ref("arithmetic"), "int", "shift_i32", grad=False),
    _unary("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, jnp.uint64),
           lambda x: x.view(np.uint64), grad=False),
    _unary("erf_inv", lax.erf_inv, _erf_inv_ref, "unit"),
    _unary("cholesky", lambda x: jnp.linalg.cholesky(_spd_fx(x)),
           lambda x: np.linalg.cholesky(_spd(x)), shape=(3, 3)),
    _binary("triangular_solve", lambda a, b: lax_linalg.triangular_solve(
                _fx_tri(a), b, left_side=True, lower=True),
            lambda a, b: np.linalg.solve(np.tril(a) + 4 * np.eye(3), b), s1=(3, 3), s2=(3, 2)),
    _binary("triangular_solve_right_upper_t", lambda a, b: lax_linalg.triangular_solve(
                _fx_tri(a).T, b, lower=False, transpose_a=True),
            lambda a, b: b @ np.linalg.inv(np.tril(a) + 4 * np.eye(3)), s1=(3, 3), s2=(2, 3)),
    _binary("lu_solve", jnp.linalg.solve, np.linalg.solve, s1=(3, 3), s2=(3, 2)),
    _unary("lu_det", jnp.linalg.det, np.linalg.det, shape=(3, 3)),
    _unary("qr", lambda x: jnp.concatenate(_qr_unique(*jnp.linalg.qr(x), jnp), 0),
           lambda x: np.concatenate(_qr_unique(*np.linalg.qr(x), np), 0), shape=(4, 3)),
]

def _sign_free(xp, values, *vectors):
    """Eigen/singular values stacked on their vectors squared (signs are arbitrary)."""
    return xp.concatenate([values[..., None, :]] + [v * v for v in vectors], -2)


SPECS += [
    _unary("eigh", lambda x: _sign_free(jnp, *jnp.linalg.eigh(x)),
           lambda x: _sign_free(np, *np.linalg.eigh((x + np.swapaxes(x, -1, -2)) / 2)),
           shape=(3, 3)),
    _unary("svd", lambda x: (lambda u, s, vh: _sign_free(jnp, s, u, vh))(
               *jnp.linalg.svd(x, full_matrices=False)),
           lambda x: (lambda u, s, vh: _sign_free(np, s, u, vh))(
               *np.linalg.svd(x, full_matrices=False)), shape=(4, 3)),
]

# -- the fft primitive (every kind), real in and out: a spectrum times a spectrum is nonlinear.
# Tagged "complex": the spectra are complex values, which the GPU runs as eager CuPy calls

SPECS += [replace(spec, tags=("complex",)) for spec in [
    _unary("rfft_irfft", lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * jnp.fft.rfft(x[::-1]), n=5),
           lambda x: np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(x[::-1]), n=5), shape=(3, 5)),
    _unary("fft_ifft_hfft",
           lambda x: jnp.fft.hfft(jnp.fft.ifft(jnp.fft.fft(x, axis=0) * x, axis=0), n=6),
           lambda x: np.fft.hfft(np.fft.ifft(np.fft.fft(x, axis=0) * x, axis=0), n=6)),
    _unary("rfft2_ortho",
           lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x, norm="ortho") ** 2, s=(3, 4), norm="ortho"),
           lambda x: np.fft.irfft2(np.fft.rfft2(x, norm="ortho") ** 2, s=(3, 4), norm="ortho")),
]]

SPEC_IDS = [s.name for s in SPECS]


# Complex numbers inside real functions of real inputs: each spec builds z = x + iy with
# lax.complex and returns a real array, so the real-input machinery (finite differences, vmap,
# jit) checks the complex rules. Tagged "complex": the GPU runs these programs through its
# eager CuPy path, not generated kernels.
def _z(x, y):
    return lax.complex(x, y)


def _complex_spec(name, fn, ref, d1="any", d2="any", grad=True):
    return OpSpec(name, fn, ref, [((3, 4), d1), ((3, 4), d2)], grad, tags=("complex",))


SPECS += [
    _complex_spec("complex_abs", lambda x, y: jnp.abs(_z(x, y)),
                  lambda x, y: np.abs(x + 1j * y), "away0", "away0"),
    _complex_spec("complex_real_imag",
                  lambda x, y: jnp.real(_z(x, y) * _z(y, x)) + jnp.imag(jnp.exp(_z(x, y))),
                  lambda x, y: np.real((x + 1j * y) * (y + 1j * x)) + np.imag(np.exp(x + 1j * y))),
    _complex_spec("complex_conj",
                  lambda x, y: jnp.imag(jnp.conj(_z(x, y)) * _z(y, x * x))
                  + jnp.real(lax.conj(x) * _z(y, x)),
                  lambda x, y: np.imag(np.conj(x + 1j * y) * (y + 1j * x * x))
                  + np.real(x * (y + 1j * x))),
    _complex_spec("complex_angle", lambda x, y: jnp.angle(_z(x, y)),
                  lambda x, y: np.angle(x + 1j * y), "away0", "away0"),
    _complex_spec("complex_holomorphic",
                  lambda x, y: jnp.real(jnp.sin(_z(x, y)) * jnp.exp(_z(y, x)) + _z(x, y) ** 3
                                        + jnp.cosh(_z(y, x)) / (jnp.abs(_z(x, y)) ** 2 + 1)),
                  lambda x, y: np.real(np.sin(x + 1j * y) * np.exp(y + 1j * x) + (x + 1j * y) ** 3
                                       + np.cosh(y + 1j * x) / (x * x + y * y + 1))),
    _complex_spec("complex_vdot_norm",
                  lambda x, y: jnp.abs(jnp.vdot(_z(x, y), _z(y, x)))
                  + jnp.linalg.norm(_z(x, y), axis=1).sum() + jnp.var(_z(x, y), axis=0).sum(),
                  lambda x, y: np.abs(np.vdot(x + 1j * y, y + 1j * x))
                  + np.linalg.norm(x + 1j * y, axis=1).sum() + np.var(x + 1j * y, axis=0).sum()),
]

SPEC_IDS = [s.name for s in SPECS]
