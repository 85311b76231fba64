"""optax's further optimizers and transformations, tree_utils and projections in fnx.optim:
each optimizer runs a few steps on parameters it sees as a quadratic's and is compared with a
float64 NumPy re-implementation of its update rule (written from optax's update rules)."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
import fnx.optim as optim
from fnx.optim import projections, tree_utils as otu

STEPS = 5
CURV = np.array([[1.0, 2.0, 0.5], [3.0, 0.2, 1.5]])


def _grad(p):
    """The quadratic ``0.5 * sum(CURV * p**2) - sum(p)``: its gradient and value."""
    return CURV * p - 1.0, 0.5 * np.sum(CURV * p ** 2) - np.sum(p)


def _run_fnx(opt, p0, with_value=False):
    params = jnp.asarray(p0)
    state = opt.init(params)
    for _ in range(STEPS):
        g, value = _grad(np.asarray(params))
        extra = {"value": jnp.asarray(value)} if with_value else {}
        updates, state = opt.update(jnp.asarray(g), state, params, **extra)
        params = optim.apply_updates(params, updates)
    return np.asarray(params)


def _run_ref(step, p0, state, with_value=False):
    p = p0.copy()
    for k in range(1, STEPS + 1):
        g, value = _grad(p)
        u, state = step(g, state, p, k, value) if with_value else step(g, state, p, k)
        p = p + u
    return p


# float64 references: each returns (update, new state) from (grad, state, params, step)


def adan_ref(lr, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=1e-8, wd=0.0):
    def step(g, s, p, k):
        m, v, n, prev = s
        diff = np.zeros_like(g) if k == 1 else g - prev
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * diff + b2 * v
        n = (1 - b3) * (g + (1 - b2) * diff) ** 2 + b3 * n
        mh, vh, nh = m / (1 - b1 ** k), v / (1 - b2 ** k), n / (1 - b3 ** k)
        u = (mh + (1 - b2) * vh) / (np.sqrt(nh + eps_root) + eps) + wd * p
        return -lr * u, (m, v, n, g)
    return step, lambda p: (0 * p, 0 * p, 0 * p, 0 * p)


def rprop_ref(lr, eta_minus=0.5, eta_plus=1.2, lo=1e-6, hi=50.0):
    def step(g, s, p, k):
        sizes, prev = s
        sign = g * prev
        sizes = np.where(sign == 0, sizes,
                         np.clip(sizes * np.where(sign > 0, eta_plus, eta_minus), lo, hi))
        new_prev = np.where(sign < 0, 0.0, sizes * np.sign(g))
        u = np.where(sign < 0, 0.0, new_prev)
        return -u, (sizes, new_prev)
    return step, lambda p: (np.full_like(p, lr), 0 * p)


def sm3_ref(lr, momentum=0.9, eps=1e-8):
    def step(g, s, p, k):
        (row, col), nu = s
        accum = g ** 2 + np.minimum(row[:, None], col[None, :])
        up = g * np.where(accum > 0, 1 / np.sqrt(accum + eps), 0.0)
        nu = (1 - momentum) * up + momentum * nu
        return -lr * nu, ((accum.max(axis=1), accum.max(axis=0)), nu)
    return step, lambda p: ((np.zeros(p.shape[0]), np.zeros(p.shape[1])), 0 * p)


def novograd_ref(lr, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, wd=0.0):
    def step(g, s, p, k):
        mu, nu = s
        sq = np.sum(g ** 2)
        nu = sq if k == 1 else (1 - b2) * sq + b2 * nu
        u = g / (np.sqrt(nu + eps_root) + eps) + wd * p
        mu = u if k == 1 else b1 * mu + u
        return -lr * mu, (mu, nu)
    return step, lambda p: (0 * p, 0.0)


def optimistic_ref(lr, alpha=1.0, beta=1.0):
    def step(g, prev, p, k):
        prev = g if k == 1 else prev
        return -lr * ((alpha + beta) * g - beta * prev), g
    return step, lambda p: None


def lars_ref(lr, wd=0.0, tc=0.001, momentum=0.9):
    def step(g, t, p, k):
        g = g + wd * p
        pn, gn = np.linalg.norm(p), np.linalg.norm(g)
        ratio = np.where((pn == 0) | (gn == 0), 1.0, tc * pn / gn)
        u = -lr * ratio * g
        t = u + momentum * t
        return t, t
    return step, lambda p: 0 * p


def fromage_ref(lr, min_norm=1e-6):
    mult = 1 / np.sqrt(1 + lr ** 2)

    def step(g, s, p, k):
        pn, gn = max(np.linalg.norm(p), min_norm), max(np.linalg.norm(g), min_norm)
        ratio = pn / gn
        return -lr * mult * ratio * g + (mult - 1) * p, s
    return step, lambda p: None


def polyak_ref(max_lr=1.0, scaling=1.0, f_min=0.0):
    def step(g, s, p, k, value):
        sq = np.sum(g ** 2)
        lr = min((value - f_min) / sq, max_lr)
        return -scaling * lr * g, s
    return step, lambda p: None


CASES = {
    "adan": (lambda: optim.adan(0.05, weight_decay=0.1), adan_ref(0.05, wd=0.1), False),
    "rprop": (lambda: optim.rprop(0.05), rprop_ref(0.05), False),
    "sm3": (lambda: optim.sm3(0.1), sm3_ref(0.1), False),
    "novograd": (lambda: optim.novograd(0.05, weight_decay=0.01),
                 novograd_ref(0.05, wd=0.01), False),
    "optimistic_gradient_descent": (lambda: optim.optimistic_gradient_descent(0.1, 1.0, 0.5),
                                    optimistic_ref(0.1, 1.0, 0.5), False),
    "lars": (lambda: optim.lars(0.5, weight_decay=0.01), lars_ref(0.5, wd=0.01), False),
    "fromage": (lambda: optim.fromage(0.1), fromage_ref(0.1), False),
    "polyak_sgd": (lambda: optim.polyak_sgd(max_learning_rate=0.3, f_min=-3.0),
                   polyak_ref(0.3, f_min=-3.0), True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_optimizer_matches_its_numpy_update_rule(name, rng):
    make, (step, init), with_value = CASES[name]
    p0 = rng.uniform(0.5, 1.5, CURV.shape)
    got = _run_fnx(make(), p0, with_value)
    want = _run_ref(step, p0, init(p0), with_value)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert not np.allclose(got, p0)     # the steps moved the parameters


def test_new_optimizers_run_under_jit_and_keep_optax_state_fields():
    opt = optim.adan(1e-2)
    params = {"w": jnp.ones((2, 3))}
    state = opt.init(params)
    assert type(state[0]).__name__ == "ScaleByAdanState" and state[0]._fields == (
        "m", "v", "n", "g", "t")

    @fnx.jit
    def step(params, state):
        updates, state = opt.update({"w": params["w"] * 2.0}, state, params)
        return optim.apply_updates(params, updates), state
    params, state = step(params, state)
    assert int(state[0].t) == 1 and params["w"].shape == (2, 3)


def test_chain_passes_extra_args_only_to_transformations_that_take_them():
    opt = optim.chain(optim.clip(10.0), optim.polyak_sgd(max_learning_rate=1.0))
    updates, _ = opt.update(jnp.array([2.0]), opt.init(jnp.zeros(1)), value=jnp.asarray(2.0))
    # step = min(2 / 4, 1) = 0.5
    np.testing.assert_allclose(np.asarray(updates), [-1.0])


def test_masked_with_a_prefix_mask_and_scheduled_weight_decay():
    params = {"a": {"x": jnp.ones(2), "y": jnp.ones(1)}, "b": jnp.ones(3)}
    tx = optim.add_decayed_weights(lambda count: 0.1 * (count + 1), mask={"a": True, "b": False})
    state = tx.init(params)
    zeros = fnx.tree_util.tree_map(jnp.zeros_like, params)
    u1, state = tx.update(zeros, state, params)
    u2, state = tx.update(zeros, state, params)
    np.testing.assert_allclose(np.asarray(u1["a"]["x"]), [0.1, 0.1])
    np.testing.assert_allclose(np.asarray(u2["a"]["y"]), [0.2])
    np.testing.assert_allclose(np.asarray(u2["b"]), [0.0, 0.0, 0.0])


def test_conditionally_mask_and_transform_and_apply_every():
    calls = optim.conditionally_mask(optim.scale(3.0), lambda step: step % 2 == 1)
    state = calls.init(jnp.zeros(1))
    outs = []
    for _ in range(4):
        u, state = calls.update(jnp.ones(1), state)
        outs.append(float(u[0]))
    assert outs == [0.0, 3.0, 0.0, 3.0]
    every = optim.apply_every(3)
    state = every.init(jnp.zeros(1))
    outs = []
    for k in range(6):
        u, state = every.update(jnp.array([float(k + 1)]), state)
        outs.append(float(u[0]))
    assert outs == [0.0, 0.0, 6.0, 0.0, 0.0, 15.0]


def test_named_chain_partition_and_selective_transform():
    params = {"a": jnp.ones(2), "b": jnp.ones(2)}
    grads = {"a": jnp.full(2, 2.0), "b": jnp.full(2, 2.0)}
    opt = optim.selective_transform(optim.sgd(0.5), freeze_mask={"a": False, "b": True})
    updates, _ = opt.update(grads, opt.init(params), params)
    np.testing.assert_allclose(np.asarray(updates["a"]), [-1.0, -1.0])
    np.testing.assert_allclose(np.asarray(updates["b"]), [0.0, 0.0])
    chained = optim.named_chain(("clip", optim.clip(1.0)), ("sgd", optim.sgd(0.5)))
    updates, state = chained.update(grads, chained.init(params), params)
    assert list(state) == ["clip", "sgd"]
    np.testing.assert_allclose(np.asarray(updates["a"]), [-0.5, -0.5])


def test_flatten_applies_the_inner_transformation_to_one_vector():
    params = {"w": jnp.ones((2, 2)), "b": jnp.ones(3)}
    opt = optim.flatten(optim.adam(0.1))
    state = opt.init(params)
    assert state[0].mu.shape == (7,)
    updates, _ = opt.update(params, state, params)
    assert updates["w"].shape == (2, 2)
    np.testing.assert_allclose(np.asarray(updates["b"]), -0.1, rtol=1e-6)


# tree_utils against NumPy


def test_tree_math_against_numpy(rng):
    x = {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal(4)}
    y = {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal(4)}
    fx = fnx.tree_util.tree_map(jnp.asarray, x)
    fy = fnx.tree_util.tree_map(jnp.asarray, y)
    flat_x = np.concatenate([x["a"].ravel(), x["b"]])
    flat_y = np.concatenate([y["a"].ravel(), y["b"]])
    np.testing.assert_allclose(otu.tree_vdot(fx, fy), flat_x @ flat_y, rtol=1e-12)
    np.testing.assert_allclose(otu.tree_norm(fx), np.linalg.norm(flat_x), rtol=1e-12)
    np.testing.assert_allclose(otu.tree_norm(fx, ord=1), np.abs(flat_x).sum(), rtol=1e-12)
    np.testing.assert_allclose(otu.tree_norm(fx, ord="inf"), np.abs(flat_x).max())
    np.testing.assert_allclose(otu.tree_sum(fx), flat_x.sum(), rtol=1e-12)
    np.testing.assert_allclose(otu.tree_max(fx), flat_x.max())
    np.testing.assert_allclose(otu.tree_add_scale(fx, 0.3, fy)["b"], x["b"] + 0.3 * y["b"])
    np.testing.assert_allclose(otu.tree_div(fx, fy)["a"], x["a"] / y["a"])
    np.testing.assert_allclose(otu.tree_where(False, fx, fy)["a"], y["a"])
    assert otu.tree_size(fx) == 10
    m = otu.tree_update_moment(fx, fy, 0.9, 2)
    np.testing.assert_allclose(m["a"], 0.1 * x["a"] ** 2 + 0.9 * y["a"], rtol=1e-12)
    inf = otu.tree_update_infinity_moment(fx, fy, 0.9, 1e-3)
    np.testing.assert_allclose(inf["b"], np.maximum(np.abs(x["b"]) + 1e-3, 0.9 * y["b"]))
    corrected = otu.tree_bias_correction(fx, 0.9, jnp.asarray(3))
    np.testing.assert_allclose(corrected["b"], x["b"] / (1 - 0.9 ** 3), rtol=1e-12)


def test_tree_get_and_set_find_state_fields():
    opt = optim.inject_hyperparams(optim.adam)(learning_rate=0.1)
    state = opt.init({"w": jnp.zeros(2)})
    assert float(otu.tree_get(state, "learning_rate")) == pytest.approx(0.1)
    with pytest.raises(KeyError):
        otu.tree_get(state, "count")    # inject_hyperparams' and adam's
    state = otu.tree_set(state, learning_rate=jnp.asarray(0.5))
    assert float(state.hyperparams["learning_rate"]) == 0.5
    assert otu.tree_get(state, optim.ScaleByAdamState).mu["w"].shape == (2,)


# projections against NumPy references


def _simplex_ref(v, scale):
    # the threshold tau with sum(max(v - tau, 0)) = scale, found by bisection
    lo, hi = v.min() - scale, v.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        lo, hi = (tau, hi) if np.maximum(v - tau, 0).sum() > scale else (lo, tau)
    return np.maximum(v - (lo + hi) / 2, 0)


def test_projections_against_numpy(rng):
    v = rng.standard_normal(7)
    np.testing.assert_allclose(projections.projection_simplex(jnp.asarray(v), 2.0),
                               _simplex_ref(v, 2.0), atol=1e-10)
    l1 = projections.projection_l1_ball(jnp.asarray(3 * v), 1.5)
    np.testing.assert_allclose(l1, np.sign(v) * _simplex_ref(np.abs(3 * v), 1.5), atol=1e-10)
    np.testing.assert_allclose(projections.projection_l2_ball(jnp.asarray(v), 0.5),
                               v * 0.5 / max(np.linalg.norm(v), 0.5), rtol=1e-12)
    np.testing.assert_allclose(projections.projection_linf_ball(jnp.asarray(v), 0.3),
                               np.clip(v, -0.3, 0.3))
    a, b = rng.standard_normal(7), 0.7
    h = projections.projection_hyperplane(jnp.asarray(v), jnp.asarray(a), b)
    np.testing.assert_allclose(np.dot(np.asarray(h), a), b, rtol=1e-12)
    hs = projections.projection_halfspace(jnp.asarray(v), jnp.asarray(a), np.dot(v, a) + 1)
    np.testing.assert_allclose(hs, v)   # already inside


def test_projection_simplex_jvp_against_finite_differences(rng):
    v = rng.standard_normal(6)
    t = rng.standard_normal(6)
    _, tangent = fnx.jvp(lambda x: projections.projection_simplex(x), (jnp.asarray(v),),
                         (jnp.asarray(t),))
    h = 1e-6
    fd = (_simplex_ref(v + h * t, 1.0) - _simplex_ref(v - h * t, 1.0)) / (2 * h)
    np.testing.assert_allclose(tangent, fd, atol=1e-6)


def test_new_losses_against_numpy(rng):
    from fnx.optim import losses
    logits = rng.standard_normal((4, 3))
    labels = rng.integers(0, 3, 4)
    onehot = np.eye(3)[labels]
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    p = np.exp(logp)
    np.testing.assert_allclose(losses.poly_loss_cross_entropy(logits, onehot, epsilon=1.5),
                               -(onehot * logp).sum(-1) + 1.5 * (onehot * (1 - p)).sum(-1),
                               rtol=1e-12)
    picked = (logits * onehot).sum(-1)
    np.testing.assert_allclose(losses.multiclass_hinge_loss(logits, labels),
                               (logits + 1 - onehot).max(-1) - picked, rtol=1e-12)
    np.testing.assert_allclose(losses.multiclass_perceptron_loss(logits, labels),
                               logits.max(-1) - picked, rtol=1e-12)
    x, y = rng.standard_normal(5), rng.uniform(0, 1, 5)
    q = 1 / (1 + np.exp(-x))
    ce = -(y * np.log(q) + (1 - y) * np.log(1 - q))
    p_t = q * y + (1 - q) * (1 - y)
    np.testing.assert_allclose(losses.sigmoid_focal_loss(x, y, alpha=0.25, gamma=2.0),
                               (0.25 * y + 0.75 * (1 - y)) * ce * (1 - p_t) ** 2, rtol=1e-10)
    t = rng.uniform(0.1, 1, (2, 3))
    lp = np.log(rng.uniform(0.1, 1, (2, 3)))
    np.testing.assert_allclose(losses.generalized_kl_divergence(lp, t),
                               (t * (np.log(t) - lp)).sum(-1) + (np.exp(lp) - t).sum(-1),
                               rtol=1e-10)


# lookahead, clipping, monitoring and wrapper additions


def test_lookahead_matches_its_numpy_update_rule(rng):
    p0 = rng.uniform(0.5, 1.5, CURV.shape)
    opt = optim.lookahead(optim.sgd(0.1, momentum=0.5), sync_period=3, slow_step_size=0.4,
                          reset_state=True)
    params = optim.LookaheadParams.init_synced(jnp.asarray(p0))
    state = opt.init(params)
    fast, slow, mom = p0.copy(), p0.copy(), np.zeros_like(p0)
    for k in range(7):
        updates, state = opt.update(jnp.asarray(_grad(np.asarray(params.fast))[0]), state,
                                    params)
        params = optim.apply_updates(params, updates)
        mom = _grad(fast)[0] + 0.5 * mom
        fast = fast - 0.1 * mom
        if k % 3 == 2:
            slow = slow + 0.4 * (fast - slow)
            fast, mom = slow.copy(), np.zeros_like(mom)
    np.testing.assert_allclose(params.fast, fast, rtol=1e-12)
    np.testing.assert_allclose(params.slow, slow, rtol=1e-12)
    assert not np.allclose(slow, p0)


def test_adaptive_grad_clip_against_numpy(rng):
    w, g = rng.standard_normal((3, 4)), 3 * rng.standard_normal((3, 4))
    b, gb = rng.standard_normal(4), rng.standard_normal(4)
    tx = optim.adaptive_grad_clip(0.3, eps=1e-3)
    out, _ = tx.update({"w": jnp.asarray(g), "b": jnp.asarray(gb)}, tx.init(None),
                       {"w": jnp.asarray(w), "b": jnp.asarray(b)})

    def ref(g, p, axis):
        gn = np.sqrt((g ** 2).sum(axis=axis, keepdims=True))
        mx = 0.3 * np.maximum(np.sqrt((p ** 2).sum(axis=axis, keepdims=True)), 1e-3)
        return np.where(gn < mx, g, g * mx / np.maximum(gn, 1e-6))
    np.testing.assert_allclose(out["w"], ref(g, w, 0), rtol=1e-12)
    np.testing.assert_allclose(out["b"], ref(gb, b, None), rtol=1e-12)
    assert not np.allclose(out["w"], g)
    with pytest.raises(ValueError, match="rank 1 to 5"):
        optim.unitwise_norm(jnp.zeros((1, 2, 1, 2, 1, 2)))


def test_per_example_clipping_against_numpy(rng):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2, 2))
    norms = np.sqrt((a ** 2).sum(1) + (b ** 2).sum((1, 2)))
    mult = np.minimum(1.2 / norms, 1.0)
    (sa, sb), n = optim.per_example_global_norm_clip([jnp.asarray(a), jnp.asarray(b)], 1.2)
    np.testing.assert_allclose(sa, mult @ a, rtol=1e-12)
    np.testing.assert_allclose(sb, np.tensordot(mult, b, 1), rtol=1e-12)
    assert int(n) == int((mult < 1).sum())
    (la, lb), (na, nb) = optim.per_example_layer_norm_clip([jnp.asarray(a), jnp.asarray(b)], 1.2,
                                                           uniform=False)
    ma = np.minimum(1.2 * np.sqrt(3 / 7) / np.sqrt((a ** 2).sum(1)), 1.0)
    mb = np.minimum(1.2 * np.sqrt(4 / 7) / np.sqrt((b ** 2).sum((1, 2))), 1.0)
    np.testing.assert_allclose(la, ma @ a, rtol=1e-12)
    np.testing.assert_allclose(lb, np.tensordot(mb, b, 1), rtol=1e-12)
    assert (int(na), int(nb)) == (int((ma < 1).sum()), int((mb < 1).sum()))
    with pytest.raises(ValueError, match="batch"):
        optim.per_example_global_norm_clip([jnp.ones((2, 3)), jnp.ones((3,))], 1.0)


def test_scale_gradient_scales_only_the_backward_pass():
    f = lambda x: jnp.sum(optim.scale_gradient({"a": x}, 0.25)["a"] ** 2)  # noqa: E731
    x = jnp.array([1.0, -2.0])
    np.testing.assert_allclose(fnx.grad(f)(x), [0.5, -1.0])
    np.testing.assert_allclose(f(x), 5.0)
    np.testing.assert_allclose(fnx.grad(lambda x: optim.scale_gradient(x, 0.0) * x)(3.0), 3.0)


def test_monitor_snapshot_and_measure_with_ema():
    opt = optim.chain(
        optim.snapshot("raw", optim.global_norm),
        optim.monitor({"norm": optim.global_norm,
                       "ema": optim.measure_with_ema(optim.global_norm, 0.5)}),
        optim.scale(2.0))
    state = opt.init(jnp.zeros(2))
    norms = [5.0, 1.0]
    for g in (jnp.array([3.0, 4.0]), jnp.array([0.0, 1.0])):
        updates, state = opt.update(g, state)
    np.testing.assert_allclose(updates, [0.0, 2.0])
    assert float(otu.tree_get(state, "raw")) == 1.0
    assert float(state[1].measurements["norm"]) == 1.0
    # the debiased average: (0.5 * 0.5 * 5 + 0.5 * 1) / (1 - 0.25)
    np.testing.assert_allclose(state[1].measurements["ema"], (0.25 * norms[0] + 0.5 * norms[1])
                               / 0.75, rtol=1e-12)


class _PlateauLR:
    """A stateful schedule halving the rate whenever the loss passed to update rises."""

    def init(self):
        return (jnp.asarray(1.0), jnp.asarray(np.inf))

    def update(self, state, value):
        lr, best = state
        return (jnp.where(value > best, lr / 2, lr), jnp.minimum(best, value))

    def __call__(self, state, **extra_args):
        return state[0]


def test_inject_hyperparams_takes_stateful_schedules_and_extra_args():
    opt = optim.inject_hyperparams(optim.sgd)(learning_rate=_PlateauLR())
    state = opt.init(jnp.zeros(1))
    lrs = []
    for value in [3.0, 2.0, 4.0, 5.0]:
        updates, state = opt.update(jnp.ones(1), state, value=jnp.asarray(value))
        lrs.append(-float(updates[0]))
    assert lrs == [1.0, 1.0, 1.0, 0.5]
    assert type(state).__name__ == "InjectStatefulHyperparamsState"
    wrapped = optim.inject_stateful_hyperparams(optim.sgd)(learning_rate=lambda c: 0.1 * (c + 1))
    state = wrapped.init(jnp.zeros(1))
    _, state = wrapped.update(jnp.ones(1), state)
    updates, state = wrapped.update(jnp.ones(1), state)
    np.testing.assert_allclose(updates, [-0.2])
    assert int(state.hyperparams_states["learning_rate"].count) == 2


def test_multisteps_skips_non_finite_steps_and_reports_skip_state():
    opt = optim.MultiSteps(optim.sgd(1.0), every_k_schedule=2,
                           should_skip_update_fn=optim.skip_not_finite)
    state = opt.init(jnp.zeros(2))
    assert set(state.skip_state) == {"should_skip", "num_not_finite"}
    outs = []
    for g in ([1.0, 2.0], [np.nan, 0.0], [3.0, 4.0], [5.0, 6.0]):
        updates, state = opt.update(jnp.asarray(g), state)
        outs.append(np.asarray(updates))
    np.testing.assert_allclose(outs[2], [-2.0, -3.0])   # the NaN step never happened
    assert not outs[1].any() and not outs[3].any()
    assert int(state.gradient_step) == 1 and int(state.mini_step) == 1
    summed = optim.MultiSteps(optim.sgd(1.0), 2, use_grad_mean=False)
    state = summed.init(jnp.zeros(1))
    _, state = summed.update(jnp.ones(1), state)
    updates, state = summed.update(jnp.ones(1), state)
    np.testing.assert_allclose(updates, [-2.0])
    assert bool(summed.has_updated(state))


# L-BFGS and line searches against optax (JAX on CPU, float64) as the oracle


def _optax():
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    optax = pytest.importorskip("optax")
    import jax
    return optax, jax


def _rosenbrock(np_like):
    def f(x, scale=10.0):
        return np_like.sum(scale * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return f


def _solve(lib, grad_lib, make, x0, steps, kwargs):
    f = _rosenbrock(grad_lib.numpy)
    opt = make(lib)

    @grad_lib.jit
    def step(x, state):
        value, grad = grad_lib.value_and_grad(f)(x, **kwargs)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f, **kwargs)
        return lib.apply_updates(x, updates), state
    x, state = x0, opt.init(x0)
    trace = []
    for _ in range(steps):
        x, state = step(x, state)
        trace.append(np.asarray(x))
    return np.array(trace), state


@pytest.mark.parametrize("name", ["lbfgs", "backtracking"])
def test_lbfgs_and_line_searches_match_optax(name, rng, jax_x64_as_fnx):
    optax, jax = _optax()
    makers = {
        # a small memory that wraps around, a learning rate and a capped zoom search
        "lbfgs": lambda o: o.lbfgs(0.5, memory_size=2, linesearch=o.scale_by_zoom_linesearch(
            10, max_learning_rate=3.0)),
        "backtracking": lambda o: o.chain(o.sgd(1.0), o.scale_by_backtracking_linesearch(
            15, store_grad=True)),
    }
    x0 = rng.uniform(-0.5, 0.5, 4)
    kwargs = {"scale": 5.0}
    got, state = _solve(optim, fnx, makers[name], jnp.asarray(x0), 8, kwargs)
    want, theirs = _solve(optax, jax, makers[name], jax.numpy.asarray(x0), 8, kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert not np.allclose(got[-1], x0)
    assert float(otu.tree_get(state, "value")) == pytest.approx(
        float(optax.tree_utils.tree_get(theirs, "value")), rel=1e-9)


def test_lbfgs_runs_under_jit_reusing_the_line_search_gradient():
    f = _rosenbrock(jnp)
    calls = []

    def counted(x):
        calls.append(1)
        return f(x)
    opt = optim.lbfgs()
    value_and_grad = optim.value_and_grad_from_state(counted)

    @fnx.jit
    def step(x, state):
        value, grad = value_and_grad(x, state=state)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=counted)
        return optim.apply_updates(x, updates), state
    x = jnp.zeros(3)
    state = opt.init(x)
    for _ in range(25):
        x, state = step(x, state)
    np.testing.assert_allclose(np.asarray(x), np.ones(3), atol=1e-6)
    traced = len(calls)
    x, state = step(x, state)
    assert len(calls) == traced         # traced once: the loop is a lax.while_loop
    with pytest.raises(TypeError, match="value_fn does not take"):
        opt.update(x, state, x, value=f(x), grad=x, value_fn=f, batch=1)


# optax.contrib against optax (JAX on CPU, float64) as the oracle

W_CURV = np.array([[1.0, 2.0, 0.5, 1.5], [3.0, 0.2, 1.5, 0.7], [0.4, 1.1, 2.5, 0.9]])
B_CURV = np.array([0.5, 1.0, 2.0, 0.3])


def _contrib_problem(tm, jnp_like):
    def loss(p):
        return (0.5 * jnp_like.sum(W_CURV * p["w"] ** 2) - jnp_like.sum(p["w"])
                + 0.5 * jnp_like.sum(B_CURV * p["b"] ** 2) - jnp_like.sum(p["b"]))

    def exact_diag_hessian(lib):
        return lib.stateless(lambda u, p: {"w": tm(lambda x: 0 * x + W_CURV, p["w"]),
                                           "b": tm(lambda x: 0 * x + B_CURV, p["b"])})
    return loss, exact_diag_hessian


CONTRIB = {   # name: (factory of (lib, exact_diag_hessian_factory), extra args)
    "reduce_on_plateau": (lambda o, h: o.chain(o.sgd(0.1), o.contrib.reduce_on_plateau(
        factor=0.5, patience=1, rtol=0.5, cooldown=1, accumulation_size=2)), ("value",)),
    "schedule_free_adamw": (lambda o, h: o.contrib.schedule_free_adamw(
        0.1, warmup_steps=3, weight_decay=0.01), ()),
    "schedule_free_sgd": (lambda o, h: o.contrib.schedule_free_sgd(0.1, weight_decay=0.01), ()),
    "muon": (lambda o, h: o.contrib.muon(0.05, weight_decay=0.01), ()),
    "muon_aol_dims": (lambda o, h: o.contrib.muon(
        0.05, ns_coeffs="dion", preconditioning="aol", adaptive=True, consistent_rms=0.2,
        muon_weight_dimension_numbers={"w": o.contrib.MuonDimensionNumbers(1, 0), "b": None}),
        ()),
    "prodigy": (lambda o, h: o.contrib.prodigy(1.0, weight_decay=0.01), ()),
    "dadapt_adamw": (lambda o, h: o.contrib.dadapt_adamw(1.0, weight_decay=0.01), ()),
    "mechanize": (lambda o, h: o.contrib.mechanize(o.adam(0.1), s_init=1e-2), ()),
    "sam": (lambda o, h: o.contrib.sam(o.sgd(0.1), o.chain(o.contrib.normalize(), o.sgd(0.05)),
                                       sync_period=3), ()),
    "cocob": (lambda o, h: o.contrib.cocob(weight_decay=0.01), ()),
    "dog": (lambda o, h: o.contrib.dog(init_step=("learning_rate", 0.1)), ()),
    "dowg": (lambda o, h: o.contrib.dowg(weight_decay=0.01), ()),
    "momo": (lambda o, h: o.contrib.momo(0.5, weight_decay=0.01, adapt_lower_bound=True),
             ("value",)),
    "momo_adam": (lambda o, h: o.contrib.momo_adam(0.1, lower_bound=-5.0,
                                                   adapt_lower_bound=True), ("value",)),
    "ademamix": (lambda o, h: o.contrib.ademamix(0.05, b3=0.99, alpha=lambda c: 0.5 * c,
                                                 weight_decay=0.01), ()),
    "simplified_ademamix": (lambda o, h: o.contrib.simplified_ademamix(0.05, alpha=2.0), ()),
    "sophia": (lambda o, h: o.contrib.sophia(0.05, update_interval=2,
                                             hessian_diagonal_fn=h(o)), ()),
    "adopt": (lambda o, h: o.contrib.adopt(0.05, b2=0.9), ()),
    "adopt_nesterov_unclipped": (lambda o, h: o.contrib.adopt(
        0.05, nesterov=True, use_clipping=False), ()),
    "acprop": (lambda o, h: o.contrib.acprop(0.05, weight_decay=0.01), ()),
    "madgrad": (lambda o, h: o.contrib.madgrad(0.1, weight_decay=0.01), ()),
}


def _run_contrib(lib, grad_lib, make, p0, extras, steps=6):
    loss, exact = _contrib_problem(grad_lib.tree_util.tree_map, grad_lib.numpy)
    opt = make(lib, exact)

    @grad_lib.jit
    def step(params, state):
        value, grads = grad_lib.value_and_grad(loss)(params)
        kwargs = {"value": value} if "value" in extras else {}
        updates, state = opt.update(grads, state, params, **kwargs)
        return lib.apply_updates(params, updates), state
    params = grad_lib.tree_util.tree_map(grad_lib.numpy.asarray, p0)
    state = opt.init(params)
    for _ in range(steps):
        params, state = step(params, state)
    return {k: np.asarray(v) for k, v in params.items()}


@pytest.mark.parametrize("name", list(CONTRIB))
def test_contrib_matches_optax(name, rng, jax_x64_as_fnx):
    optax, jax = _optax()
    import optax.contrib  # noqa: F401
    make, extras = CONTRIB[name]
    p0 = {"w": rng.uniform(0.5, 1.5, W_CURV.shape), "b": rng.uniform(-1.0, 1.0, B_CURV.shape)}
    got = _run_contrib(optim, fnx, make, p0, extras)
    want = _run_contrib(optax, jax, make, p0, extras)
    for k in p0:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-12, err_msg=k)
    assert not np.allclose(got["w"], p0["w"])


# more losses against NumPy


def _ctc_ref(logits, labels, blank=0):
    """-log p(labels | logits) by the textbook forward recursion over the label sequence with
    blanks interleaved (Graves et al., 2006), in float64 probabilities."""
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ext = [blank]
    for c in labels:
        ext += [c, blank]
    alpha = np.zeros(len(ext))
    alpha[0] = p[0, blank]
    if len(ext) > 1:
        alpha[1] = p[0, ext[1]]
    for t in range(1, len(p)):
        new = np.zeros_like(alpha)
        for s in range(len(ext)):
            a = alpha[s] + (alpha[s - 1] if s >= 1 else 0.0)
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                a += alpha[s - 2]
            new[s] = a * p[t, ext[s]]
        alpha = new
    return -np.log(alpha[-1] + (alpha[-2] if len(ext) > 1 else 0.0))


def test_ctc_loss_against_a_numpy_forward_recursion(rng):
    from fnx.optim import losses
    batch, frames, classes, max_len = 3, 7, 4, 3
    logits = rng.standard_normal((batch, frames, classes))
    labels = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])       # repeats need a blank between
    label_lens, frame_lens = [3, 2, 1], [7, 5, 6]
    label_pad = (np.arange(max_len)[None] >= np.array(label_lens)[:, None]).astype(float)
    logit_pad = (np.arange(frames)[None] >= np.array(frame_lens)[:, None]).astype(float)
    got = losses.ctc_loss(jnp.asarray(logits), jnp.asarray(logit_pad), jnp.asarray(labels),
                          jnp.asarray(label_pad))
    want = [_ctc_ref(logits[b, :frame_lens[b]], labels[b, :label_lens[b]]) for b in range(batch)]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    loss, phi, emit = losses.ctc_loss_with_forward_probs(
        jnp.asarray(logits), jnp.asarray(logit_pad), jnp.asarray(labels), jnp.asarray(label_pad),
        blank_id=3)
    assert phi.shape == (frames, batch, max_len + 1) and emit.shape == (frames, batch, max_len)
    np.testing.assert_allclose(loss[0], _ctc_ref(logits[0], labels[0], blank=3), rtol=1e-9)
    g = fnx.grad(lambda x: losses.ctc_loss(x, jnp.asarray(logit_pad), jnp.asarray(labels),
                                           jnp.asarray(label_pad)).sum())(jnp.asarray(logits))
    h, e = 1e-6, np.zeros_like(logits)
    e[1, 2, 3] = h
    fd = (_ctc_ref(logits[1, :5] + e[1, :5], labels[1, :2])
          - _ctc_ref(logits[1, :5] - e[1, :5], labels[1, :2])) / (2 * h)
    np.testing.assert_allclose(g[1, 2, 3], fd, rtol=1e-5)
    assert float(np.abs(g[1, 5:]).max()) == 0.0            # padded frames get no gradient


def test_metric_and_ranking_losses_against_numpy(rng):
    from fnx.optim import losses
    emb = rng.standard_normal((6, 3))
    labels = np.array([0, 0, 1, 1, 2, 2])
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    sim = unit @ unit.T / 0.5
    terms = [-np.log(np.exp(sim[i, j]) / (np.exp(sim[i, j])
                                          + np.exp(sim[i][labels != labels[i]]).sum()))
             for i in range(6) for j in range(6) if i != j and labels[i] == labels[j]]
    np.testing.assert_allclose(losses.ntxent(jnp.asarray(emb), jnp.asarray(labels), 0.5),
                               np.mean(terms), rtol=1e-9)
    a, p, n = (rng.standard_normal((4, 3)) for _ in range(3))
    want = np.maximum(np.sqrt(((a - p) ** 2).sum(-1) + 1e-6)
                      - np.sqrt(((a - n) ** 2).sum(-1) + 1e-6) + 0.7, 0)
    np.testing.assert_allclose(losses.triplet_margin_loss(a, p, n, margin=0.7), want, rtol=1e-9)
    logits, rel = rng.standard_normal((3, 5)), rng.integers(0, 3, (3, 5)).astype(float)
    where = rng.uniform(size=(3, 5)) < 0.7
    where[:, 0] = True
    lsm = np.where(where, logits, -np.inf)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    per_list = -np.where(where, rel * lsm, 0.0).sum(-1)
    np.testing.assert_allclose(losses.ranking_softmax_loss(logits, rel, where=where,
                                                           reduce_fn=None), per_list, rtol=1e-9)
    np.testing.assert_allclose(losses.ranking_softmax_loss(logits, rel, where=where),
                               per_list.mean(), rtol=1e-9)


def test_dice_sparsemax_and_safe_cross_entropy_against_numpy(rng):
    from fnx.optim import losses
    pred, target = rng.standard_normal((2, 4, 5, 3)), np.eye(3)[rng.integers(0, 3, (2, 4, 5))]
    probs = np.exp(pred) / np.exp(pred).sum(-1, keepdims=True)
    inter, ps, ts = ((probs * target).sum((1, 2)), probs.sum((1, 2)), target.sum((1, 2)))
    dice = 1 - (inter + 1.0) / (inter + 0.3 * (ps - inter) + 0.7 * (ts - inter) + 1.0)
    np.testing.assert_allclose(losses.dice_loss(pred, target, alpha=0.3, beta=0.7),
                               dice.mean(-1), rtol=1e-9)
    np.testing.assert_allclose(losses.dice_loss(pred, target, alpha=0.3, beta=0.7,
                                                ignore_background=True, reduction="sum"),
                               dice[:, 1:].sum(-1), rtol=1e-9)
    x, y = 2 * rng.standard_normal(20), rng.integers(0, 2, 20)
    z = np.where(y == 1, -x, x)
    sparse_plus = np.where(z <= -1, 0.0, np.where(z >= 1, z, (z + 1) ** 2 / 4))
    np.testing.assert_allclose(losses.sparsemax_loss(x, y), sparse_plus, rtol=1e-12)
    logits = rng.standard_normal((3, 4))
    logits[:, 2] = -np.inf
    lab = rng.uniform(size=(3, 4))
    lab[:, 2] = 0.0
    lsm = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -np.where(lab != 0, lab * np.where(lab != 0, lsm, 0.0), 0.0).sum(-1)
    got = losses.safe_softmax_cross_entropy(jnp.asarray(logits), jnp.asarray(lab))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = fnx.grad(lambda x: losses.safe_softmax_cross_entropy(x, jnp.asarray(lab)).sum())(
        jnp.asarray(logits))
    soft = np.exp(lsm)
    np.testing.assert_allclose(g, soft * lab.sum(-1, keepdims=True) - lab, atol=1e-12)


# optax's remaining names (second_order, assignment, perturbations, tree_map_params, its linear
# algebra, the last contrib optimizers and losses) against optax on JAX CPU at float64


def _optax_module(name):
    optax, jax = _optax()
    import importlib
    return importlib.import_module(f"optax.{name}"), jax


def _close(got, want, rtol=1e-9, atol=1e-12, msg=""):
    import jax
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol,
                                   err_msg=msg)


def test_every_optax_name_is_in_the_matching_fnx_optim_module():
    import importlib
    import types
    _optax()
    missing = {}
    for sub in ("", ".contrib", ".losses", ".schedules", ".transforms", ".tree_utils",
                ".projections", ".second_order", ".assignment", ".perturbations"):
        theirs = importlib.import_module("optax" + sub)
        ours = importlib.import_module("fnx.optim" + sub)
        names = [n for n in dir(theirs) if not n.startswith("_")
                 and (not sub or not isinstance(getattr(theirs, n), types.ModuleType))]
        missing[sub] = [n for n in names if not hasattr(ours, n)]
    # optax.experimental (aggregating, its newest gradient-accumulation API) is not here
    assert missing.pop("") == ["experimental"]
    assert not any(missing.values()), missing


def _second_order_problem(rng, np_like):
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))

    def loss(p, x, y):
        return np_like.sum(np_like.tanh(x @ p["w"] + p["b"]) ** 2 * y + p["b"] ** 4)
    return params, x, y, loss


def test_second_order_matches_optax(rng, jax_x64_as_fnx):
    from fnx.optim import second_order
    theirs, jax = _optax_module("second_order")
    params, x, y, _ = _second_order_problem(rng, np)
    ours_loss = _second_order_problem(np.random.default_rng(0), jnp)[3]
    their_loss = _second_order_problem(np.random.default_rng(0), jax.numpy)[3]
    v = rng.standard_normal(8)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # the oracle jitted: JAX compiles every eager operation on its own
        want = jax.jit(lambda v, p: (theirs.hvp(their_loss, v, p, x, y),
                                     theirs.hessian_diag(their_loss, p, x, y),
                                     theirs.fisher_diag(their_loss, p, x, y)))(v, params)
        diag = second_order.hessian_diag(ours_loss, params, x, y)
        _close((second_order.hvp(ours_loss, jnp.asarray(v), params, x, y), diag,
                second_order.fisher_diag(ours_loss, params, x, y)), want)
    assert np.asarray(diag).shape == (8,) and np.abs(np.asarray(diag)).max() > 0


def _brute_force_assignment_cost(cost):
    import itertools
    n, m = cost.shape
    if n <= m:
        return min(cost[np.arange(n), list(c)].sum() for c in itertools.permutations(range(m), n))
    return _brute_force_assignment_cost(cost.T)


@pytest.mark.parametrize("name", ["hungarian_algorithm", "base_hungarian_algorithm"])
def test_assignment_matches_optax_under_jit_and_vmap(name, rng, jax_x64_as_fnx):
    from fnx.optim import assignment
    theirs, jax = _optax_module("assignment")
    ours, ref = getattr(assignment, name), jax.jit(getattr(theirs, name))
    for shape in ((3, 5), (5, 2)):
        cost = rng.standard_normal(shape)
        i, j = fnx.jit(ours)(jnp.asarray(cost))
        ri, rj = ref(jax.numpy.asarray(cost))
        np.testing.assert_array_equal(np.asarray(i), np.asarray(ri), err_msg=f"{shape}")
        np.testing.assert_array_equal(np.asarray(j), np.asarray(rj), err_msg=f"{shape}")
        np.testing.assert_allclose(cost[np.asarray(i), np.asarray(j)].sum(),
                                   _brute_force_assignment_cost(cost), rtol=1e-12)
    costs = rng.integers(0, 4, (3, 4, 4)).astype(float)        # ties
    _close(fnx.vmap(ours)(jnp.asarray(costs)), jax.vmap(ref)(jax.numpy.asarray(costs)))
    assert [a.shape for a in ours(jnp.zeros((0, 3)))] == [(0,), (0,)]


@pytest.mark.parametrize("noise,use_baseline", [("Gumbel", True), ("Normal", False)])
def test_perturbed_fun_matches_optax_value_and_gradient(noise, use_baseline, rng,
                                                         jax_x64_as_fnx):
    from fnx.optim import perturbations
    theirs, jax = _optax_module("perturbations")

    def f(np_like):      # piecewise constant in x: only the smoothing gives it a gradient
        return lambda x: {"top": np_like.argmax(x["a"]) * 1.0, "relu": np_like.maximum(
            x["a"], 0.0).sum() * x["b"]}
    x = {"a": rng.standard_normal(4), "b": np.asarray(rng.standard_normal())}
    seed = int(rng.integers(1 << 30))
    ours = perturbations.make_perturbed_fun(f(jnp), 40, 0.5, getattr(perturbations, noise)(),
                                            use_baseline)
    ref = theirs.make_perturbed_fun(f(jax.numpy), 40, 0.5, getattr(theirs, noise)(),
                                    use_baseline)
    want = jax.jit(lambda x: (ref(jax.random.key(seed), x), jax.grad(
        lambda x: ref(jax.random.key(seed), x)["top"])(x)))(x)
    g = fnx.grad(lambda x: ours(fnx.random.key(seed), x)["top"])(x)
    _close((ours(fnx.random.key(seed), x), g), want, msg=f"seed {seed}")
    assert np.abs(np.asarray(g["a"])).max() > 0


def test_tree_map_params_matches_optax(jax_x64_as_fnx):
    optax, jax = _optax()
    params = {"w": np.ones((2, 3)), "b": np.ones(3)}
    out = []
    for lib in (optim, optax):
        opt = lib.chain(lib.clip_by_global_norm(1.0), lib.adamw(0.1), lib.trace(0.9))
        state = opt.init(params)
        out.append(lib.tree_map_params(opt, lambda p, s: f"{s}{p.shape}", state,
                                       {"w": "W", "b": "B"},
                                       transform_non_params=lambda v: "other"))
    ours, theirs = out
    assert ours[1][0].mu == theirs[1][0].mu == {"w": "W(2, 3)", "b": "B(3,)"}
    assert ours[1][0].count == theirs[1][0].count == "other"
    assert ours[2].trace == theirs[2].trace
    state = optim.sgd(0.1).init(params)
    assert optim.tree_utils.tree_map_params(optim.sgd(0.1).init, lambda p: p, state) == state


def test_linear_algebra_matches_optax(rng, jax_x64_as_fnx):
    optax, jax = _optax()
    a = rng.standard_normal((5, 5))
    spd = a @ a.T + 0.1 * np.eye(5)
    ref_root = jax.jit(optax.matrix_inverse_pth_root)     # p traced: one compilation
    for p in (1, 2, 4, 8):
        root, err = optim.matrix_inverse_pth_root(jnp.asarray(spd), p)
        _close(root, ref_root(spd, p)[0], rtol=1e-7, atol=1e-9, msg=f"p={p}")
        w, v = np.linalg.eigh(spd)
        w = w + 1e-6 * w.max()      # the ridge
        np.testing.assert_allclose(root, (v * w ** (-1 / p)) @ v.T, rtol=1e-4, atol=1e-6)
    value, vector = optim.power_iteration(jnp.asarray(spd))
    ref_value, ref_vector = jax.jit(optax.power_iteration)(spd)
    _close((value, vector), (ref_value, ref_vector), rtol=1e-7, atol=1e-9)
    tree_op = lambda t: {"x": spd @ t["x"]}  # noqa: E731
    v0 = {"x": rng.standard_normal(5)}
    _close(optim.power_iteration(tree_op, v0=v0),
           jax.jit(lambda v0: optax.power_iteration(tree_op, v0=v0))(v0), rtol=1e-7, atol=1e-9)
    A, b, B = rng.standard_normal((6, 4)), rng.standard_normal(6), rng.standard_normal((6, 2))
    _close(optim.nnls(jnp.asarray(A), jnp.asarray(b), 40),
           jax.jit(optax.nnls, static_argnums=2)(A, b, 40))
    _close(optim.nnls(jnp.asarray(A), jnp.asarray(B), 10, L=50.0),
           jax.jit(lambda A, B: optax.nnls(A, B, 10, L=50.0))(A, B))
    assert float(np.asarray(optim.nnls(jnp.asarray(A), jnp.asarray(b), 40)).min()) >= 0
    loc, log_scale, x = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((4, 3))
    ours, theirs = optim.multi_normal(loc, log_scale), optax.multi_normal(loc, log_scale)
    _close((ours.log_prob(jnp.asarray(x)), ours.sample((2,), fnx.random.PRNGKey(3))),
           jax.jit(lambda x, k: (theirs.log_prob(x), theirs.sample((2,), k)))(
               x, jax.random.PRNGKey(3)))


def test_fenchel_young_and_multiclass_sparsemax_losses_match_optax(rng, jax_x64_as_fnx):
    optax, jax = _optax()
    import fnx.scipy.special
    scores, labels = rng.standard_normal((5, 4)), rng.integers(0, 4, 5)
    ours = lambda s: optim.losses.multiclass_sparsemax_loss(s, labels)  # noqa: E731
    ref = lambda s: optax.losses.multiclass_sparsemax_loss(s, labels)  # noqa: E731
    _close((ours(jnp.asarray(scores)), fnx.grad(lambda s: ours(s).sum())(jnp.asarray(scores))),
           jax.jit(lambda s: (ref(s), jax.grad(lambda s: ref(s).sum())(s)))(scores))
    targets = np.eye(4)[labels]
    fy = optim.losses.make_fenchel_young_loss(fnx.scipy.special.logsumexp)
    fy_ref = optax.losses.make_fenchel_young_loss(jax.scipy.special.logsumexp)
    # with the log-sum-exp it is softmax cross-entropy
    want = jax.jit(lambda s: (fy_ref(s, targets),
                              optax.losses.softmax_cross_entropy(s, targets)))(scores)
    _close((fy(jnp.asarray(scores), targets),) * 2, want)


def _run_per_step(lib, opt, params, grads):
    import jax

    # jitted: JAX compiles every eager operation on its own
    @(fnx.jit if lib is optim else jax.jit)
    def step(g, state, params):
        updates, state = opt.update(g, state, params)
        return lib.apply_updates(params, updates), state
    state = opt.init(params)
    for g in grads:
        params, state = step(g, state, params)
    return params


def test_galore_dpsgd_and_complex_splitting_match_optax(rng, jax_x64_as_fnx):
    optax, jax = _optax()
    import optax.contrib  # noqa: F401
    shapes = {"w": (5, 3), "v": (2, 6), "t": (2, 3, 4), "b": (4,)}
    params = {k: rng.standard_normal(s) for k, s in shapes.items()}
    grads = [{k: rng.standard_normal(s) for k, s in shapes.items()} for _ in range(5)]
    dims = lambda o: {"w": o.contrib.GaLoreDimensionNumbers(0, 1),  # noqa: E731
                      "v": o.contrib.GaLoreDimensionNumbers(1, 0),
                      "t": o.contrib.GaLoreDimensionNumbers((0, 2), 1), "b": None}
    make = lambda o: o.contrib.galore(0.05, rank=2, update_proj_gap=3,  # noqa: E731
                                      weight_decay=0.01, weight_dimension_numbers=dims(o))
    got = _run_per_step(optim, make(optim), params, grads)
    # optax takes the singular vectors in float32 whatever the precision
    _close(got, _run_per_step(optax, make(optax), params, grads), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got["t"], params["t"])
    per_example = [{k: np.stack([g[k], 3 * g[k], -g[k]]) for k in g} for g in grads]
    make = lambda o: o.contrib.dpsgd(0.1, 1.0, 0.5, seed=3, momentum=0.9)  # noqa: E731
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _close(_run_per_step(optim, make(optim), params, per_example),
               _run_per_step(optax, make(optax), params, per_example))
    cplx = {"z": rng.standard_normal(3) + 1j * rng.standard_normal(3), "r": np.ones(2)}
    cgrads = [{"z": rng.standard_normal(3) + 1j * rng.standard_normal(3),
               "r": rng.standard_normal(2)} for _ in range(4)]
    make = lambda o: o.contrib.split_real_and_imaginary(o.adam(0.1))  # noqa: E731
    got = _run_per_step(optim, make(optim), cplx, cgrads)
    _close(got, _run_per_step(optax, make(optax), cplx, cgrads))
    assert np.iscomplexobj(got["z"])


def test_microbatching_matches_optax(rng, jax_x64_as_fnx):
    optax, jax = _optax()
    w, x, y = rng.standard_normal(3), rng.standard_normal((8, 3)), rng.standard_normal(8)
    outs = []
    for lib, np_like, jit in ((optim, jnp, fnx.jit), (optax, jax.numpy, jax.jit)):
        mb, kind = lib.microbatching, lib.microbatching.AccumulationType
        otu_ = lib.tree_utils

        def loss(w, x, y):
            return np_like.mean((x @ w - y) ** 2), np_like.sum(x)
        # per-example gradients, each normalized, averaged two examples at a time
        grads = mb.micro_grad(loss, has_aux=True, batch_argnums=(1, 2), microbatch_size=2,
                              accumulator=kind.MEAN,
                              transform_fn=lambda g: otu_.tree_scale(
                                  1 / (1 + otu_.tree_norm(g)), g),
                              metrics_fn=otu_.tree_norm)
        per_piece = lib.microbatch(
            lambda x, y, s: {"a": np_like.sum(x * s, 0), "b": y * 2}, argnums=0, argnames="y",
            microbatch_size=4, accumulator={"a": kind.RUNNING_MEAN, "b": kind.CONCAT})
        early = mb.micro_vmap(lambda x, y: x.sum() * y, in_axes=(0, None), microbatch_size=4,
                              accumulator=kind.SUM, num_real_microbatches=1)
        outs.append((jit(grads)(w, x, y), per_piece(x, y=y, s=3.0), early(x, 2.0)))
    _close(*outs)
    np.testing.assert_allclose(outs[0][1]["b"], 2 * y, rtol=1e-12)   # concatenated in order
    np.testing.assert_allclose(outs[0][2], 2 * x[[0, 2, 4, 6]].sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="divisible"):
        optim.microbatch(jnp.sum, 0, 3)(jnp.ones(8))
