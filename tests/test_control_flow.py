"""cond, switch, while_loop, fori_loop, scan and map: values against plain Python loops in
float64, derivatives against finite differences, every transformation and their compositions,
type-checked jaxprs, and the errors users get."""
import inspect
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.core.jaxpr import Jaxpr, JaxprTypeError, eval_jaxpr, typecheck_jaxpr
from fnx.core.pytree import tree_flatten
from fnx.lax import ControlFlowTypeError, ReverseModeWhileLoopError
from fnx.test_util import check_grads, primitives_in

HERE = os.path.basename(__file__)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def close(a, b, **kw):
    """Leafwise closeness of pytrees; a list of numbers is one array."""
    if isinstance(b, list):
        b = np.asarray(b)
    for x, y in zip(tree_flatten(a)[0], tree_flatten(b)[0]):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64),
                                   rtol=kw.get("rtol", 1e-10), atol=kw.get("atol", 1e-12))


def staged(f, *args):
    """make_jaxpr of ``f``, type-checked, evaluating to ``f``'s result."""
    closed = fnx.make_jaxpr(f)(*args)
    typecheck_jaxpr(closed.jaxpr)
    close(tuple(eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten(args)[0])),
          tuple(tree_flatten(f(*args))[0]))
    return closed


def transformed_jaxprs_typecheck(f, *args):
    """f, grad, jvp and vmap of f staged and type-checked (f returns one array)."""
    loss = lambda *a: jnp.sum(f(*a) ** 2)  # noqa: E731
    staged(f, *args)
    staged(fnx.grad(loss, tuple(range(len(args)))), *args)
    staged(lambda *a: fnx.jvp(f, a, tuple(np.ones_like(x) for x in args)), *args)
    staged(fnx.vmap(f), *[np.stack([a, a * 0.5]) for a in args])


def assert_points_here(excinfo):
    """The error message ends with the test's own line, where the control flow was called."""
    entry = next(t for t in excinfo.traceback if t.path.name == HERE)
    assert f"{HERE}:{entry.lineno + 1}" in str(excinfo.value), str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# cond and switch


def branchy(x, w):
    return lax.cond(jnp.sum(x) > 0, lambda x: jnp.sin(x) * w, lambda x: jnp.cos(x) + w ** 2, x)


def branchy_ref(x, w):
    return np.sin(x) * w if x.sum() > 0 else np.cos(x) + w ** 2


def test_cond_values_both_branches_and_closures():
    w = rand(3, seed=1)
    for sign in (1, -1):
        x = sign * np.abs(rand(3))
        close(branchy(x, w), branchy_ref(x, w))
    # several operands, pytrees in and out, none at all, an integer predicate
    out = lax.cond(True, lambda a, b: {"s": a + b["k"], "p": (a * 2,)},
                   lambda a, b: {"s": a - b["k"], "p": (a,)}, 1.5, {"k": 2.0})
    assert float(out["s"]) == 3.5 and float(out["p"][0]) == 3.0
    assert float(lax.cond(False, lambda: 1.0, lambda: 2.0)) == 2.0
    assert float(lax.cond(np.int32(3), lambda x: x, lambda x: -x, 4.0)) == 4.0
    assert float(lax.cond(0, lambda x: x, lambda x: -x, 4.0)) == -4.0
    # JAX's older keyword for the one operand
    assert float(lax.cond(False, lambda x: x, lambda x: -x, operand=4.0)) == -4.0
    with pytest.raises(TypeError, match="no operands can be passed positionally"):
        lax.cond(True, lambda x: x, lambda x: -x, 1.0, operand=4.0)
    # a Python scalar returned beside a float64 array takes its dtype, as it would in an op
    out = lax.switch(1, [lambda: np.float64(2.0), lambda: 1.0, lambda: 3])
    assert out.dtype == np.float64 and float(out) == 1.0


def test_switch_values_and_index_clamping():
    fs = [jnp.sin, jnp.cos, lambda x: x * 3.0]
    refs = [np.sin, np.cos, lambda x: x * 3.0]
    x = rand(4)
    for i, want in [(0, 0), (1, 1), (2, 2), (-5, 0), (7, 2)]:
        close(lax.switch(i, fs, x), refs[want](x))
    close(fnx.jit(lambda i, x: lax.switch(i, fs, x))(np.int32(9), x), refs[2](x))
    assert float(lax.switch(0, [lambda: 1.0])) == 1.0


def test_cond_and_switch_grads():
    x, w = rand(3), rand(3, seed=1)
    for sign in (1, -1):
        check_grads(branchy, (sign * np.abs(x), w), order=2)
    for i in range(3):
        check_grads(lambda x, w, i=i: lax.switch(i, [lambda a: jnp.exp(a) * w,
                                                       lambda a: a * a * w,
                                                       lambda a: w], x), (x, w), order=2)


def test_cond_vmap_batched_operands_and_predicates():
    xs, w = rand(5, 3), rand(3, seed=1)
    xs[:2] = np.abs(xs[:2])
    xs[2:] = -np.abs(xs[2:])
    want = np.stack([branchy_ref(x, w) for x in xs])
    close(fnx.vmap(branchy, (0, None))(xs, w), want)                 # batched predicate
    close(fnx.vmap(lambda w: branchy(xs[0], w))(np.stack([w, 2 * w])),  # predicate unbatched
          np.stack([branchy_ref(xs[0], w), branchy_ref(xs[0], 2 * w)]))
    idx = np.array([-1, 0, 1, 2, 5], np.int32)
    fs = [jnp.sin, jnp.cos, lambda x: x * 3.0]
    refs = [np.sin, np.cos, lambda x: x * 3.0]
    out = fnx.vmap(lambda i, x: lax.switch(i, fs, x))(idx, xs)
    close(out, np.stack([refs[min(max(i, 0), 2)](x) for i, x in zip(idx, xs)]))
    # a batched index, unbatched operands
    close(fnx.vmap(lambda i: lax.switch(i, fs, xs[0]))(idx),
          np.stack([refs[min(max(i, 0), 2)](xs[0]) for i in idx]))


def test_cond_compositions():
    xs, w = rand(4, 3), rand(3, seed=1)
    xs[::2] *= -1
    loss = lambda x, w: jnp.sum(branchy(x, w) ** 2)  # noqa: E731
    g = fnx.grad(loss, (0, 1))
    per_row = [g(x, w) for x in xs]
    for variant in (fnx.jit(g), fnx.grad(fnx.jit(loss), (0, 1))):
        for x, want in zip(xs, per_row):
            close(variant(x, w), want)
    close(fnx.vmap(g, (0, None))(xs, w)[0], np.stack([p[0] for p in per_row]))
    close(fnx.jit(fnx.vmap(branchy, (0, None)))(xs, w),
          np.stack([branchy_ref(x, w) for x in xs]))
    close(fnx.jit(branchy)(xs[0], w), branchy_ref(xs[0], w))


def test_typecheck_rejects_a_branch_of_another_type():
    closed = fnx.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(np.float32(1.0))
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "cond")
    other = fnx.make_jaxpr(jnp.sin)(np.ones(2, np.float32)).jaxpr
    bad = eqn.replace(params={"branches": (eqn.params["branches"][0], other)})
    j = closed.jaxpr
    with pytest.raises(JaxprTypeError, match=r"f32\[2\]"):
        typecheck_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars,
                              [bad if e is eqn else e for e in j.eqns]))


def test_cond_jaxprs_print_and_typecheck():
    x, w = rand(3), rand(3, seed=1)
    text = str(fnx.make_jaxpr(branchy)(x, w))
    assert "cond" in text and "branches=(" in text and "sin" in text and "cos" in text
    transformed_jaxprs_typecheck(branchy, x, w)
    assert "cond" in primitives_in(fnx.make_jaxpr(fnx.grad(lambda x: jnp.sum(
        branchy(x, w))))(x).jaxpr)


# ---------------------------------------------------------------------------------------------
# scan


def rnn(w, h0, xs):
    def step(h, x):
        h = jnp.tanh(jnp.matmul(w, h) + x)
        return h, jnp.sum(h * x)
    return lax.scan(step, h0, xs)


def rnn_ref(w, h0, xs):
    h, ys = h0, []
    for x in xs:
        h = np.tanh(w @ h + x)
        ys.append(np.sum(h * x))
    return h, np.array(ys)


def test_scan_values_forward_and_reverse():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(6, 3, seed=2)
    close(rnn(w, h0, xs), rnn_ref(w, h0, xs))
    c, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, xs[:, 0], reverse=True)
    acc, want = 0.0, []
    for x in xs[::-1, 0]:
        want.append(acc * x)
        acc += x
    close(c, acc)
    close(ys, want[::-1])


def test_scan_pytrees_none_xs_and_empty():
    xs = {"a": rand(4, 2), "b": (rand(4, seed=1),)}

    def step(carry, x):
        s, n = carry["s"], carry["n"]
        return {"s": s + x["a"] * x["b"][0], "n": n + 1}, (s.sum(), [x["a"] * 2])
    carry, (tot, (dbl,)) = lax.scan(step, {"s": np.zeros(2), "n": 0}, xs)
    close(carry["s"], (xs["a"] * xs["b"][0][:, None]).sum(0))
    assert int(carry["n"]) == 4
    assert carry["n"].dtype == (np.int64 if fnx.config.enable_x64 else np.int32)   # default int
    close(dbl, xs["a"] * 2)
    close(tot, [0.0] + list(np.cumsum((xs["a"] * xs["b"][0][:, None]).sum(1))[:-1]))
    # xs=None with a length; ys of None
    c, ys = lax.scan(lambda c, _: (c * 2.0, None), np.float64(1.0), None, length=5)
    assert float(c) == 32.0 and ys is None
    c, ys = lax.scan(lambda c, x: (c + x, x), np.float64(1.0), np.zeros((0,)))
    assert float(c) == 1.0 and ys.shape == (0,)


def test_scan_grads():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(4, 3, seed=2)
    check_grads(rnn, (w, h0, xs), order=2)
    check_grads(lambda x0, xs: lax.scan(lambda c, x: (jnp.sin(c) * x, c * x), x0, xs,
                                        reverse=True), (h0, xs), order=2)
    # pytree carries and ys, and a length with xs=None
    check_grads(lambda a, b: lax.scan(lambda c, _: ((c[0] * jnp.cos(c[1]), c[1] + c[0] ** 2),
                                                    {"y": c[0] * c[1]}),
                                      (a, b), None, length=3), (h0, rand(3, seed=4)), order=2)


def test_scan_vmap_batches_carries_that_meet_batched_values():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(2, 5, 3, seed=2)
    ws, h0s = np.stack([w, 2 * w]), np.stack([h0, -h0])
    for in_axes, args, per in [
            ((None, None, 0), (w, h0, xs), lambda i: (w, h0, xs[i])),
            ((None, 0, None), (w, h0s, xs[0]), lambda i: (w, h0s[i], xs[0])),
            ((0, None, None), (ws, h0, xs[0]), lambda i: (ws[i], h0, xs[0])),  # consts only
            ((None, None, 1), (w, h0, xs.transpose(1, 0, 2)), lambda i: (w, h0, xs[i]))]:
        h, ys = fnx.vmap(rnn, in_axes)(*args)
        for i in range(2):
            close((h[i], ys[i]), rnn_ref(*per(i)))


def test_scan_compositions():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(3, 4, 3, seed=2)
    loss = lambda w, x: jnp.sum(rnn(w, h0, x)[1] ** 2)  # noqa: E731
    g = fnx.grad(loss)
    want = [np.asarray(g(w, x)) for x in xs]
    for variant in (fnx.jit(g), fnx.grad(fnx.jit(loss))):
        close(variant(w, xs[0]), want[0])
    close(fnx.vmap(g, (None, 0))(w, xs), np.stack(want))
    close(fnx.jit(fnx.vmap(lambda x: rnn(w, h0, x)))(xs)[1],
          np.stack([rnn_ref(w, h0, x)[1] for x in xs]))
    transformed_jaxprs_typecheck(lambda w, x: rnn(w, h0, x)[1], w, xs[0])
    text = str(fnx.make_jaxpr(rnn)(w, h0, xs[0]))
    assert all(p in text for p in ("scan[", "num_consts=1", "num_carry=1", "length=4",
                                   "reverse=False")), text
    assert "jaxpr={ lambda ; " in text and "tanh" in text


def test_scan_grad_saves_loop_invariant_residuals_once():
    w, h0, xs = rand(3, 3) * 0.5, rand(3, seed=1), rand(7, 3, seed=2)
    jaxpr = fnx.make_jaxpr(fnx.grad(lambda w: jnp.sum(rnn(w, h0, xs)[1])))(w).jaxpr
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert [e.params["reverse"] for e in scans] == [False, True]
    # the forward scan stacks per-step residuals, never the weight matrix itself
    assert all(v.aval.shape != (7, 3, 3) for v in scans[0].outvars)


# ---------------------------------------------------------------------------------------------
# fori_loop, while_loop, map


def poly_loop(x, n=5):
    return lax.fori_loop(1, n, lambda i, c: c * jnp.sin(c) + i * x, x)


def poly_ref(x, n=5):
    c = x
    for i in range(1, n):
        c = c * np.sin(c) + i * x
    return c


def test_fori_loop_static_bounds_is_a_differentiable_scan():
    x = rand(3) * 0.5
    close(poly_loop(x), poly_ref(x))
    assert "scan" in primitives_in(fnx.make_jaxpr(poly_loop)(x).jaxpr)
    check_grads(poly_loop, (x,), order=2)
    close(fnx.vmap(poly_loop)(np.stack([x, -x])), np.stack([poly_ref(x), poly_ref(-x)]))
    # an empty range returns the initial value; Python-scalar carries are promoted
    close(lax.fori_loop(3, 1, lambda i, c: c + 1.0, x), x)
    assert float(lax.fori_loop(0, 4, lambda i, c: c + 0.5, 0)) == 2.0
    out = lax.fori_loop(0, 2, lambda i, c: 1.5, np.float64(0.0))
    assert out.dtype == np.float64 and float(out) == 1.5


def test_fori_loop_traced_bounds_is_a_while_loop():
    x = rand(3) * 0.5
    f = fnx.jit(lambda x, n: poly_loop(x, n))
    close(f(x, 5), poly_ref(x))
    assert "while" in primitives_in(fnx.make_jaxpr(lambda x, n: poly_loop(x, n))(x, 5).jaxpr)
    _, t = fnx.jvp(lambda x: f(x, 4), (x,), (np.ones(3),))
    _, t_ref = fnx.jvp(lambda x: poly_loop(x, 4), (x,), (np.ones(3),))
    close(t, t_ref, rtol=1e-9)


def newton_sqrt(a):
    """sqrt(a) by Newton's method, stopping once converged: trip counts differ per input."""
    def body(c):
        x, k = c
        return 0.5 * (x + a / x), k + 1
    return lax.while_loop(lambda c: jnp.any(jnp.abs(c[0] * c[0] - a) > 1e-12 * a),
                          body, (a, 0))


def newton_ref(a):
    x, k = a, 0
    while np.any(np.abs(x * x - a) > 1e-12 * a):
        x, k = 0.5 * (x + a / x), k + 1
    return x, k


def test_while_loop_values_and_forward_mode():
    for a in (np.float64(2.0), np.float64(50.0)):
        x, k = newton_sqrt(a)
        x_ref, k_ref = newton_ref(a)
        close(x, x_ref)
        assert int(k) == k_ref
    check_grads(lambda a: newton_sqrt(a)[0], (np.float64(3.0),), order=2, modes=["fwd"])
    check_grads(lambda a, b: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * b, c[1] + 1),
                                            (a, 0))[0], (rand(2), rand(2, seed=1)), order=2,
                modes=["fwd"])
    y, f_jvp = fnx.linearize(lambda a: newton_sqrt(a)[0], np.float64(4.0))
    close(y, 2.0)
    close(f_jvp(np.float64(1.0)), 0.25)


def test_while_loop_reverse_mode_names_the_alternatives():
    with pytest.raises(ReverseModeWhileLoopError, match="fori_loop with static") as e:
        fnx.grad(lambda a: newton_sqrt(a)[0])(np.float64(2.0))
    assert "scan" in str(e.value)
    # the backward pass meets the loop where the user wrote it: the message names that line
    lines, first = inspect.getsourcelines(newton_sqrt)
    loop = first + next(i for i, line in enumerate(lines) if "lax.while_loop" in line)
    assert f"{HERE}:{loop} (newton_sqrt)" in str(e.value), str(e.value)
    with pytest.raises(ReverseModeWhileLoopError):
        fnx.grad(fnx.jit(lambda x, n: jnp.sum(poly_loop(x, n))))(rand(3), 4)


def test_while_loop_vmap():
    a = np.array([2.0, 9.0, 1e4, 0.25])
    x, k = fnx.vmap(newton_sqrt)(a)             # batched predicate: lanes finish apart
    refs = [newton_ref(v) for v in a]
    close(x, [r[0] for r in refs])
    np.testing.assert_array_equal(np.asarray(k), [r[1] for r in refs])
    close(fnx.jit(fnx.vmap(newton_sqrt))(a)[0], np.sqrt(a))
    # only the bound is batched: every carry becomes batched, each lane stops on its own
    sums = fnx.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(np.array([3, 0, 6]))
    np.testing.assert_array_equal(np.asarray(sums), [3, 0, 15])
    # predicate unbatched; a carry becomes batched through the body's batched const
    f = lambda b: lax.fori_loop(0, jnp.asarray(3), lambda i, c: (c[0] * b, c[1] + 1.0),  # noqa
                                (np.ones(2), 0.0))
    out = fnx.vmap(f)(np.stack([rand(2), rand(2, seed=1)]))
    close(out[0], np.stack([rand(2) ** 3, rand(2, seed=1) ** 3]))
    close(out[1], [3.0, 3.0])
    _, t = fnx.vmap(lambda a: fnx.jvp(lambda a: newton_sqrt(a)[0], (a,),
                                      (jnp.ones_like(a),)))(a)
    close(t, 0.5 / np.sqrt(a), rtol=1e-8)
    text = str(fnx.make_jaxpr(fnx.vmap(newton_sqrt))(a))
    assert "while[" in text and "cond_jaxpr={" in text and "body_jaxpr={" in text
    assert "reduce_or" in text and "select_n" in text     # run while any lane is unfinished
    typecheck_jaxpr(fnx.make_jaxpr(fnx.vmap(newton_sqrt))(a).jaxpr)
    typecheck_jaxpr(fnx.make_jaxpr(lambda a: fnx.jvp(newton_sqrt, (a,), (1.0,)))(2.0).jaxpr)


def test_map():
    xs = rand(5, 3)
    f = lambda x: jnp.sin(x) * jnp.sum(x)  # noqa: E731
    want = np.stack([np.sin(x) * x.sum() for x in xs])
    close(lax.map(f, xs), want)
    close(lax.map(f, xs, batch_size=2), want)
    close(lax.map(lambda p: p["a"] * p["b"], {"a": xs, "b": xs[:, 0]}), xs * xs[:, :1])
    check_grads(lambda xs: lax.map(f, xs), (xs,), order=2)
    close(fnx.vmap(lambda x: lax.map(f, x))(np.stack([xs, 2 * xs])),
          np.stack([want, np.stack([f(2 * x) for x in xs])]))


# ---------------------------------------------------------------------------------------------
# Errors


def test_branch_outputs_that_differ_name_the_shapes():
    x = rand(3)
    with pytest.raises(ControlFlowTypeError, match=r"(?s)f64\[3\].*f64\[2\]") as e:
        lax.cond(True, lambda x: x, lambda x: x[:2], x)
    assert "(3,)" in str(e.value) and "(2,)" in str(e.value)
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match="int(32|64).*float(32|64)|i(32|64).*f(32|64)") as e:
        lax.switch(1, [lambda: 1, lambda: 1.0])
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match="same structure") as e:
        lax.cond(True, lambda x: (x, x), lambda x: x, x)
    assert_points_here(e)


def test_bad_predicates_and_indices():
    with pytest.raises(ControlFlowTypeError, match=r"scalar.*\(3,\)") as e:
        lax.cond(np.ones(3, bool), lambda: 1.0, lambda: 2.0)
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match="boolean.*c(64|128)") as e:
        lax.cond(1.0 + 0j, lambda: 1.0, lambda: 2.0)
    assert_points_here(e)
    assert lax.cond(0.5, lambda: 1.0, lambda: 2.0) == 1.0     # as JAX: a nonzero float is true
    with pytest.raises(ControlFlowTypeError, match="integer scalar.*f(32|64)") as e:
        lax.switch(1.0, [lambda: 1.0, lambda: 2.0])
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match=r"boolean scalar.*f(32|64)\[\]") as e:
        lax.while_loop(lambda c: c, lambda c: c - 1.0, 3.0)
    assert_points_here(e)


def test_loop_carries_that_change_type_name_the_shapes():
    x = rand(3)
    with pytest.raises(ControlFlowTypeError, match=r"(?s)carry\[1\].*f64\[3\].*f64\[4\]") as e:
        lax.scan(lambda c, x: ((c[0], jnp.concatenate([c[1], x[:1]])), x), (1.0, x), x[None])
    assert "(3,)" in str(e.value) and "(4,)" in str(e.value)
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match="dtypes float64 and int32") as e:
        lax.scan(lambda c, x: (jnp.sum(c).astype(jnp.int32) * jnp.ones(3, jnp.int32), x), x,
                 x)
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError,
                       match=r"(?s)while_loop body.*f64\[3\].*f64\[1\]") as e:
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1][:1]), (0, x))
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError,
                       match=r"(?s)fori_loop body.*val.*f64\[3\].*f64\[\]") as e:
        lax.fori_loop(0, 3, lambda i, c: jnp.sum(c), x)
    assert_points_here(e)
    with pytest.raises(ControlFlowTypeError, match="same structure") as e:
        lax.scan(lambda c, x: ((c, c), x), 0.0, x)
    assert_points_here(e)
    with pytest.raises(ValueError, match="different leading axis sizes: 3, 4") as e:
        lax.scan(lambda c, x: (c, x), 0.0, (x, rand(4)))
    assert_points_here(e)


def test_python_control_flow_on_a_traced_value_inside_a_branch():
    with pytest.raises(fnx.ConcretizationTypeError, match="true_fun of a lax.cond"):
        lax.cond(True, lambda x: x if x > 0 else -x, lambda x: x, 1.0)


def test_vmapped_gradient_of_cond_computes_the_untaken_branch_silently():
    """Batched, cond becomes a select over both branches, and the untaken branch's gradient
    runs on zero residuals (0 / 0 here): like XLA, fnx gives the IEEE result and no NumPy
    warning, and the select discards it."""
    import warnings

    def f(x):
        return lax.cond(x.sum() > 0, lambda y: jnp.linalg.norm(y), lambda y: -jnp.sum(y * y), x)

    x = rand(2, 4, seed=3)
    x[1] = -np.abs(x[1])
    x[0] = np.abs(x[0])
    expected = [x[0] / np.linalg.norm(x[0]), -2 * x[1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(fnx.vmap(fnx.grad(f))(x), expected)
        close(fnx.jit(fnx.vmap(fnx.grad(f)))(x), expected)
        assert np.isneginf(np.asarray(jnp.log(0.0)))
        assert np.isneginf(np.asarray(fnx.jit(jnp.log)(0.0)))
