"""The layouts vmap gives products and reductions: the batch axis stays where a product takes
it (a batch or free dimension of ``dot_general``) and per-example reductions reduce the other
axes, so vmapped programs carry no transposes JAX's do not. Counts are compared with
``jax.make_jaxpr`` of the same program, values with JAX on the CPU."""
import os
import re
import sys

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import workloads  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _jax_x64():
    """JAX with 64-bit types, as fnx runs in these tests, so float64 values compare."""
    with jax.enable_x64(True):
        yield


def count(jaxpr, prim):
    """How many equations of ``prim`` the printed program has (nested jaxprs included)."""
    return len(re.findall(rf"= {prim}\b", str(jaxpr)))


def _normal(rng, *shape):
    return rng.standard_normal(shape)


# (name, build(J, jnp) -> function, argument shapes, fnx's transposes)
CASES = [
    ("both batched, axes 1 and 2", lambda J, np_: J.vmap(lambda a, b: a @ b, (1, 2)),
     [(4, 3, 5), (5, 6, 3)], 0),
    ("vector @ matrix, in_axes 1", lambda J, np_: J.vmap(lambda x, w: x @ w, (1, None)),
     [(4, 3), (4, 5)], 0),
    ("matrix @ batched vector", lambda J, np_: J.vmap(lambda w, x: w @ x, (None, 0)),
     [(5, 4), (3, 4)], 1),                 # the result's batch axis moves to out_axes=0
    ("einsum, in_axes (0, 1)", lambda J, np_: J.vmap(
        lambda a, b: np_.einsum("ij,kj->ik", a, b), (0, 1)), [(3, 4, 5), (6, 3, 5)], 0),
    ("per-example norm, in_axes 1", lambda J, np_: J.vmap(
        lambda g: np_.sqrt(np_.sum(g * g)), 1), [(4, 3, 5)], 0),
    ("per-example argmin, in_axes 1", lambda J, np_: J.vmap(
        lambda d: np_.argmin(d, axis=1), 1), [(4, 3, 5)], 1),    # to out_axes=0, at the end
    ("per-example transpose", lambda J, np_: J.vmap(lambda a: a.T + 1.0, 2), [(4, 5, 3)], 1),
    ("grad of a layer w.r.t. its weight", lambda J, np_: J.vmap(
        J.grad(lambda w, x: np_.sum(np_.tanh(w @ x))), (None, 0)), [(5, 4), (3, 4, 2)], 0),
    ("grad of a vector layer", lambda J, np_: J.vmap(
        J.grad(lambda w, x: np_.sum(np_.tanh(x @ w))), (None, 0)), [(4, 5), (3, 4)], 0),
    ("both batched, mixed axes, grad", lambda J, np_: J.vmap(
        J.grad(lambda a, b: np_.sum(np_.sin(a @ b))), (2, 0)), [(4, 5, 3), (3, 5, 6)], 0),
]


@pytest.mark.parametrize("name,build,shapes,transposes", CASES, ids=[c[0] for c in CASES])
def test_vmapped_layouts_match_jax(rng, name, build, shapes, transposes):
    args = [_normal(rng, *s) for s in shapes]
    f, f_ref = build(fnx, jnp), build(jax, jnp_ref)
    ours, theirs = fnx.make_jaxpr(f)(*args), jax.make_jaxpr(f_ref)(*args)
    assert count(ours, "transpose") == transposes <= count(theirs, "transpose"), ours
    assert count(fnx.jit(f).lower(*args).as_text(), "transpose") <= transposes
    np.testing.assert_allclose(np.asarray(f(*args)), np.asarray(f_ref(*args)), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.jit(f)(*args)), np.asarray(f_ref(*args)),
                               rtol=1e-10, atol=1e-12)


def test_vmapped_product_keeps_batch_dimension_in_place(rng):
    a, b = _normal(rng, 4, 3, 5), _normal(rng, 5, 6, 3)
    jaxpr = fnx.make_jaxpr(fnx.vmap(jnp.matmul, (1, 2)))(a, b)
    (dot,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert dot.params["dimension_numbers"] == (((2,), (0,)), ((1,), (2,)))


def test_vmapped_reduction_reduces_the_other_axes(rng):
    x = _normal(rng, 4, 3, 5)
    jaxpr = fnx.make_jaxpr(fnx.vmap(lambda g: jnp.sum(g * g), 1))(x)
    (red,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "reduce_sum"]
    assert red.params["axes"] == (0, 2)


def _program(name, fw):
    prog = workloads.PROGRAMS[name]
    cfg = prog["sizes"]["cpu"]
    state, data = prog["init"](cfg, np.random.default_rng(0))
    return prog["build"](workloads._library(fw), cfg), [state] + data


@pytest.mark.parametrize("name", ["perex", "kmeans"])
def test_workload_programs_match_jax_with_no_more_transposes(name):
    """benchmarks/workloads.py's per-example-gradient and k-means steps, at their --cpu sizes:
    three carried steps give JAX's losses, and the program has no more transposes than
    JAX's."""
    with jax.enable_x64(False), fnx.enable_x64(False):
        step, args = _program(name, "fnx")
        step_ref, args_ref = _program(name, "jax")
        ours = fnx.make_jaxpr(step)(*args)
        assert count(ours, "transpose") <= count(jax.make_jaxpr(step_ref)(*args_ref),
                                                 "transpose")
        assert count(fnx.jit(step).lower(*args).as_text(), "transpose") <= \
            count(ours, "transpose")
        step, step_ref = fnx.jit(step), jax.jit(step_ref)
        for _ in range(3):
            loss, args[0] = step(*args)
            loss_ref, args_ref[0] = step_ref(*args_ref)
            np.testing.assert_allclose(float(loss), float(loss_ref), rtol=2e-5)
        fnx.tree_util.tree_map(
            lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4,
                                                    atol=1e-5), args[0], args_ref[0])


def test_perex_per_example_gradients_are_batched_products():
    """The per-example weight gradients are products with the batch as a batch dimension
    (no loop, no reshape through a 1-row matrix): one batched product per weight, and the
    forward layers are 2-D products."""
    with fnx.enable_x64(False):
        step, args = _program("perex", "fnx")
        jaxpr = fnx.make_jaxpr(step)(*args)
    dots = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "dot_general"]
    batched = [e for e in dots if e.params["dimension_numbers"][1] != ((), ())]
    assert len(batched) == 3
    assert all(e.params["dimension_numbers"][1] == ((0,), (0,)) for e in batched)
    assert all(len(e.invars[0].aval.shape) == 2 for e in dots if e not in batched)
