"""fnx.debug.print inside jit, vmap and grad; the NaN check, eager and jitted, forward and
backward."""
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

HERE = os.path.basename(__file__)


def test_print_inside_jit_vmap_and_grad(capsys):
    @fnx.jit
    def f(x):
        fnx.debug.print("x={} total={t}", x, t=jnp.sum(x))
        return x * 2
    f(jnp.arange(3.0))
    f(jnp.arange(3.0))                  # printed on every call, not only while tracing
    fnx.vmap(lambda x: (fnx.debug.print("row {}", x), x)[1])(jnp.arange(4.0).reshape(2, 2))
    fnx.grad(lambda x: (fnx.debug.print("primal {}", x), x * x)[1])(3.0)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["x=[0. 1. 2.] total=3.0", "x=[0. 1. 2.] total=3.0", "row [0. 1.]",
                     "row [2. 3.]", "primal 3.0"]


def test_print_survives_dead_code_elimination():
    jaxpr = fnx.jit(lambda x: (fnx.debug.print("{}", x), x + 1)[1]).lower(jnp.ones(2)).as_text()
    assert "debug_callback" in jaxpr


@pytest.fixture
def nan_check():
    with fnx.config.option("debug_nans", True):
        yield


def test_nan_check_eager_names_primitive_and_line(nan_check):
    with pytest.raises(fnx.debug.NaNError, match="'log'") as e:
        jnp.log(jnp.array([-1.0, 2.0]))
    assert HERE in str(e.value)


def test_nan_check_in_jit_names_the_traced_line(nan_check):
    def f(x):
        y = x * 3.0
        return jnp.sqrt(y - 9.0)     # NaN for x < 3
    with pytest.raises(fnx.debug.NaNError, match="'sqrt'") as e:
        fnx.jit(f)(jnp.array([1.0, 4.0]))
    assert HERE in str(e.value) and "(f)" in str(e.value)


def test_nan_check_backward(nan_check):
    # d/dx sqrt(x) at 0 is inf, and inf * 0 in the chain rule is a NaN
    with pytest.raises(fnx.debug.NaNError, match="primitive"):
        fnx.grad(lambda x: jnp.sum(jnp.sqrt(x) * 0.0))(jnp.array([0.0, 1.0]))


def test_no_false_alarm(nan_check):
    out = fnx.jit(lambda x: jnp.exp(x) / 2)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(out), np.exp([1.0, 2.0]) / 2)
    # infinities are debug_infs' business, not debug_nans'
    assert np.isinf(np.asarray(jnp.log(jnp.array([0.0])))).all()


def test_inf_check_names_the_primitive_eagerly_and_under_jit():
    def f(x):
        y = x - 1.0
        return jnp.log(y) * 2.0        # -inf at x == 1
    x = jnp.array([1.0, 3.0])
    with fnx.debug_infs(True):
        with pytest.raises(FloatingPointError, match="debug_infs: primitive 'log'") as e:
            f(x)
        assert HERE in str(e.value)
        with pytest.raises(fnx.debug.NaNError, match="'log' produced an inf") as e:
            fnx.jit(f)(x)
        assert HERE in str(e.value) and "(f)" in str(e.value)
        np.testing.assert_allclose(fnx.jit(f)(jnp.array([2.0, 3.0])), 2 * np.log([1.0, 2.0]))
    assert not np.isfinite(np.asarray(fnx.jit(f)(x))).all()     # off again: no check


def test_print_inside_an_unused_loop_still_runs_under_jit(capsys):
    """A scan whose results nobody reads is kept when its body prints (effects inside
    sub-jaxprs count, for DCE and every jaxpr pass)."""
    @fnx.jit
    def f(x):
        def body(c, xi):
            fnx.debug.print("step {}", xi)
            return c + xi, None
        fnx.lax.scan(body, 0.0, x)
        return x * 2.0
    np.testing.assert_allclose(np.asarray(f(jnp.arange(3.0))), [0.0, 2.0, 4.0])
    assert capsys.readouterr().out.split() == ["step", "0.0", "step", "1.0", "step", "2.0"]
