"""fnx.optim: every optimizer against a float64 NumPy reference for several steps, schedules
against their closed forms, clipping, chaining and training a module."""
import math

import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
import fnx.optim as optim
import fnx.random as random
from fnx import tree_util

STEPS = 6


def _params(rng):
    return {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}


def _grads(rng, steps=STEPS):
    return [{"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)} for _ in range(steps)]


def _run(opt, params, grads):
    state = opt.init(params)
    for g in grads:
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}


# float64 references, one parameter array at a time, written from the papers / optax's docs


def ref_sgd(p, gs, lr, momentum=None, nesterov=False):
    t = np.zeros_like(p)
    for g in gs:
        if momentum is None:
            u = g
        else:
            t = g + momentum * t
            u = g + momentum * t if nesterov else t
        p = p - lr * u
    return p


def ref_adam(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, lr_at=None):
    m, v = np.zeros_like(p), np.zeros_like(p)
    for k, g in enumerate(gs, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        u = (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps) + wd * p
        p = p - (lr_at(k - 1) if lr_at else lr) * u
    return p


def ref_rmsprop(p, gs, lr, decay=0.9, eps=1e-8, centered=False, momentum=None):
    nu, mu, t = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in gs:
        nu = decay * nu + (1 - decay) * g * g
        mu = decay * mu + (1 - decay) * g
        denom = nu - mu * mu if centered else nu
        u = lr * g / np.sqrt(denom + eps)
        if momentum is not None:
            t = u + momentum * t
            u = t
        p = p - u
    return p


def ref_adam_family(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, kind="nadam", wd=0.0):
    """Nadam, Adamax, AMSGrad and LAMB: Adam's moments, each finished its own way."""
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for k, g in enumerate(gs, 1):
        m = b1 * m + (1 - b1) * g
        if kind == "adamax":
            v = np.maximum(np.abs(g) + eps, b2 * v)
            u = m / (1 - b1 ** k) / v
        else:
            v = b2 * v + (1 - b2) * g * g
            v_hat = v / (1 - b2 ** k)
            m_hat = m / (1 - b1 ** k)
            if kind == "nadam":
                m_hat = b1 * m / (1 - b1 ** (k + 1)) + (1 - b1) * g / (1 - b1 ** k)
            if kind == "amsgrad":
                v_max = v_hat = np.maximum(v_max, v_hat)
            u = m_hat / (np.sqrt(v_hat) + eps)
        if kind == "lamb":
            u = u + wd * p
            u = u * np.linalg.norm(p) / np.linalg.norm(u)
        p = p - lr * u
    return p


def ref_adagrad(p, gs, lr, initial=0.1, eps=1e-7):
    total = np.full_like(p, initial)
    for g in gs:
        total = total + g * g
        p = p - lr * g / np.sqrt(total + eps)
    return p


def ref_lion(p, gs, lr, b1=0.9, b2=0.99, wd=1e-3):
    m = np.zeros_like(p)
    for g in gs:
        u = np.sign((1 - b1) * g + b1 * m) + wd * p
        m = (1 - b2) * g + b2 * m
        p = p - lr * u
    return p


CASES = [
    ("sgd", lambda: optim.sgd(0.1), lambda p, gs: ref_sgd(p, gs, 0.1)),
    ("sgd_momentum", lambda: optim.sgd(0.05, momentum=0.9),
     lambda p, gs: ref_sgd(p, gs, 0.05, 0.9)),
    ("sgd_nesterov", lambda: optim.sgd(0.05, momentum=0.8, nesterov=True),
     lambda p, gs: ref_sgd(p, gs, 0.05, 0.8, True)),
    ("adam", lambda: optim.adam(1e-2), lambda p, gs: ref_adam(p, gs, 1e-2)),
    ("adam_betas", lambda: optim.adam(3e-2, b1=0.5, b2=0.9, eps=1e-3),
     lambda p, gs: ref_adam(p, gs, 3e-2, 0.5, 0.9, 1e-3)),
    ("adamw", lambda: optim.adamw(1e-2, weight_decay=0.1),
     lambda p, gs: ref_adam(p, gs, 1e-2, wd=0.1)),
    ("rmsprop", lambda: optim.rmsprop(1e-2), lambda p, gs: ref_rmsprop(p, gs, 1e-2)),
    ("rmsprop_centered_momentum", lambda: optim.rmsprop(1e-2, decay=0.8, eps=1e-4, centered=True,
                                                        momentum=0.9),
     lambda p, gs: ref_rmsprop(p, gs, 1e-2, 0.8, 1e-4, True, 0.9)),
    ("nadam", lambda: optim.nadam(1e-2), lambda p, gs: ref_adam_family(p, gs, 1e-2)),
    ("adamax", lambda: optim.adamax(2e-2),
     lambda p, gs: ref_adam_family(p, gs, 2e-2, kind="adamax")),
    ("amsgrad", lambda: optim.amsgrad(1e-2, b2=0.5),
     lambda p, gs: ref_adam_family(p, gs, 1e-2, b2=0.5, kind="amsgrad")),
    ("lamb", lambda: optim.lamb(1e-2, weight_decay=0.1),
     lambda p, gs: ref_adam_family(p, gs, 1e-2, eps=1e-6, kind="lamb", wd=0.1)),
    ("adagrad", lambda: optim.adagrad(0.1), lambda p, gs: ref_adagrad(p, gs, 0.1)),
    ("lion", lambda: optim.lion(1e-2, weight_decay=0.1),
     lambda p, gs: ref_lion(p, gs, 1e-2, wd=0.1)),
]


@pytest.mark.parametrize("name, make, ref", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_numpy(name, make, ref):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    params, grads = _params(rng), _grads(rng)
    out = _run(make(), params, grads)
    for k in params:
        expected = ref(params[k], [g[k] for g in grads])
        assert out[k].dtype == np.float64
        np.testing.assert_allclose(out[k], expected, rtol=1e-12, atol=1e-12, err_msg=k)


def test_adam_with_a_schedule():
    rng = np.random.default_rng(1)
    params, grads = _params(rng), _grads(rng)
    schedule = optim.exponential_decay(1e-2, 2, 0.5)
    out = _run(optim.adam(schedule), params, grads)
    lr_at = lambda k: float(np.float32(1e-2 * 0.5 ** (k / 2)))  # noqa: E731 (float32, as optax)
    for k in params:
        np.testing.assert_allclose(out[k], ref_adam(params[k], [g[k] for g in grads], None,
                                                    lr_at=lr_at), rtol=1e-6)


def test_adamw_mask_and_none_leaves():
    rng = np.random.default_rng(2)
    params, grads = _params(rng), _grads(rng)
    opt = optim.adamw(1e-2, weight_decay=0.5, mask={"w": True, "b": False})
    out = _run(opt, params, grads)
    np.testing.assert_allclose(out["w"], ref_adam(params["w"], [g["w"] for g in grads], 1e-2,
                                                  wd=0.5), rtol=1e-12)
    np.testing.assert_allclose(out["b"], ref_adam(params["b"], [g["b"] for g in grads], 1e-2),
                               rtol=1e-12)
    layer = nn.Linear(random.key(0), 3, 2, use_bias=False)
    state = optim.adam(1e-2).init(layer)
    g = fnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 3)))))(layer)
    updates, state = optim.adam(1e-2).update(g, state, layer)
    assert optim.apply_updates(layer, updates).bias is None


def test_clip_by_global_norm():
    rng = np.random.default_rng(3)
    g = _grads(rng, 1)[0]
    norm = math.sqrt(sum(float(np.sum(v ** 2)) for v in g.values()))
    clipped, _ = optim.clip_by_global_norm(1.0).update(g, optim.EmptyState())
    np.testing.assert_allclose(float(optim.global_norm(clipped)), 1.0, rtol=1e-12)
    for k in g:
        np.testing.assert_allclose(np.asarray(clipped[k]), g[k] / norm, rtol=1e-12)
    same, _ = optim.clip_by_global_norm(norm * 2).update(g, optim.EmptyState())
    for k in g:
        np.testing.assert_allclose(np.asarray(same[k]), g[k], rtol=1e-12)


def test_chain_and_apply_updates_keep_dtypes():
    rng = np.random.default_rng(4)
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32),
              "b": rng.standard_normal(4).astype(np.float32)}
    grads = {k: (v * 100).astype(np.float32) for k, v in params.items()}
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.1))
    state = opt.init(params)
    assert isinstance(state, tuple) and len(state) == 2
    updates, state = opt.update(grads, state)
    new = optim.apply_updates(params, updates)
    assert all(np.asarray(v).dtype == np.float32 for v in new.values())
    assert math.isclose(float(optim.global_norm(updates)), 0.1, rel_tol=1e-5)
    updates, _ = optim.clip(0.5).update(grads, optim.EmptyState())
    assert max(float(jnp.max(jnp.abs(u))) for u in updates.values()) <= 0.5


@pytest.mark.parametrize("name, schedule, ref", [
    ("constant", optim.constant_schedule(0.3), lambda c: 0.3),
    ("linear", optim.linear_schedule(1.0, 0.1, 10, transition_begin=2),
     lambda c: 1.0 + (0.1 - 1.0) * min(max(c - 2, 0), 10) / 10),
    ("exponential", optim.exponential_decay(0.5, 4, 0.1), lambda c: 0.5 * 0.1 ** (c / 4)),
    ("exponential_staircase", optim.exponential_decay(0.5, 4, 0.1, staircase=True,
                                                      end_value=1e-3),
     lambda c: max(0.5 * 0.1 ** (c // 4), 1e-3)),
    ("cosine", optim.cosine_decay_schedule(2.0, 20, alpha=0.1),
     lambda c: 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(c, 20) / 20)) + 0.1)),
    ("warmup_cosine", optim.warmup_cosine_decay_schedule(0.0, 1.0, 5, 25, end_value=0.2),
     lambda c: c / 5 if c < 5 else
     0.2 + 0.8 * 0.5 * (1 + math.cos(math.pi * min(c - 5, 20) / 20))),
])
def test_schedules(name, schedule, ref):
    for c in [0, 1, 3, 4, 5, 6, 9, 12, 19, 20, 25, 40]:
        np.testing.assert_allclose(float(schedule(c)), ref(c), rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name} at {c}")
        np.testing.assert_allclose(float(schedule(jnp.asarray(c))), ref(c), rtol=1e-6,
                                   atol=1e-7)


def test_schedule_under_vmap():
    counts = jnp.arange(8)
    lr = optim.warmup_cosine_decay_schedule(0.0, 1.0, 3, 8)
    np.testing.assert_allclose(np.asarray(fnx.vmap(lr)(counts)),
                               [float(lr(int(c))) for c in range(8)], rtol=1e-6)


def test_training_a_module_reduces_the_loss():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int32)
    model = nn.MLP(random.key(0), [3, 16, 2])
    opt = optim.chain(optim.clip_by_global_norm(5.0),
                      optim.adamw(optim.warmup_cosine_decay_schedule(0.0, 3e-2, 5, 60)))
    state = opt.init(model)

    def loss(m):
        return nn.softmax_cross_entropy(m(x), y).mean()
    step = getattr(fnx, "jit", lambda f: f)(
        lambda m, s: (lambda l, g: (l, *opt.update(g, s, m)))(*fnx.value_and_grad(loss)(m)))
    first = float(loss(model))
    for _ in range(60):
        _, updates, state = step(model, state)
        model = optim.apply_updates(model, updates)
    assert float(loss(model)) < 0.3 * first
    assert isinstance(model, nn.MLP)
    assert len(tree_util.tree_leaves(state)) > len(tree_util.tree_leaves(model))


def test_same_updates_as_optax():
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    optax = pytest.importorskip("optax")
    rng = np.random.default_rng(6)
    params = {k: v.astype(np.float32) for k, v in _params(rng).items()}
    grads = [{k: v.astype(np.float32) for k, v in g.items()} for g in _grads(rng)]
    pairs = [
        (optax.sgd(0.05, 0.9, True), optim.sgd(0.05, 0.9, True)),
        (optax.adamw(1e-2, weight_decay=0.1), optim.adamw(1e-2, weight_decay=0.1)),
        (optax.rmsprop(1e-2, centered=True, momentum=0.5),
         optim.rmsprop(1e-2, centered=True, momentum=0.5)),
        (optax.nadam(1e-2), optim.nadam(1e-2)),
        (optax.lamb(1e-2, weight_decay=0.1), optim.lamb(1e-2, weight_decay=0.1)),
        (optax.lion(1e-2), optim.lion(1e-2)),
        (optax.masked(optax.adam(1e-2), {"w": True, "b": False}),
         optim.masked(optim.adam(1e-2), {"w": True, "b": False})),
        (optax.MultiSteps(optax.adam(1e-2), 3), optim.MultiSteps(optim.adam(1e-2), 3)),
        (optax.chain(optax.clip_by_global_norm(1.0),
                     optax.adam(optax.warmup_cosine_decay_schedule(0.0, 1e-2, 3, 8))),
         optim.chain(optim.clip_by_global_norm(1.0),
                     optim.adam(optim.warmup_cosine_decay_schedule(0.0, 1e-2, 3, 8)))),
    ]
    for theirs, ours in pairs:
        p1, s1 = dict(params), theirs.init(params)
        out = _run(ours, params, grads)
        for g in grads:
            u1, s1 = theirs.update(g, s1, p1)
            p1 = optax.apply_updates(p1, u1)
        for k in params:
            np.testing.assert_allclose(out[k], np.asarray(p1[k]), rtol=1e-5, atol=1e-6)


def test_masked_applies_the_inner_transformation_to_the_masked_leaves_only():
    rng = np.random.default_rng(7)
    params, grads = _params(rng), _grads(rng)
    opt = optim.chain(optim.masked(optim.add_decayed_weights(0.5), lambda p: {"w": True,
                                                                              "b": False}),
                      optim.sgd(0.1))
    out = _run(opt, params, grads)
    w, b = params["w"], params["b"]
    for g in grads:
        w, b = w - 0.1 * (g["w"] + 0.5 * w), b - 0.1 * g["b"]
    np.testing.assert_allclose(out["w"], w, rtol=1e-12)
    np.testing.assert_allclose(out["b"], b, rtol=1e-12)


def test_apply_if_finite_skips_a_bad_step_and_keeps_the_state():
    rng = np.random.default_rng(8)
    params, grads = _params(rng), _grads(rng, 4)
    bad = [dict(g) for g in grads]
    bad[1] = {"w": np.full((3, 4), np.nan), "b": grads[1]["b"]}
    step = fnx.jit(lambda g, s, p: optim.apply_if_finite(optim.adam(1e-2), 3).update(g, s, p))
    state, p = optim.apply_if_finite(optim.adam(1e-2), 3).init(params), params
    for g in bad:
        updates, state = step(g, state, p)
        p = optim.apply_updates(p, updates)
    expected = _run(optim.adam(1e-2), params, [grads[0], grads[2], grads[3]])
    for k in params:
        np.testing.assert_allclose(np.asarray(p[k]), expected[k], rtol=1e-12)
    assert int(state.total_notfinite) == 1 and bool(state.last_finite)


def test_multi_steps_applies_the_mean_every_k_steps():
    rng = np.random.default_rng(9)
    params, grads = _params(rng), _grads(rng)
    opt = optim.MultiSteps(optim.sgd(0.1, momentum=0.5), every_k_schedule=3)
    state, p, seen = opt.init(params), params, []
    for g in grads:
        updates, state = opt.update(g, state, p)
        p = optim.apply_updates(p, updates)
        seen.append(float(np.abs(np.asarray(updates["w"])).sum()))
    assert seen[0] == seen[1] == seen[3] == seen[4] == 0.0 and seen[2] > 0 and seen[5] > 0
    means = [{k: np.mean([g[k] for g in grads[i:i + 3]], axis=0) for k in params}
             for i in (0, 3)]
    expected = _run(optim.sgd(0.1, momentum=0.5), params, means)
    for k in params:
        np.testing.assert_allclose(np.asarray(p[k]), expected[k], rtol=1e-12)


def test_piecewise_constant_schedule():
    schedule = optim.piecewise_constant_schedule(0.1, {3: 0.5, 7: 0.1})
    values = [float(schedule(step)) for step in range(10)]
    np.testing.assert_allclose(values, [0.1] * 3 + [0.05] * 4 + [0.005] * 3, rtol=1e-6)
    np.testing.assert_allclose(fnx.vmap(schedule)(jnp.arange(10)), values, rtol=1e-6)


NEW_OPTIMIZERS = {
    "nadam": lambda: optim.nadam(1e-2), "adamax": lambda: optim.adamax(2e-2),
    "amsgrad": lambda: optim.amsgrad(1e-2, b2=0.9), "adagrad": lambda: optim.adagrad(0.1),
    "lion": lambda: optim.lion(1e-2, weight_decay=0.1),
    "lamb": lambda: optim.lamb(1e-2, weight_decay=0.1),
}


@pytest.mark.parametrize("name, make", NEW_OPTIMIZERS.items(), ids=list(NEW_OPTIMIZERS))
def test_new_optimizer_under_jit_reduces_a_quadratic(name, make):
    target = {"w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
              "b": np.ones(4, np.float32)}
    params = {k: np.zeros_like(v) + 0.5 for k, v in target.items()}
    opt = make()
    state = opt.init(params)

    def loss(p):
        return sum(jnp.sum(jnp.square(p[k] - target[k])) for k in p)

    @fnx.jit
    def step(p, s):
        updates, s = opt.update(fnx.grad(loss)(p), s, p)
        return optim.apply_updates(p, updates), s
    first = float(loss(params))
    p_eager, s_eager = params, state
    u, s_eager = opt.update(fnx.grad(loss)(p_eager), s_eager, p_eager)
    p_eager = optim.apply_updates(p_eager, u)
    p_jit, state = step(params, state)
    for k in params:
        np.testing.assert_allclose(np.asarray(p_jit[k]), np.asarray(p_eager[k]), rtol=1e-5)
    params = p_jit
    for _ in range(30):
        params, state = step(params, state)
    assert float(loss(params)) < 0.9 * first


def test_masked_with_a_stateful_inner_and_a_tree_mask():
    rng = np.random.default_rng(7)
    params, grads = _params(rng), _grads(rng, 3)
    for mask in [{"w": True, "b": False}, lambda p: {"w": True, "b": False}]:
        opt = optim.chain(optim.masked(optim.scale(-2.0), mask), optim.sgd(0.1))
        out = _run(opt, params, grads)
        np.testing.assert_allclose(out["w"], params["w"] + 0.2 * sum(g["w"] for g in grads),
                                   rtol=1e-12)
        np.testing.assert_allclose(out["b"], params["b"] - 0.1 * sum(g["b"] for g in grads),
                                   rtol=1e-12)
    # a stateful inner transformation keeps state only for the masked-in leaves
    opt = optim.masked(optim.adam(1e-2), {"w": False, "b": True})
    out = _run(opt, params, grads)
    np.testing.assert_allclose(out["w"], params["w"] + sum(g["w"] for g in grads), rtol=1e-12)
    np.testing.assert_allclose(out["b"], ref_adam(params["b"], [g["b"] for g in grads], 1e-2),
                               rtol=1e-12)


def test_apply_if_finite_counts_and_gives_up_after_max_errors():
    params = {"w": np.ones(3)}
    opt = optim.apply_if_finite(optim.adam(0.1), max_consecutive_errors=2)
    state = opt.init(params)
    good = {"w": np.array([1.0, -1.0, 2.0])}
    bad = {"w": np.array([1.0, np.nan, 2.0])}
    u, state = opt.update(good, state, params)
    inner_after_good = state.inner_state
    u, state = opt.update(bad, state, params)
    np.testing.assert_array_equal(np.asarray(u["w"]), 0.0)
    assert int(state.notfinite_count) == 1 and int(state.total_notfinite) == 1
    assert not bool(state.last_finite)
    for a, b in zip(tree_util.tree_leaves(state.inner_state),
                    tree_util.tree_leaves(inner_after_good)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    u, state = fnx.jit(opt.update)(good, state, params)
    assert int(state.notfinite_count) == 0 and bool(state.last_finite)
    assert np.all(np.isfinite(np.asarray(u["w"]))) and np.any(np.asarray(u["w"]) != 0)
    # past max_consecutive_errors the step is applied anyway, as optax does
    for _ in range(3):
        u, state = opt.update(bad, state, params)
    assert int(state.notfinite_count) == 3 and np.isnan(np.asarray(u["w"])).any()


def test_new_optimizers_same_as_optax():
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    optax = pytest.importorskip("optax")
    rng = np.random.default_rng(9)
    params = {k: v.astype(np.float32) for k, v in _params(rng).items()}
    grads = [{k: v.astype(np.float32) for k, v in g.items()} for g in _grads(rng)]
    for name in ["nadam", "adamax", "amsgrad", "adagrad", "lion", "lamb"]:
        theirs, ours = getattr(optax, name)(1e-2), getattr(optim, name)(1e-2)
        p1, s1 = dict(params), theirs.init(params)
        out = _run(ours, params, grads)
        for g in grads:
            u1, s1 = theirs.update(g, s1, p1)
            p1 = optax.apply_updates(p1, u1)
        for k in params:
            np.testing.assert_allclose(out[k], np.asarray(p1[k]), rtol=1e-5, atol=1e-6,
                                       err_msg=name)


INT_PARAM_OPTIMIZERS = ["sgd", "adam", "adamw", "nadam", "adamax", "amsgrad", "adagrad",
                        "rmsprop", "lion", "lamb", "radam", "adabelief"]


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("name", INT_PARAM_OPTIMIZERS)
def test_integer_parameters_as_optax(name, x64):
    """int32 parameters and gradients: the updates, the new parameters and the state's dtypes
    are optax's (the moments become floats where JAX's weak typing makes them so)."""
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    optax = pytest.importorskip("optax")
    import jax
    with fnx.enable_x64(x64), jax.enable_x64(x64):
        _integer_parameters_as_optax(name, optax, jax)


def _integer_parameters_as_optax(name, optax, jax):
    rng = np.random.default_rng()
    params = {"w": rng.integers(-5, 6, (3, 2)).astype(np.int32),
              "b": rng.integers(-5, 6, 4).astype(np.int32)}
    grads = [{k: rng.integers(-3, 4, v.shape).astype(np.int32) for k, v in params.items()}
             for _ in range(3)]
    theirs, ours = getattr(optax, name)(0.1), getattr(optim, name)(0.1)
    as_jax = jax.tree.map(jax.numpy.asarray, params)
    p0, s0, p1, s1 = params, ours.init(params), as_jax, theirs.init(as_jax)
    for g in grads:
        u0, s0 = ours.update(g, s0, p0)
        u1, s1 = theirs.update(jax.tree.map(jax.numpy.asarray, g), s1, p1)
        p0, p1 = optim.apply_updates(p0, u0), optax.apply_updates(p1, u1)
        for k in params:
            assert u0[k].dtype == u1[k].dtype and p0[k].dtype == p1[k].dtype == np.int32
            np.testing.assert_allclose(np.asarray(u0[k]), np.asarray(u1[k]), rtol=1e-6,
                                       err_msg=k)
            np.testing.assert_array_equal(np.asarray(p0[k]), np.asarray(p1[k]), err_msg=k)
        ours_dt = [np.asarray(x).dtype for x in tree_util.tree_leaves(s0)]
        theirs_dt = [np.asarray(x).dtype for x in tree_util.tree_leaves(s1)]
        assert ours_dt == theirs_dt
