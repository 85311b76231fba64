"""Mixed precision (fnx.amp, jmp's API): policies, casts, loss scaling, and MLP training runs in
bfloat16 and float16 whose losses follow the float32 run."""
import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
from fnx import amp, optim

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


# --- policies --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("params=float32,compute=bfloat16,output=float32", (F32, BF16, F32)),
    ("p=f32,c=f16,o=f32", (F32, F16, F32)),
    ("params=float32, compute=half", (F32, F16, F16)),
    ("c=bf16", (F32, BF16, BF16)),
    ("bfloat16", (BF16, BF16, BF16)),
    ("full", (F32, F32, F32)),
])
def test_get_policy_reads_jmps_strings(text, expected):
    policy = amp.get_policy(text)
    assert (policy.param_dtype, policy.compute_dtype, policy.output_dtype) == expected
    assert amp.get_policy(str(policy)) == policy          # str gives a readable policy back


@pytest.mark.parametrize("text", ["params=float32,compute=int8", "weights=float32",
                                  "params", "float8"])
def test_get_policy_rejects_what_it_cannot_read(text):
    with pytest.raises(amp.PolicyError):
        amp.get_policy(text)
    assert issubclass(amp.PolicyError, ValueError)


def test_policy_casts_floating_leaves_only(rng):
    policy = amp.Policy(jnp.float32, jnp.bfloat16, jnp.float16)
    tree = {"w": jnp.asarray(rng.standard_normal((2, 3))), "n": jnp.arange(3), "lr": 0.1,
            "mask": jnp.asarray([True, False])}
    for cast, dtype in ((policy.cast_to_compute, BF16), (policy.cast_to_output, F16),
                        (policy.cast_to_param, F32)):
        out = cast(tree)
        assert out["w"].dtype == dtype
        assert out["n"].dtype == tree["n"].dtype and out["mask"].dtype == np.bool_
        assert out["lr"] == 0.1
    np.testing.assert_array_equal(np.asarray(policy.cast_to_compute(tree)["w"]),
                                  np.asarray(tree["w"]).astype(BF16))
    assert policy.with_compute_dtype(jnp.float16).compute_dtype == F16
    assert policy.with_param_dtype("bf16").param_dtype == BF16
    assert policy.with_output_dtype(jnp.float32).output_dtype == F32
    assert hash(policy) == hash(amp.Policy("f32", "bf16", "f16"))
    assert amp.cast_to_half(tree)["w"].dtype == F16 and amp.cast_to_full(out)["w"].dtype == F32


def test_apply_policy_computes_in_half_and_keeps_master_weights(rng):
    w, x = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 3))
    loss = amp.apply_policy(lambda w, x: jnp.mean(jnp.tanh(x @ w) ** 2),
                            "params=float32,compute=bfloat16,output=float32")
    value, grad = fnx.value_and_grad(loss)(jnp.asarray(w), jnp.asarray(x, jnp.float32))
    assert value.dtype == F32 and grad.dtype == F32       # gradients of the master weights
    expr = str(fnx.make_jaxpr(loss)(w, x.astype(np.float32)))
    assert "bf16" in expr and "dot_general" in expr
    # the same numbers as computing in bfloat16 by hand, then widening
    wb, xb = w.astype(BF16), x.astype(BF16)
    by_hand = fnx.grad(lambda w: jnp.mean(jnp.tanh(jnp.asarray(xb) @ w) ** 2).astype(F32))(
        jnp.asarray(wb))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(by_hand).astype(F32))
    ref = np.mean(np.tanh(x @ w.astype(np.float64)) ** 2)
    assert abs(float(value) - ref) < 2 ** -6 * max(1.0, abs(ref))


# --- loss scaling ----------------------------------------------------------------------------

def jmp_adjust(scale, counter, finite, period, factor, min_scale):
    """jmp.DynamicLossScale.adjust, written out in Python floats."""
    if finite:
        if counter == period - 1 and np.isfinite(np.float32(scale * factor)):
            scale = scale * factor
        return scale, (counter + 1) % period
    return max(min_scale, scale / factor), 0


def test_dynamic_loss_scale_follows_jmps_rule(rng):
    ls = amp.DynamicLossScale(jnp.float32(2 ** 10), period=3, factor=2, min_loss_scale=2 ** 7)
    adjust = fnx.jit(lambda ls, finite: ls.adjust(finite))
    scale, counter = 2.0 ** 10, 0
    for finite in rng.random(40) < 0.7:
        ls = adjust(ls, jnp.asarray(finite))
        scale, counter = jmp_adjust(scale, counter, finite, 3, 2, 2 ** 7)
        assert float(ls.loss_scale) == scale and int(ls.counter) == counter
    assert ls.period == 3 and ls.loss_scale.dtype == F32
    # four overflows in a row stop at the minimum
    for _ in range(4):
        ls = ls.adjust(jnp.asarray(False))
    assert float(ls.loss_scale) == 2 ** 7


def test_dynamic_loss_scale_does_not_grow_past_float32():
    ls = amp.DynamicLossScale(jnp.float32(2.0 ** 127), counter=np.int32(1), period=2)
    grown = ls.adjust(jnp.asarray(True))
    assert float(grown.loss_scale) == 2.0 ** 127 and int(grown.counter) == 0


def test_loss_scales_scale_and_unscale(rng):
    grads = {"w": jnp.asarray(rng.standard_normal(3).astype(np.float32)), "b": jnp.float32(2.0)}
    for ls, s in ((amp.DynamicLossScale(jnp.float32(2 ** 12)), 2 ** 12),
                  (amp.StaticLossScale(8.0), 8), (amp.NoOpLossScale(), 1)):
        scaled = ls.scale(grads)
        np.testing.assert_array_equal(np.asarray(scaled["w"]), np.asarray(grads["w"]) * s)
        back = ls.unscale(scaled)
        np.testing.assert_array_equal(np.asarray(back["w"]), np.asarray(grads["w"]))
        assert ls.adjust(jnp.asarray(False)).loss_scale is not None
    static = fnx.jit(lambda ls, x: ls.scale(x))(amp.StaticLossScale(4.0), jnp.float32(2.0))
    assert float(static) == 8.0


def test_all_finite_and_select_tree():
    good = {"a": jnp.ones(3), "b": [jnp.zeros((2, 2)), jnp.arange(3)]}
    assert bool(amp.all_finite(good)) and bool(amp.all_finite({}))
    for bad in (jnp.inf, -jnp.inf, jnp.nan):
        tree = {"a": jnp.ones(3), "b": [jnp.asarray([[0.0, bad], [1.0, 2.0]]), jnp.arange(3)]}
        assert not bool(amp.all_finite(tree))
        assert not bool(fnx.jit(amp.all_finite)(tree))
    picked = amp.select_tree(jnp.asarray(False), good, fnx.tree.map(lambda x: x + 1, good))
    np.testing.assert_array_equal(np.asarray(picked["a"]), 2 * np.ones(3))
    with pytest.raises(amp.PolicyError, match="scalar boolean"):
        amp.select_tree(jnp.ones(2) > 0, good, good)


# --- training runs ---------------------------------------------------------------------------

def _data(seed=0, n=128):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8))
    y = np.sin(x @ rng.standard_normal((8, 1))) + 0.5 * np.tanh(x[:, :1] * x[:, 1:2])
    return jnp.asarray(x.astype(np.float32)), jnp.asarray(y.astype(np.float32))


def _train(policy, loss_scale, steps=60, seed=0):
    """Adam on an MLP with float32 master weights, computing under ``policy``; a step whose
    gradients are not finite is skipped and lowers the loss scale, as jmp's examples do."""
    x, y = _data(seed)
    params = nn.MLP(fnx.random.key(seed), [8, 32, 32, 1], activation=nn.gelu,
                    dtype=policy.param_dtype)
    opt = optim.adam(3e-3)

    def loss_fn(params, x, y):
        out = amp.apply_policy(lambda p, x: p(x), policy)(params, x)
        return jnp.mean((out - y) ** 2)

    @fnx.jit
    def step(params, opt_state, loss_scale):
        loss, grads = fnx.value_and_grad(lambda p: loss_scale.scale(loss_fn(p, x, y)))(params)
        grads = loss_scale.unscale(grads)
        finite = amp.all_finite(grads)
        updates, new_state = opt.update(grads, opt_state, params)
        new_params = optim.apply_updates(params, updates)
        params, opt_state = amp.select_tree(finite, (new_params, new_state), (params, opt_state))
        return params, opt_state, loss_scale.adjust(finite), loss_scale.unscale(loss), finite

    opt_state = opt.init(params)
    losses, finite_steps = [], []
    for _ in range(steps):
        params, opt_state, loss_scale, loss, finite = step(params, opt_state, loss_scale)
        losses.append(float(loss))
        finite_steps.append(bool(finite))
    assert params.layers[0].weight.dtype == F32            # master weights stay float32
    return np.array(losses), np.array(finite_steps), loss_scale


@pytest.fixture(scope="module")
def float32_run():
    return _train(amp.get_policy("float32"), amp.NoOpLossScale())


@pytest.mark.parametrize("compute, loss_scale, tol", [
    ("bfloat16", amp.NoOpLossScale(), 0.08),
    ("float16", amp.DynamicLossScale(jnp.float32(2 ** 15)), 0.02),
], ids=["bf16", "fp16"])
def test_half_precision_training_follows_float32(compute, loss_scale, tol, float32_run):
    ref, _, _ = float32_run
    assert ref[-1] < 0.3 * ref[0]                          # the float32 run learns
    policy = amp.get_policy(f"params=float32,compute={compute},output=float32")
    losses, finite, _ = _train(policy, loss_scale)
    assert finite.all()
    np.testing.assert_allclose(losses, ref, rtol=tol, atol=tol * ref[-1])


def test_float16_training_recovers_from_overflow(float32_run):
    """A loss scale of 2**28 overflows float16 (its largest value is 65504): the first steps'
    gradients are inf, so those steps are skipped and the scale halves each time until the
    gradients are finite, then training follows the float32 run from its start.
    (That growing the scale again may overflow again is the rule test's business.)"""
    ref, _, _ = float32_run
    policy = amp.get_policy("p=f32,c=f16,o=f32")
    losses, finite, ls = _train(policy, amp.DynamicLossScale(jnp.float32(2 ** 28), period=1000),
                                steps=70)
    skipped = int(np.argmax(finite))
    assert skipped >= 5 and not finite[:skipped].any() and finite[skipped:].all()
    # a skipped step leaves the parameters alone: the loss stays the first loss
    np.testing.assert_allclose(losses[:skipped + 1], ref[0], rtol=0.02)
    np.testing.assert_allclose(losses[skipped:], ref[:len(losses) - skipped], rtol=0.02,
                               atol=0.02 * ref[-1])
    # the scale came down by 2**skipped (and a period of 1000 steps lets it grow no more)
    assert float(ls.loss_scale) == 2.0 ** (28 - skipped) and int(ls.counter) == 70 - skipped


@pytest.mark.cuda
def test_half_precision_step_on_gpu_matches_cpu(gpu, cpu):
    x, y = _data(3, n=64)
    params = nn.MLP(fnx.random.key(3), [8, 32, 1], activation=nn.gelu, dtype=jnp.float32)
    for compute in ("bfloat16", "float16"):
        policy = amp.get_policy(f"params=float32,compute={compute},output=float32")

        def loss_fn(p, x, y):
            out = amp.apply_policy(lambda p, x: p(x), policy)(p, x)
            return jnp.mean(nn.log_softmax(jnp.concatenate([out, -out], 1))[:, 0] + y[:, 0])
        step = fnx.jit(fnx.value_and_grad(loss_fn))
        want = step(*(fnx.device_put(t, cpu) for t in (params, x, y)))
        on = [fnx.device_put(t, gpu) for t in (params, x, y)]
        for _ in range(3):      # warm-up, capture, replay
            got = step(*on)
            for a, b in zip(fnx.tree.leaves(got), fnx.tree.leaves(want)):
                assert a.dtype == b.dtype == F32
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-2, atol=2e-3)
