"""fnx.optim's optax names that programs use (radam, adabelief, ema, multi_transform,
inject_hyperparams, the one-cycle schedules, optim.losses) against optax itself on the CPU,
float32, over several steps with fresh random gradients."""
import jax
import numpy as np
import optax
import pytest

import fnx
import fnx.numpy as jnp
import fnx.optim as optim
from fnx.optim import losses
from fnx.test_util import assert_close

jax.config.update("jax_platforms", "cpu")


def close(a, b, tol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert_close(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def _params(rng):
    return {"w": rng.standard_normal((3, 4)).astype(np.float32),
            "b": rng.standard_normal(4).astype(np.float32)}


def _run(lib, opt, params, grads):
    state = opt.init(params)
    for g in grads:
        updates, state = opt.update(g, state, params)
        params = lib.apply_updates(params, updates)
    return params, state


def _compare(rng, make, steps=8, tol=1e-5, jit=False):
    params = _params(rng)
    grads = [_params(rng) for _ in range(steps)]
    fx, fx_state = _run(optim, make(optim), params, grads)
    ref, ref_state = _run(optax, make(optax), params, grads)
    close(fx, ref, tol)
    return fx_state, ref_state


@pytest.mark.parametrize("make", [
    lambda o: o.radam(1e-2),
    lambda o: o.radam(1e-2, b2=0.9, threshold=3.0, nesterov=True),
    lambda o: o.adabelief(1e-2),
    lambda o: o.adabelief(1e-2, nesterov=True),
    lambda o: o.chain(o.ema(0.9), o.sgd(0.1)),
    lambda o: o.chain(o.ema(0.8, debias=False), o.sgd(0.1)),
], ids=["radam", "radam_nesterov", "adabelief", "adabelief_nesterov", "ema", "ema_biased"])
def test_optimizers_match_optax(rng, make):
    # radam's rectification starts after a few steps: run past it
    _compare(rng, make, steps=10)


def test_multi_transform_matches_optax(rng):
    labels = {"w": "adam", "b": "sgd"}
    _compare(rng, lambda o: o.multi_transform({"adam": o.adam(1e-2), "sgd": o.sgd(0.1, 0.9)},
                                              labels))
    _compare(rng, lambda o: o.multi_transform(
        {"decay": o.adamw(1e-2, weight_decay=0.1), "none": o.set_to_zero()
         if o is optax else o.scale(0.0)},
        lambda p: {k: "decay" if v.ndim > 1 else "none" for k, v in p.items()}))
    with pytest.raises(ValueError, match="labels"):
        optim.multi_transform({"adam": optim.adam(1e-2)}, labels).init(_params(rng))


def test_inject_hyperparams_matches_optax_and_can_be_changed(rng):
    sched = lambda o: o.linear_schedule(0.1, 0.01, 5)  # noqa: E731
    fx_state, ref_state = _compare(
        rng, lambda o: o.inject_hyperparams(o.adam)(learning_rate=sched(o), b1=0.8))
    assert set(fx_state.hyperparams) == set(ref_state.hyperparams)
    close(fx_state.hyperparams, ref_state.hyperparams)
    assert int(fx_state.count) == int(ref_state.count)
    # a held hyperparameter changed between steps, under jit
    params, g = _params(rng), _params(rng)
    outs = []
    for lib, jit, np_ in ((optim, fnx.jit, jnp), (optax, jax.jit, jax.numpy)):
        opt = lib.inject_hyperparams(lib.sgd)(learning_rate=0.1, momentum=0.9)
        state = opt.init(params)
        state.hyperparams["learning_rate"] = np_.asarray(0.5)
        step = jit(lambda g, s, p: opt.update(g, s, p))
        updates, state = step(g, state, params)
        updates, state = step(g, state, params)
        outs.append(updates)
    close(*outs)
    # static arguments stay as given
    opt = optim.inject_hyperparams(optim.sgd, static_args="nesterov")(0.1, 0.9, True)
    assert set(opt.init(params).hyperparams) == {"learning_rate", "momentum"}


@pytest.mark.parametrize("name", ["cosine_onecycle_schedule", "linear_onecycle_schedule"])
def test_onecycle_schedules_match_optax(name):
    for args in ((100, 0.1), (37, 2.0, 0.25)):
        f, g = getattr(optim, name)(*args), getattr(optax, name)(*args)
        steps = np.arange(0, 130)
        close([f(i) for i in steps], [g(i) for i in steps], 1e-6)
        close(fnx.jit(f)(jnp.asarray(17)), g(17), 1e-6)
    f = optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 100, 0.1)
    g = optax.warmup_cosine_decay_schedule(0.0, 1.0, 10, 100, 0.1)
    close([f(i) for i in range(0, 120, 7)], [g(i) for i in range(0, 120, 7)], 1e-6)


def test_losses_match_optax(rng):
    logits = rng.standard_normal((6, 5)).astype(np.float32) * 3
    ids = rng.integers(0, 5, 6)
    onehot = np.eye(5, dtype=np.float32)[ids]
    soft = np.asarray(jax.nn.softmax(rng.standard_normal((6, 5)).astype(np.float32)))
    p = rng.standard_normal((6, 5)).astype(np.float32) * 2
    t = rng.standard_normal((6, 5)).astype(np.float32)
    ol = optax.losses
    close(losses.softmax_cross_entropy(logits, soft), ol.softmax_cross_entropy(logits, soft))
    mask = rng.random((6, 5)) > 0.3
    mask[np.arange(6), ids] = True
    close(losses.softmax_cross_entropy(logits, onehot, where=mask),
          ol.softmax_cross_entropy(logits, onehot, where=mask))
    close(losses.softmax_cross_entropy_with_integer_labels(logits, ids),
          ol.softmax_cross_entropy_with_integer_labels(logits, ids))
    close(losses.softmax_cross_entropy_with_integer_labels(logits.T, ids, axis=0),
          ol.softmax_cross_entropy_with_integer_labels(logits.T, ids, axis=0))
    close(losses.sigmoid_binary_cross_entropy(logits, onehot),
          ol.sigmoid_binary_cross_entropy(logits, onehot))
    for name in ("l2_loss", "squared_error", "huber_loss", "log_cosh"):
        close(getattr(losses, name)(p, t), getattr(ol, name)(p, t))
        close(getattr(losses, name)(p), getattr(ol, name)(p))
    close(losses.huber_loss(p, t, delta=0.3), ol.huber_loss(p, t, delta=0.3))
    close(losses.cosine_distance(p, t), ol.cosine_distance(p, t))
    close(losses.cosine_similarity(p, t, epsilon=0.5, axis=0),
          ol.cosine_similarity(p, t, epsilon=0.5, axis=0))
    close(losses.hinge_loss(p, np.sign(t)), ol.hinge_loss(p, np.sign(t)))
    assert optim.losses is losses
    grad = fnx.grad(lambda x: jnp.mean(losses.softmax_cross_entropy_with_integer_labels(x, ids)))
    ref = jax.grad(lambda x: jax.numpy.mean(ol.softmax_cross_entropy_with_integer_labels(x, ids)))
    close(grad(logits), ref(logits))


def _factorable(rng):
    # a matrix whose two axes reach min_dim_size_to_factor (factored), a small matrix and a
    # vector (full second moments), a 3-d array factored over its two largest axes
    return {"big": rng.standard_normal((130, 140)).astype(np.float32),
            "w": rng.standard_normal((3, 4)).astype(np.float32),
            "b": rng.standard_normal(4).astype(np.float32),
            "t": rng.standard_normal((3, 8, 6)).astype(np.float32)}


@pytest.mark.parametrize("kwargs", [
    {}, {"learning_rate": 1e-2},
    {"learning_rate": 0.05, "momentum": 0.9, "weight_decay_rate": 1e-3,
     "min_dim_size_to_factor": 4, "clipping_threshold": None},
    {"learning_rate": 1e-2, "multiply_by_parameter_scale": False, "factored": False},
], ids=["defaults", "lr", "momentum-decay-small-factor", "unfactored"])
def test_adafactor_matches_optax(rng, kwargs):
    params = _factorable(rng)
    grads = [_factorable(rng) for _ in range(5)]
    fx, fx_state = _run(optim, optim.adafactor(**kwargs), params, grads)
    ref, ref_state = _run(optax, optax.adafactor(**kwargs), params, grads)
    close(fx, ref, 2e-5)
    close(fx_state, ref_state, 2e-5)            # the factored moments and counts, step by step


def test_adafactor_under_jit(rng):
    params = _factorable(rng)
    grads = _factorable(rng)
    opt, ref_opt = optim.adafactor(1e-2, min_dim_size_to_factor=4), \
        optax.adafactor(1e-2, min_dim_size_to_factor=4)
    step = fnx.jit(lambda g, s, p: opt.update(g, s, p))
    u, s = step(grads, opt.init(params), params)
    u, s = step(grads, s, params)
    ru, rs = ref_opt.update(grads, ref_opt.init(params), params)
    ru, rs = ref_opt.update(grads, rs, params)
    close(u, ru, 2e-5)
    assert int(s[0].count) == 2                  # the factored moments' step count


def test_losses_at_the_top_as_in_optax(rng):
    log_p = np.log(rng.dirichlet(np.ones(4), size=3)).astype(np.float32)
    targets = rng.dirichlet(np.ones(4), size=3).astype(np.float32)
    targets[0, 1] = 0.0                     # a zero target contributes nothing
    close(optim.kl_divergence(log_p, targets), optax.kl_divergence(log_p, targets))
    close(losses.kl_divergence_with_log_targets(log_p, np.log(targets + 0.1)),
          optax.losses.kl_divergence_with_log_targets(log_p, np.log(targets + 0.1)))
    close(optim.smooth_labels(targets, 0.2), optax.smooth_labels(targets, 0.2))
    logits, labels = rng.standard_normal((3, 4)), rng.integers(0, 4, 3)
    close(optim.softmax_cross_entropy_with_integer_labels(logits, labels),
          optax.softmax_cross_entropy_with_integer_labels(logits, labels))
    missing = [n for n in dir(optax.losses) if hasattr(optax, n) and hasattr(losses, n)
               and not hasattr(optim, n)]
    assert missing == []


def test_stateless_transformations_and_target_updates_match_optax(rng):
    _compare(rng, lambda o: o.chain(o.identity(), o.sgd(0.1)))
    _compare(rng, lambda o: o.multi_transform({"a": o.sgd(0.1), "z": o.set_to_zero()},
                                              {"w": "a", "b": "z"}))
    _compare(rng, lambda o: o.chain(o.stateless(
        lambda u, p: jax.tree_util.tree_map(lambda g, w: g + 0.1 * w, u, p)), o.sgd(0.1)))
    _compare(rng, lambda o: o.chain(o.stateless_with_tree_map(lambda g, w: g * w), o.sgd(0.1)))
    new, old = _params(rng), _params(rng)
    close(optim.incremental_update(new, old, 0.3), optax.incremental_update(new, old, 0.3))
    for step in (4, 5):
        close(fnx.jit(optim.periodic_update, static_argnums=3)(new, old, step, 2),
              optax.periodic_update(new, old, step, 2))
