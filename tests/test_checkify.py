"""fnx.experimental.checkify against JAX's on the CPU: the same programs, checked for the same
kinds of error, give the same messages eagerly, under jit and vmap, and through cond, scan,
while_loop and nested jit."""
import numpy as np
import pytest

import fnx
import fnx.numpy as fjnp
from fnx.experimental import checkify as fck

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax.experimental import checkify as jck  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

SETS = ["user_checks", "nan_checks", "index_checks", "div_checks", "float_checks",
        "automatic_checks", "all_checks"]


def straight(lib, np_, ck):
    def f(x, i):
        ck.check(x[0] > 0, "x[0] must be positive, got {}", x[0])
        y = np_.sin(x) / x
        return x[i] + np_.log(x).sum() + y.sum(), 7 // i
    return f


def branches(lib, np_, ck):
    def f(x, i):
        def small(x):
            ck.check(x < 10, "too big: {v}", v=x)
            return np_.log(x)
        return lib.lax.cond(x[0] > 0, small, lambda x: 1.0 / x, x[0]) + np_.arange(3.0)[i]
    return f


def loops(lib, np_, ck):
    def f(x, i):
        def body(c, y):
            ck.check(y < 4, "element too big: {}", y)
            return c + np_.sqrt(y), c
        total, _ = lib.lax.scan(body, 0.0, x)

        def grow(c):
            ck.check(c[1] < 100, "grew to {}", c[1])
            return c[0] + 1, c[1] * x[1]
        _, v = lib.lax.while_loop(lambda c: c[0] < 3, grow, (0, x[0]))
        return lib.jit(lambda t: t + 1)(total) + v + x[i]
    return f


CASES = [(np.array([1.0, 2.0]), 1), (np.array([-1.0, 2.0]), 1), (np.array([1.0, 2.0]), 5),
         (np.array([1.0, 2.0]), 0), (np.array([0.0, 2.0]), 1), (np.array([3.0, 9.0]), 1),
         (np.array([30.0, 2.0]), -7), (np.array([np.nan, 2.0]), 1)]


@pytest.mark.parametrize("program", [straight, branches, loops])
@pytest.mark.parametrize("errors", SETS)
def test_messages_match_jax(program, errors):
    ours = fnx.jit(fck.checkify(program(fnx, fjnp, fck), errors=getattr(fck, errors)))
    theirs = jax.jit(jck.checkify(program(jax, jjnp, jck), errors=getattr(jck, errors)))
    for x, i in CASES:
        (err, out), (want_err, want_out) = ours(x, i), theirs(x, i)
        assert err.get() == want_err.get(), (x, i)
        if errors != "all_checks" or want_err.get() is not None:
            continue        # an integer division by zero or a clamped index: either library's
        for a, b in zip(fnx.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(want_out)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_eager_and_vmapped_errors_match_jax(rng):
    f, g = straight(fnx, fjnp, fck), straight(jax, jjnp, jck)
    xs = rng.uniform(-1, 1, (6, 2))
    xs[2, 0] = 0.0
    for i in (np.int32(1), np.int32(5)):
        err, _ = fnx.vmap(fck.checkify(f, errors=fck.all_checks), (0, None))(xs, i)
        want, _ = jax.vmap(jck.checkify(g, errors=jck.all_checks), (0, None))(xs, i)
        assert err.get() == want.get()
        x, j = xs[2], jjnp.asarray(i)
        assert fck.checkify(f, errors=fck.all_checks)(fjnp.asarray(x), fjnp.asarray(i))[0].get() \
            == jck.checkify(g, errors=jck.all_checks)(jjnp.asarray(x), j)[0].get()
    # a vmap inside checkify: one error, the first failing example's payload
    err, _ = fck.checkify(fnx.vmap(f, (0, None)))(xs, 1)
    want, _ = jck.checkify(jax.vmap(g, (0, None)))(xs, 1)
    assert (err.get() is None) == (want.get() is None)


def test_error_is_a_pytree_and_throws():
    err, _ = fnx.jit(fck.checkify(lambda x: 1 // x, errors=fck.div_checks))(0)
    assert len(fnx.tree_util.tree_leaves(err)) == 1
    with pytest.raises(fck.JaxRuntimeError, match="division by zero"):
        err.throw()
    assert isinstance(err.get_exception(), fck.JaxRuntimeError)
    assert repr(fck.init_error()) == "Error(None)"
    with pytest.raises(fck.JaxRuntimeError, match="division by zero"):
        fck.check_error(err)
    # under checkify, check_error adds the error to the function's
    outer, _ = fck.checkify(lambda e: fck.check_error(e) or 1.0)(err)
    assert outer.get() == "division by zero"


def test_check_outside_checkify_as_jax():
    with pytest.raises(fck.JaxRuntimeError, match="x is 3"):
        fck.check(fjnp.array(False), "x is {}", fjnp.array(3))
    fck.check(fjnp.array(True), "never")
    with pytest.raises(ValueError, match="not functionalized"):
        fnx.jit(lambda x: fck.check(x > 0, "bad"))(1.0)
    with pytest.raises(TypeError, match="PyTrees of arrays"):
        fck.check(False, "{}", 3)
    assert fnx.jit(lambda x: fck.debug_check(x > 0, "bad") or x)(-1.0) == -1.0
    err, _ = fck.checkify(lambda x: fck.debug_check(x > 0, "bad {}", x))(-1.0)
    assert err.get() == "bad -1.0 (`check` failed)"


def test_gradient_through_the_checked_function(rng):
    x = rng.uniform(0.5, 1, 3)

    def loss(lib, np_, ck):
        return lambda x: ck.checkify(lambda x: np_.sum(np_.log(x) ** 2),
                                     errors=ck.float_checks)(x)[1]
    np.testing.assert_allclose(fnx.grad(loss(fnx, fjnp, fck))(x),
                               jax.grad(loss(jax, jjnp, jck))(x), rtol=1e-12)
