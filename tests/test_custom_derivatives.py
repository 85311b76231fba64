"""custom_jvp, custom_vjp and checkpoint: values, every transformation, and their jaxprs."""
import functools

import numpy as np
import pytest

import fnx
from fnx.test_util import primitives_in
from fnx import lax
from fnx.core.ad import linearize_flat
from fnx.core.custom_derivatives import CustomJVPException, CustomVJPException, \
    CustomVJPForwardModeError
from fnx.core.jaxpr import eval_jaxpr, typecheck_jaxpr
from fnx.core.pytree import tree_flatten


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=kw.get("rtol", 1e-10), atol=kw.get("atol", 1e-12))


def staged(f, *args):
    """Stage ``f`` with make_jaxpr, type-check the jaxpr, check that evaluating it gives
    ``f``'s result, and return it."""
    closed = fnx.make_jaxpr(f)(*args)
    typecheck_jaxpr(closed.jaxpr)
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten(args)[0])
    for a, b in zip(outs, tree_flatten(f(*args))[0]):
        close(a, b)
    return closed


def sum_(x):
    return lax.reduce_sum(x, tuple(range(np.ndim(x))))


# ---------------------------------------------------------------------------------------------
# custom_jvp

@fnx.custom_jvp
def f_sin(x):
    return lax.sin(x)


@f_sin.defjvp
def f_sin_jvp(primals, tangents):
    x, = primals
    t, = tangents
    # deliberately 2*cos so the custom rule is distinguishable from autodiff
    return f_sin(x), lax.mul(t, lax.mul(lax.cos(x), lax.full((), 2.0, t.dtype)))


def test_custom_jvp_value_is_the_function():
    x = rand(4)
    close(f_sin(x), np.sin(x))


def test_custom_jvp_jvp_and_grad_use_the_rule():
    x, t = rand(4), rand(4, seed=1)
    y, y_dot = fnx.jvp(f_sin, (x,), (t,))
    close(y, np.sin(x))
    close(y_dot, 2 * np.cos(x) * t)
    close(fnx.grad(lambda x: sum_(f_sin(x)))(x), 2 * np.cos(x))


def test_custom_jvp_grad_of_grad_differentiates_the_rule():
    x = rand(seed=2)
    close(fnx.grad(fnx.grad(f_sin))(x), -2 * np.sin(x))
    staged(fnx.grad(fnx.grad(f_sin)), x)


def test_custom_jvp_vmap_and_compositions():
    xs = rand(5, 3)
    close(fnx.vmap(f_sin)(xs), np.sin(xs))
    close(fnx.vmap(fnx.grad(lambda x: sum_(f_sin(x))))(xs), 2 * np.cos(xs))
    close(fnx.grad(lambda xs: sum_(fnx.vmap(f_sin)(xs)))(xs), 2 * np.cos(xs))
    # vmap along axis 1, and jvp of vmap
    close(fnx.vmap(f_sin, in_axes=1, out_axes=1)(xs), np.sin(xs))
    t = rand(5, 3, seed=3)
    close(fnx.jvp(fnx.vmap(f_sin), (xs,), (t,))[1], 2 * np.cos(xs) * t)
    staged(fnx.vmap(fnx.grad(lambda x: sum_(f_sin(x)))), xs)
    staged(fnx.grad(lambda xs: sum_(fnx.vmap(f_sin)(xs))), xs)


def test_custom_jvp_make_jaxpr_shows_the_call():
    closed = staged(f_sin, rand(3))
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["custom_jvp_call"]
    assert "custom_jvp_call" in str(closed) and "sin" in str(closed)
    # staged under vmap it stays a custom_jvp_call, and its rule still applies
    closed = staged(fnx.vmap(f_sin), rand(2, 3))
    assert "custom_jvp_call" in primitives_in(closed.jaxpr)
    x = rand(2, 3, seed=4)
    jaxpr_fn = lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x)[0]  # noqa: E731
    close(fnx.grad(lambda x: sum_(jaxpr_fn(x)))(x), 2 * np.cos(x))


@fnx.custom_jvp
def log1pexp(x):
    return lax.log1p(lax.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, x_dot * (1.0 - 1.0 / (1.0 + lax.exp(x)))


@np.errstate(over="ignore", invalid="ignore")
def test_log1pexp_is_numerically_stable():
    x = np.array([-3.0, 0.5, 10.0, 1000.0])   # exp(1000.0) overflows float64
    naive = fnx.vmap(fnx.grad(lambda x: lax.log1p(lax.exp(x))))(x)
    assert np.isnan(np.asarray(naive)[-1])          # autodiff of the formula: inf / inf
    g = fnx.vmap(fnx.grad(log1pexp))(x)
    close(g, 1 / (1 + np.exp(-x)))
    big, one = lax.full((), 1000.0, np.float64), lax.full((), 1.0, np.float64)
    close(fnx.jvp(log1pexp, (big,), (one,))[1], 1.0)
    staged(fnx.grad(log1pexp), np.float64(3.0))


def test_custom_jvp_defjvps_and_two_arguments():
    @fnx.custom_jvp
    def f(x, y):
        return lax.sin(x) * y

    f.defjvps(lambda x_dot, ans, x, y: lax.cos(x) * x_dot * y,
              lambda y_dot, ans, x, y: lax.sin(x) * y_dot)
    x, y = rand(3), rand(3, seed=1)
    gx, gy = fnx.grad(lambda x, y: sum_(f(x, y)), argnums=(0, 1))(x, y)
    close(gx, np.cos(x) * y)
    close(gy, np.sin(x))
    # a None rule means no dependence on that argument
    g = fnx.custom_jvp(lambda x, y: lax.sin(x) * y)
    g.defjvps(lambda x_dot, ans, x, y: lax.cos(x) * x_dot * y, None)
    close(fnx.grad(lambda y: sum_(g(x, y)))(y), np.zeros(3))
    close(fnx.grad(lambda x: sum_(g(x, y)))(x), np.cos(x) * y)


def test_custom_jvp_pytrees_and_kwargs():
    @fnx.custom_jvp
    def f(p, scale=1.0):
        return {"out": lax.mul(p["a"], p["b"]) * scale}

    @f.defjvp
    def f_jvp(primals, tangents):
        p, scale = primals
        t, _ = tangents
        return f(p, scale), {"out": (t["a"] * p["b"] + p["a"] * t["b"]) * scale}

    p = {"a": rand(3), "b": rand(3, seed=1)}
    g = fnx.grad(lambda p: sum_(f(p, scale=3.0)["out"]))(p)
    close(g["a"], 3 * p["b"])
    close(g["b"], 3 * p["a"])


def test_custom_jvp_nondiff_argnums():
    @functools.partial(fnx.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        x, = primals
        t, = tangents
        return app(f, x), lax.mul(t, lax.full((), 7.0, t.dtype))

    x = rand(seed=5)
    close(app(lax.sin, x), np.sin(x))
    close(fnx.grad(lambda x: app(lax.sin, x))(x), 7.0)
    close(fnx.vmap(fnx.grad(lambda x: app(lax.sin, x)))(rand(3)), np.full(3, 7.0))


def test_custom_jvp_nondiff_array_argument_may_be_traced():
    @functools.partial(fnx.custom_jvp, nondiff_argnums=(1,))
    def scaled(x, c):
        return x * c

    @scaled.defjvp
    def scaled_jvp(c, primals, tangents):
        x, = primals
        t, = tangents
        return scaled(x, c), t * c * 10.0

    x, c = rand(3), rand(3, seed=1)
    # c is traced (vmapped, and differentiated though non-differentiable: zero gradient)
    close(fnx.grad(lambda x: sum_(scaled(x, c)))(x), 10 * c)
    close(fnx.grad(lambda c: sum_(scaled(x, c)))(c), np.zeros(3))
    cs = rand(4, 3, seed=2)
    close(fnx.vmap(lambda c: fnx.grad(lambda x: sum_(scaled(x, c)))(x))(cs), 10 * cs)
    close(fnx.grad(lambda x: sum_(fnx.vmap(lambda c: scaled(x, c))(cs)))(x), 10 * cs.sum(0))


def test_custom_jvp_closure_over_constants_and_error_on_closed_over_tangent():
    w = rand(3, seed=7)

    def make(w):
        @fnx.custom_jvp
        def f(x):
            return x * w

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), tangents[0] * w
        return f

    x = rand(3)
    close(fnx.grad(lambda x: sum_(make(w)(x)))(x), w)     # concrete closure: a constant
    closed = staged(lambda x: make(w)(x), x)
    assert closed.jaxpr.eqns[0].params["num_consts"] == 1
    with pytest.raises(CustomJVPException, match="closed-over value"):
        fnx.grad(lambda w: sum_(make(w)(x)))(w)


def test_custom_jvp_applied_to_tangents_is_transposed():
    @fnx.custom_jvp
    def double(x):
        return x * 2.0

    double.defjvp(lambda p, t: (double(p[0]), double(t[0])))

    @fnx.custom_jvp
    def f(x):
        return lax.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), double(t[0]) * lax.cos(p[0])))
    x = rand(3)
    lin = _linearized(f, x)
    assert "custom_jvp_call" in primitives_in(lin.jaxpr)    # linear use, in the linear jaxpr
    close(fnx.grad(lambda x: sum_(f(x)))(x), 2 * np.cos(x))
    close(fnx.grad(fnx.grad(f))(x[0]), -2 * np.sin(x[0]))


def test_custom_jvp_rule_output_errors():
    @fnx.custom_jvp
    def f(x):
        return lax.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), (t[0], t[0])))
    with pytest.raises(TypeError, match="equal container"):
        fnx.jvp(f, (rand(2),), (rand(2),))
    f.defjvp(lambda p, t: f(p[0]))
    with pytest.raises(TypeError, match="pair"):
        fnx.grad(f)(np.float64(1.0))
    g = fnx.custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="No JVP defined"):
        g(1.0)


# ---------------------------------------------------------------------------------------------
# custom_vjp

@fnx.custom_vjp
def v_sin(x):
    return lax.sin(x)


def v_sin_fwd(x):
    return v_sin(x), lax.cos(x)


def v_sin_bwd(cos_x, g):
    return (lax.mul(lax.mul(g, cos_x), lax.full((), 3.0, g.dtype)),)


v_sin.defvjp(v_sin_fwd, v_sin_bwd)


def test_custom_vjp_value_and_grad():
    x = rand(4)
    close(v_sin(x), np.sin(x))
    close(fnx.grad(lambda x: sum_(v_sin(x)))(x), 3 * np.cos(x))
    y, pullback = fnx.vjp(v_sin, x)
    ct = rand(4, seed=1)
    close(pullback(ct)[0], 3 * np.cos(x) * ct)
    close(fnx.jacrev(v_sin)(x), np.diag(3 * np.cos(x)))
    staged(fnx.grad(lambda x: sum_(v_sin(x))), x)


def test_custom_vjp_vmap_compositions():
    xs = rand(5, 3)
    close(fnx.vmap(v_sin)(xs), np.sin(xs))
    close(fnx.vmap(fnx.grad(lambda x: sum_(v_sin(x))))(xs), 3 * np.cos(xs))
    close(fnx.grad(lambda xs: sum_(fnx.vmap(v_sin)(xs)))(xs), 3 * np.cos(xs))
    close(fnx.grad(lambda xs: sum_(fnx.vmap(v_sin, in_axes=1)(xs)))(xs), 3 * np.cos(xs))
    closed = staged(fnx.vmap(v_sin), xs)
    assert "custom_vjp_call" in primitives_in(closed.jaxpr)
    staged(fnx.vmap(fnx.grad(lambda x: sum_(v_sin(x)))), xs)
    staged(fnx.grad(lambda xs: sum_(fnx.vmap(v_sin)(xs))), xs)


def test_custom_vjp_second_order_differentiates_bwd():
    x = rand(seed=3)
    # d/dx [3 cos(x)] through bwd, reverse-over-reverse
    close(fnx.grad(fnx.grad(v_sin))(x), -3 * np.sin(x))
    staged(fnx.grad(fnx.grad(v_sin)), x)


@fnx.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, lax.clamp(lo, g, hi) if hasattr(lax, "clamp")
            else lax.min(lax.max(g, lo), hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def test_gradient_clipping_example():
    lo, hi = np.float64(-0.5), np.float64(0.5)

    def f(x):
        return sum_(lax.mul(lax.sin(clip_gradient(lo, hi, x)), lax.full((), 4.0, x.dtype)))
    x = rand(6, seed=4)
    close(f(x), 4 * np.sin(x).sum())
    close(fnx.grad(f)(x), np.clip(4 * np.cos(x), -0.5, 0.5))
    close(fnx.vmap(fnx.grad(f))(rand(2, 6)), np.clip(4 * np.cos(rand(2, 6)), -0.5, 0.5))
    # None cotangents for lo and hi are zeros
    glo, ghi, gx = fnx.grad(lambda lo, hi, x: sum_(clip_gradient(lo, hi, x)),
                            argnums=(0, 1, 2))(lo, hi, x)
    close(glo, 0.0)
    close(ghi, 0.0)
    close(gx, np.clip(np.ones(6), -0.5, 0.5))


def test_custom_vjp_nondiff_argnums():
    @functools.partial(fnx.custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_fwd(f, x):
        return app(f, x), x

    def app_bwd(f, x, g):
        return (lax.mul(g, lax.full((), 5.0, g.dtype)),)

    app.defvjp(app_fwd, app_bwd)
    x = rand(seed=6)
    close(app(lax.exp, x), np.exp(x))
    close(fnx.grad(lambda x: app(lax.exp, x))(x), 5.0)
    close(fnx.vmap(fnx.grad(lambda x: app(lax.exp, x)))(rand(3)), np.full(3, 5.0))
    with pytest.raises(CustomVJPException, match="non-differentiable"):
        fnx.grad(lambda x: app(x, x))(x)


def test_custom_vjp_pytree_residuals_and_outputs():
    @fnx.custom_vjp
    def f(p):
        return {"s": lax.sin(p[0]), "c": lax.cos(p[1])}

    def fwd(p):
        return f(p), {"cos": lax.cos(p[0]), "sin": lax.sin(p[1])}

    def bwd(res, g):
        return ([g["s"] * res["cos"], -g["c"] * res["sin"]],)

    f.defvjp(fwd, bwd)
    p = [rand(3), rand(3, seed=1)]
    g = fnx.grad(lambda p: sum_(f(p)["s"]) + sum_(f(p)["c"]))(p)
    assert isinstance(g, list)
    close(g[0], np.cos(p[0]))
    close(g[1], -np.sin(p[1]))


def test_custom_vjp_none_covers_a_subtree_and_structure_is_checked():
    @fnx.custom_vjp
    def f(p, x):
        return lax.mul(p["a"], x)

    f.defvjp(lambda p, x: (f(p, x), p["a"]), lambda a, g: ({"a": None, "b": None}, g * a))
    p, x = {"a": rand(3), "b": rand(3, seed=1)}, rand(3, seed=2)
    gp, gx = fnx.grad(lambda p, x: sum_(f(p, x)), argnums=(0, 1))(p, x)
    close(gp["a"], 0.0)
    close(gp["b"], 0.0)
    close(gx, p["a"])
    f.defvjp(lambda p, x: (f(p, x), p["a"]), lambda a, g: (None, g * a))
    close(fnx.grad(lambda p: sum_(f(p, x)))(p)["a"], 0.0)
    f.defvjp(lambda p, x: (f(p, x), p["a"]), lambda a, g: ([g, g], g * a))
    with pytest.raises(TypeError, match="structure of the arguments"):
        fnx.grad(lambda p: sum_(f(p, x)))(p)


def test_rules_closing_over_an_inner_vmap_value_get_a_clear_error():
    x, cs = rand(3), rand(4, 3, seed=1)

    def inner(x, c):
        g = fnx.custom_jvp(lambda x: lax.mul(x, c))
        g.defjvp(lambda p, t: (g(p[0]), lax.mul(t[0], c)))
        return g(x)
    # outside the vmap the closed-over value is fine ...
    close(fnx.vmap(lambda c: fnx.grad(lambda x: sum_(inner(x, c)))(x))(cs), cs)
    # ... inside it, the rule runs where the vmap is not active (pass c as an argument)
    with pytest.raises(CustomJVPException, match="closes over"):
        fnx.grad(lambda x: sum_(fnx.vmap(lambda c: inner(x, c))(cs)))(x)


def test_custom_vjp_forward_mode_is_a_named_error():
    x = rand(3)
    with pytest.raises(CustomVJPForwardModeError, match="forward-mode autodiff"):
        fnx.jvp(v_sin, (x,), (x,))
    with pytest.raises(CustomVJPForwardModeError, match="forward-mode autodiff"):
        fnx.jacfwd(v_sin)(x)
    with pytest.raises(TypeError, match="can't apply forward-mode"):
        fnx.jvp(fnx.vmap(v_sin), (x[None],), (x[None],))


def test_custom_vjp_bwd_output_errors():
    @fnx.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (g,))
    with pytest.raises(TypeError, match="tuple of length"):
        fnx.grad(f)(np.float64(1.0), np.float64(2.0))
    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (g, np.ones(3)))
    with pytest.raises(TypeError, match="shape/dtype"):
        fnx.grad(f)(np.float64(1.0), np.float64(2.0))


def test_custom_vjp_closed_over_differentiated_value_is_an_error():
    def loss(w, x):
        f = fnx.custom_vjp(lambda x: x * w)
        f.defvjp(lambda x: (x * w, None), lambda res, g: (g * w,))
        return sum_(f(x))
    x, w = rand(3), rand(3, seed=1)
    close(fnx.grad(loss, argnums=1)(w, x), w)
    with pytest.raises(CustomVJPException, match="closed-over value"):
        fnx.grad(loss)(w, x)


# ---------------------------------------------------------------------------------------------
# checkpoint / remat

def block(x):
    return lax.sin(lax.sin(lax.mul(x, x)))


def block_loss(x):
    return sum_(block(x))


def test_checkpoint_values_and_gradients_match():
    x = rand(4)
    ck = fnx.checkpoint(block)
    close(ck(x), block(x))
    close(fnx.grad(lambda x: sum_(ck(x)))(x), fnx.grad(block_loss)(x))
    t = rand(4, seed=1)
    close(fnx.jvp(ck, (x,), (t,))[1], fnx.jvp(block, (x,), (t,))[1])
    assert fnx.remat is fnx.checkpoint
    staged(fnx.grad(lambda x: sum_(ck(x))), x)


def test_checkpoint_grad_of_grad_and_hessian():
    x = rand(seed=2)
    ck = fnx.checkpoint(block)
    close(fnx.grad(fnx.grad(ck))(x), fnx.grad(fnx.grad(block))(x))
    xs = rand(3, seed=3)
    close(fnx.hessian(lambda x: sum_(ck(x)))(xs), fnx.hessian(block_loss)(xs))
    staged(fnx.grad(fnx.grad(ck)), x)


def test_checkpoint_under_vmap():
    xs = rand(5, 3)
    ck = fnx.checkpoint(block)
    close(fnx.vmap(ck)(xs), block(xs))
    close(fnx.vmap(fnx.grad(lambda x: sum_(ck(x))))(xs), fnx.vmap(fnx.grad(block_loss))(xs))
    close(fnx.grad(lambda xs: sum_(fnx.vmap(ck)(xs)))(xs), fnx.grad(block_loss)(xs))
    closed = staged(fnx.vmap(fnx.grad(lambda x: sum_(ck(x)))), xs)
    assert "remat" in primitives_in(closed.jaxpr)
    staged(fnx.grad(lambda xs: sum_(fnx.vmap(ck)(xs))), xs)


def _linearized(f, x):
    out, lin = linearize_flat(lambda x: [f(x)], [x])
    typecheck_jaxpr(lin.jaxpr)
    return lin


def test_checkpoint_saves_only_inputs():
    x = rand(4)
    lin = _linearized(fnx.checkpoint(block), x)
    assert [e.primitive.name for e in lin.jaxpr.eqns] == ["remat"]
    # the only residual is the input: the sin/cos intermediates are recomputed
    assert len(lin.consts) == 1 and np.array_equal(np.asarray(lin.consts[0]), x)
    plain = _linearized(block, x)
    assert len(plain.consts) > 1
    ct = rand(4, seed=1)
    close(lin.vjp([ct])[0], plain.vjp([ct])[0])
    close(lin.jvp([ct])[0], plain.jvp([ct])[0])


def test_nested_checkpoint_keeps_primal_outputs_known():
    x = rand(4)
    inner = fnx.checkpoint(block)
    outer = fnx.checkpoint(lambda x: lax.cos(inner(lax.exp(x))))
    plain = lambda x: lax.cos(block(lax.exp(x)))  # noqa: E731
    lin = _linearized(outer, x)
    assert len(lin.consts) == 1                     # still only the input is saved
    y, pullback = fnx.vjp(outer, x)
    assert isinstance(y, fnx.Array)
    ct = rand(4, seed=1)
    close(pullback(ct)[0], fnx.vjp(plain, x)[1](ct)[0])

    def second(f):
        return fnx.grad(lambda x: sum_(fnx.grad(lambda x: sum_(f(x)))(x)))
    close(second(outer)(x), second(plain)(x))
    staged(fnx.grad(lambda x: sum_(outer(x))), x)


def test_checkpoint_in_a_larger_function_and_closures():
    w = rand(3, seed=8)

    def layer(x):
        return lax.tanh(lax.mul(x, w))

    def net(x, ck):
        f = fnx.checkpoint(layer) if ck else layer
        return sum_(lax.exp(f(f(lax.sin(x)))))

    x = rand(3)
    close(fnx.grad(net)(x, True), fnx.grad(net)(x, False))
    close(fnx.grad(lambda w_: sum_(fnx.checkpoint(lambda x: lax.mul(x, w_))(x)))(w), x)
    lin = _linearized(lambda x: net(x, True), x)
    assert primitives_in(lin.jaxpr) >= {"remat"}


def test_checkpoint_policy_and_static_argnums():
    x = rand(3, 3)

    def f(x):
        y = lax.dot(x, x)
        return lax.sin(lax.dot(lax.sin(y), x))

    dots = fnx.checkpoint(f, policy=fnx.checkpoint_policies.dots_saveable)
    nothing = fnx.checkpoint(f, policy=fnx.checkpoint_policies.nothing_saveable)
    lin_d, lin_n = _linearized(dots, x), _linearized(nothing, x)
    assert len(lin_n.consts) == 1                    # only x
    assert len(lin_d.consts) > len(lin_n.consts)     # x and the saved dot products
    g = fnx.grad(lambda x: sum_(f(x)))(x)
    close(fnx.grad(lambda x: sum_(dots(x)))(x), g)
    close(fnx.grad(lambda x: sum_(nothing(x)))(x), g)

    @functools.partial(fnx.checkpoint, static_argnums=(1,))
    def power(x, n):
        for _ in range(n):      # Python control flow on the static argument
            x = lax.sin(x)
        return x
    close(fnx.grad(lambda x: sum_(power(x, 3)))(x[0]),
          fnx.grad(lambda x: sum_(lax.sin(lax.sin(lax.sin(x)))))(x[0]))


def test_checkpoint_make_jaxpr_shows_remat():
    x = rand(3)
    closed = staged(fnx.checkpoint(block), x)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["remat"]
    assert "remat" in str(closed)


def test_checkpoint_of_custom_rules():
    x = rand(4)
    ck = fnx.checkpoint(lambda x: v_sin(f_sin(x)))
    close(fnx.grad(lambda x: sum_(ck(x)))(x), 3 * np.cos(np.sin(x)) * 2 * np.cos(x))
    close(fnx.vmap(fnx.grad(lambda x: sum_(ck(x))))(rand(2, 4)),
          3 * np.cos(np.sin(rand(2, 4))) * 2 * np.cos(rand(2, 4)))
    with pytest.raises(CustomVJPForwardModeError):
        fnx.jvp(ck, (x,), (x,))


# ---------------------------------------------------------------------------------------------
# Numerical checks of rules that are the true derivative, through nested transformations

@fnx.custom_jvp
def true_tanh(x):
    return lax.tanh(x)


@true_tanh.defjvp
def true_tanh_jvp(primals, tangents):
    y = true_tanh(primals[0])
    return y, tangents[0] * (1.0 - y * y)


@pytest.mark.parametrize("wrap", ["plain", "checkpoint", "vmap", "checkpoint_vmap"])
def test_check_grads_through_custom_jvp_and_checkpoint(wrap):
    from fnx.test_util import check_grads
    w = rand(3, seed=9)

    def f(x):
        return lax.mul(true_tanh(lax.sin(x)), w)

    if wrap == "checkpoint":
        g = fnx.checkpoint(f)
    elif wrap == "vmap":
        g = lambda x: fnx.vmap(f, in_axes=1, out_axes=1)(x)  # noqa: E731
    elif wrap == "checkpoint_vmap":
        g = fnx.checkpoint(lambda x: fnx.vmap(fnx.checkpoint(f))(x))
    else:
        g = f
    x = rand(2, 3, seed=10) if "vmap" in wrap else rand(3, seed=10)
    if wrap == "vmap":
        x = x.T
    check_grads(g, (x,), order=2, modes=("fwd", "rev"))


def test_check_grads_reverse_through_custom_vjp():
    from fnx.test_util import check_vjp
    w = rand(3, seed=11)

    @fnx.custom_vjp
    def f(x):
        return lax.mul(lax.sin(x), w)

    f.defvjp(lambda x: (lax.mul(lax.sin(x), w), lax.cos(x)),
             lambda cos_x, g: (lax.mul(lax.mul(g, cos_x), w),))
    g = fnx.checkpoint(lambda x: f(lax.exp(x)))
    x = rand(3, seed=12)
    out, pullback = fnx.vjp(g, x)
    ct = rand(3, seed=13)
    close(pullback(ct)[0], ct * w * np.cos(np.exp(x)) * np.exp(x))
    with pytest.raises(CustomVJPForwardModeError):
        check_vjp(g, (x,))     # the identity check uses jvp, which custom_vjp refuses


@pytest.mark.x32
def test_zero_cotangent_of_a_weak_output_is_weak_as_in_jax():
    # an output nothing reads gets a zero cotangent of its own type, weak for Python numbers
    jax = pytest.importorskip("jax")

    def program(lib, np_):
        @lib.custom_vjp
        def f(x, y):
            return x ** 2, np_.cos(y)

        def fwd(x, y):
            return f(x, y), (x, y)

        def bwd(res, g):
            x, y = res
            return 2 * x * g[0], -np_.sin(y) * g[1]
        f.defvjp(fwd, bwd)
        return lib.grad(lambda x, y: f(x, y)[0], argnums=(0, 1))(1.5, 2.0)

    ours, theirs = program(fnx, fnx.numpy), program(jax, jax.numpy)
    for a, b in zip(ours, theirs):
        assert a.weak_type == b.weak_type and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    t = fnx.grad(lambda x, y: fnx.jvp(lambda u: (u * y, u), (x,), (x,))[1][1])
    assert np.asarray(t(3.0, 2.0)) == 1.0


def test_custom_vjp_reading_a_constant_inside_jit_is_differentiable():
    # the jit's constants are operands of its equation; their tangents are symbolic zeros
    c = rand(3, seed=4)

    @fnx.custom_vjp
    def f(x):
        return fnx.numpy.sum(fnx.numpy.asarray(c) * x)
    f.defvjp(lambda x: (f(x), None), lambda _, g: (g * 2.0 * fnx.numpy.asarray(c),))
    x = rand(3, seed=5)
    close(fnx.grad(fnx.jit(f))(x), 2.0 * c)
    close(fnx.grad(lambda x: fnx.jit(lambda x: 3.0 * f(x))(x))(x), 6.0 * c)
    close(fnx.jacfwd(fnx.jit(lambda x: fnx.numpy.sin(x) * c))(x), np.diag(np.cos(x) * c))


def test_closure_convert_hoists_traced_values_for_custom_vjp():
    @functools.partial(fnx.custom_vjp, nondiff_argnums=(0,))
    def apply(f, x, *consts):
        return f(x, *consts)

    def apply_fwd(f, x, *consts):
        return apply(f, x, *consts), (x, consts)

    def apply_bwd(f, res, g):
        _, pullback = fnx.vjp(f, *((res[0],) + tuple(res[1])))
        return pullback(g)
    apply.defvjp(apply_fwd, apply_bwd)

    def loss(w, x):
        converted, consts = fnx.closure_convert(lambda x: fnx.numpy.sin(w * x), x)
        assert len(consts) == 1          # w, traced by grad
        return fnx.numpy.sum(apply(converted, x, *consts))
    w, x = rand(3, seed=6), rand(3, seed=7)
    close(fnx.grad(loss)(w, x), x * np.cos(w * x))
    close(fnx.vmap(fnx.grad(loss), (0, None))(np.stack([w, 2 * w]), x),
          np.stack([x * np.cos(w * x), x * np.cos(2 * w * x)]))
    converted, consts = fnx.closure_convert(lambda x: x * 2.0, 1.0)
    assert consts == [] and float(converted(3.0)) == 6.0
    with pytest.raises(TypeError, match="traced for arguments"):
        converted((1.0, 2.0))


def _symbolic_zeros_program(lib, seen):
    """sin(x) * y with a rule that skips unperturbed inputs (and says which it saw)."""
    np_ = lib.numpy

    @lib.custom_jvp
    def f(x, y):
        return np_.sin(x) * y

    @functools.partial(f.defjvp, symbolic_zeros=True)
    def f_jvp(primals, tangents):
        (x, y), (dx, dy) = primals, tangents
        zero = lib.custom_derivatives.SymbolicZero
        seen.add((isinstance(dx, zero), isinstance(dy, zero)))
        if isinstance(dx, zero) and isinstance(dy, zero):
            return f(x, y), dx          # a symbolic zero out, too
        out = np_.zeros_like(x)
        if not isinstance(dx, zero):
            out = out + np_.cos(x) * dx * y
        if not isinstance(dy, zero):
            out = out + np_.sin(x) * dy
        return f(x, y), out
    return f


def _same_as_jax_with_the_same_zeros(program, values, rng):
    """Run ``program(lib, seen)`` under fnx and JAX: the same values of ``values(lib, f, x, y)``
    and the same record of which tangents or cotangents the rules saw as symbolic zeros."""
    jax = pytest.importorskip("jax")
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    results = []
    for lib in (fnx, jax):
        seen = set()
        f = program(lib, seen)
        results.append(([np.asarray(v) for v in values(lib, f, x, y)], seen))
    (ours, our_seen), (theirs, their_seen) = results
    assert our_seen == their_seen
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    return our_seen


def test_custom_jvp_symbolic_zeros_as_jax(rng, jax_x64_as_fnx):
    seen = _same_as_jax_with_the_same_zeros(_symbolic_zeros_program, lambda lib, f, x, y: [
        lib.grad(lambda x: f(x, y).sum())(x),
        lib.grad(lambda y: f(x, y).sum())(y),
        lib.jvp(lambda x: f(x, y), (x,), (np.ones(3),))[1],
        lib.vmap(lib.grad(f))(x, y),
        *lib.jit(lib.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1)))(x, y),
        lib.jacfwd(lambda x: f(x, y))(x),
        lib.jvp(lambda x: f(x, y), (x,), (np.zeros(3),))[1]], rng)
    assert (False, True) in seen
    assert repr(fnx.custom_derivatives.zero_from_primal(np.ones(2), symbolic_zeros=True)) == \
        "SymbolicZero"


def _symbolic_zeros_vjp_program(lib, seen):
    """(sin(x) * y, 2x) with rules that report which inputs are perturbed and which output
    cotangents are zero."""
    np_ = lib.numpy
    zero = lib.custom_derivatives.SymbolicZero

    @lib.custom_vjp
    def f(x, y):
        return np_.sin(x) * y, x * 2.0

    def f_fwd(x, y):
        seen.add(("fwd", type(x).__name__, x.perturbed, y.perturbed))
        return f(x.value, y.value), (x.value, y.value)

    def f_bwd(res, cts):
        x, y = res
        seen.add(("bwd",) + tuple(isinstance(c, zero) for c in cts))
        ca, cb = (np_.zeros_like(x) if isinstance(c, zero) else c for c in cts)
        return np_.cos(x) * y * ca + 2.0 * cb, np_.sin(x) * ca
    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    return f


def test_custom_vjp_symbolic_zeros_as_jax(rng, jax_x64_as_fnx):
    seen = _same_as_jax_with_the_same_zeros(_symbolic_zeros_vjp_program, lambda lib, f, x, y: [
        lib.grad(lambda x: f(x, y)[0].sum())(x),
        *lib.grad(lambda x, y: (f(x, y)[0] * f(x, y)[1]).sum(), (0, 1))(x, y),
        lib.grad(lambda y: f(x, y)[0].sum())(y),
        lib.vmap(lib.grad(lambda x, y: f(x, y)[0]))(x, y),
        lib.jit(lib.grad(lambda x, y: f(x, y)[1].sum()))(x, y)], rng)
    assert ("bwd", True, False) in seen
