"""Every op spec: forward vs float64 NumPy, gradients (fwd + rev, 2nd order), vmap vs stacking,
and type-checked jaxprs of each transformation."""
import numpy as np
import pytest

import fnx
from fnx.core import lax as core_lax
from fnx.core.jaxpr import typecheck_jaxpr
from fnx.test_util import check_grads, primitives_in

from op_specs import SPECS, SPEC_IDS


def _as_np(x):
    return np.asarray(x)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_forward_matches_numpy(spec):
    rng = np.random.default_rng(hash(spec.name) % 2**32)
    args = spec.draw(rng)
    out = spec.fn(*[fnx.numpy.asarray(a) for a in args])
    ref = spec.ref(*args)
    assert _as_np(out).shape == np.shape(ref), spec.name
    np.testing.assert_allclose(_as_np(out), ref, atol=spec.atol, rtol=1e-6)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.grad], ids=[s.name for s in SPECS if s.grad])
def test_grads(spec):
    rng = np.random.default_rng(7 + hash(spec.name) % 2**32)
    args = spec.draw(rng)
    float_args = [a for a in args if np.asarray(a).dtype.kind == "f"]
    others = [a for a in args if np.asarray(a).dtype.kind != "f"]

    def f(*fargs):
        it_f, it_o = iter(fargs), iter(others)
        full = [next(it_f) if np.asarray(a).dtype.kind == "f" else next(it_o) for a in args]
        return spec.fn(*full)
    check_grads(f, float_args, order=2, atol=1e-5, rtol=1e-4, rng=rng)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_vmap_matches_stacking(spec):
    rng = np.random.default_rng(11 + hash(spec.name) % 2**32)
    batched = spec.draw(rng, batch=3)
    out = fnx.vmap(spec.fn)(*batched)
    expected = np.stack([_as_np(spec.fn(*[a[i] for a in batched])) for i in range(3)])
    np.testing.assert_allclose(_as_np(out), expected, atol=1e-6, rtol=1e-6)


MULTI_ARG = [s for s in SPECS if len(s.args) > 1]


@pytest.mark.parametrize("spec", MULTI_ARG, ids=[s.name for s in MULTI_ARG])
def test_vmap_some_args_unbatched(spec):
    rng = np.random.default_rng(13)
    batched = spec.draw(rng, batch=2)
    single = spec.draw(rng)
    in_axes = (0,) + (None,) * (len(single) - 1)
    args = [batched[0]] + single[1:]
    out = fnx.vmap(spec.fn, in_axes=in_axes)(*args)
    expected = np.stack([_as_np(spec.fn(batched[0][i], *single[1:])) for i in range(2)])
    np.testing.assert_allclose(_as_np(out), expected, atol=1e-6, rtol=1e-6)


def _transformed_jaxprs(spec, rng):
    args = spec.draw(rng)
    yield fnx.make_jaxpr(spec.fn)(*args)
    yield fnx.make_jaxpr(fnx.vmap(spec.fn))(*spec.draw(rng, batch=2))
    if spec.grad:
        fidx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]

        def scalar(*fa):
            full = list(args)
            for i, v in zip(fidx, fa):
                full[i] = v
            return fnx.numpy.sum(spec.fn(*full))
        fargs = [args[i] for i in fidx]
        yield fnx.make_jaxpr(fnx.grad(scalar, argnums=tuple(range(len(fargs)))))(*fargs)
        tangents = [np.ones_like(a) for a in fargs]
        yield fnx.make_jaxpr(lambda *a: fnx.jvp(scalar, a, tangents))(*fargs)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_transformed_jaxprs_typecheck(spec):
    for closed in _transformed_jaxprs(spec, np.random.default_rng(3)):
        typecheck_jaxpr(closed.jaxpr)


# Primitives reached only through other machinery, with the test that covers them.
EXEMPT_FROM_SPECS = {
    "iota",            # arange/argsort/one_hot build it; covered through those specs' jaxprs
    "custom_jvp_call", "custom_vjp_call", "custom_lin", "remat",  # tests/test_custom_derivatives
    "custom_vmap_call",                                             # tests/test_custom_batching
    "linear_call",                                                  # tests/test_linear_call
    "check",                                                        # tests/test_checkify
    "jit", "cond", "while", "scan", "debug_callback",              # tests/test_jit, control flow
    "pure_callback",                                                # tests/test_jax_api
    "io_callback",                                                  # tests/test_doc_programs
    # collectives need a named axis (vmap/pmap/shard_map): tests/test_collectives.py
    "psum", "pmax", "pmin", "all_gather", "reduce_scatter", "ppermute", "all_to_all",
    "axis_index",
}


def test_every_primitive_is_in_the_op_table():
    names = set()
    rng = np.random.default_rng(0)
    for spec in SPECS:
        for closed in _transformed_jaxprs(spec, rng):
            primitives_in(closed.jaxpr, names)
    missing = [p.name for p in core_lax.all_primitives()
               if p.name not in names and p.name not in EXEMPT_FROM_SPECS]
    assert not missing, f"primitives with no op spec: {missing}"


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_jit_matches_eager(spec):
    args = [fnx.numpy.asarray(a) for a in spec.draw(np.random.default_rng(17))]
    out = fnx.jit(spec.fn)(*args)
    np.testing.assert_allclose(_as_np(out), _as_np(spec.fn(*args)), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.grad], ids=[s.name for s in SPECS if s.grad])
def test_jit_of_grad_and_grad_of_jit(spec):
    args = spec.draw(np.random.default_rng(19))
    fidx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]

    def loss(f):
        def inner(*fa):
            full = list(args)
            for i, v in zip(fidx, fa):
                full[i] = v
            return fnx.numpy.sum(f(*full) ** 2)
        return inner
    fargs = [args[i] for i in fidx]
    argnums = tuple(range(len(fargs)))
    expected = fnx.grad(loss(spec.fn), argnums)(*fargs)
    for g in (fnx.jit(fnx.grad(loss(spec.fn), argnums)),
              fnx.grad(loss(fnx.jit(spec.fn)), argnums)):
        for a, b in zip(g(*fargs), expected):
            np.testing.assert_allclose(_as_np(a), _as_np(b), atol=1e-12, rtol=1e-10)
