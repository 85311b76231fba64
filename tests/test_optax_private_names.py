"""The names of optax's private modules fnx.optim._src holds beside fnx.optim's: utils'
canonicalize_dtype, linesearch's zoom_linesearch (its init, step and stop functions run to the
same step size as optax's on fresh random problems) and base's schedule types."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.optim._src import base, linesearch, utils

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
from optax._src import base as optax_base  # noqa: E402
from optax._src import linesearch as optax_linesearch  # noqa: E402
from optax._src import utils as optax_utils  # noqa: E402


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", [None, "float64", np.int64, "float32", jnp.bfloat16,
                                   np.complex128, np.uint8, bool])
def test_canonicalize_dtype_matches_optax(x64, dtype):
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        with fnx.enable_x64(x64):
            got = utils.canonicalize_dtype(dtype)
        want = optax_utils.canonicalize_dtype(dtype)
    finally:
        jax.config.update("jax_enable_x64", old)
    assert (got is None and want is None) or np.dtype(got) == np.dtype(want)


def _run(module, value_and_grad, params, updates, **options):
    init, step, keep_going = module.zoom_linesearch(**options)
    value, grad = value_and_grad(params)
    state = init(updates, params, value=value, grad=grad)
    while keep_going(state):
        state = step(state, value_and_grad_fn=value_and_grad, fn_kwargs={})
    return state


@pytest.mark.usefixtures("jax_x64_as_fnx")
@pytest.mark.parametrize("options", [
    {"max_linesearch_steps": 30},
    {"max_linesearch_steps": 30, "max_stepsize": 0.5},
    {"max_linesearch_steps": 30, "approx_dec_rtol": None, "curv_rtol": 0.5},
])
def test_zoom_linesearch_matches_optax(rng, options):
    a = rng.standard_normal((4, 4))
    hess = a @ a.T + 0.5 * np.eye(4)
    shift = rng.standard_normal(4)

    def loss(m, x):
        # a convex quartic: the step size satisfying the Wolfe conditions is not 1
        d = x - shift
        return 0.5 * d @ (hess @ d) + 0.25 * m.sum(d ** 4)
    params = rng.standard_normal(4)
    runs = []
    for module, m, transforms in ((linesearch, jnp, fnx), (optax_linesearch, jax.numpy, jax)):
        f = lambda x, m=m: loss(m, x)  # noqa: E731
        x = m.asarray(params)
        runs.append(_run(module, transforms.value_and_grad(f), x, -transforms.grad(f)(x),
                         **options))
    ours, theirs = runs
    assert type(ours).__name__ == "ZoomLinesearchState"
    assert int(ours.count) == int(theirs.count)
    assert bool(ours.done) == bool(theirs.done) and bool(ours.failed) == bool(theirs.failed)
    np.testing.assert_allclose(float(ours.stepsize), float(theirs.stepsize), rtol=1e-9)
    np.testing.assert_allclose(float(ours.value), float(theirs.value), rtol=1e-9)


def test_schedule_types_and_states_are_named():
    for name in ("ScheduleState", "StatefulSchedule"):
        assert hasattr(optax_base, name) and hasattr(base, name)
    for name in ("ZoomLinesearchState", "BacktrackingLineSearchState"):
        ours, theirs = getattr(linesearch, name), getattr(optax_linesearch, name)
        assert ours._fields == theirs._fields
    assert linesearch.scale_by_zoom_linesearch is fnx.optim.scale_by_zoom_linesearch
