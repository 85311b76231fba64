"""CUDA graph replay of lowered programs: same results as eager over many calls, returned
arrays never overwritten, no memory growth, and an explained eager fallback."""
import json

import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp

pytestmark = [pytest.mark.cuda, pytest.mark.x32]   # float32 programs, as users run them



def _train_step(params, x, labels):
    def loss(params):
        h = x
        for w, b in params[:-1]:
            h = nn.relu(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        return -jnp.mean(jnp.sum(nn.log_softmax(logits) * nn.one_hot(labels, 10), -1))
    value, grads = fnx.value_and_grad(loss)(params)
    new = fnx.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return value, new


def _graphed(f, args, gpu):
    from fnx.cuda.lowering import lower
    from fnx.cuda.graph import GraphExecutable
    leaves, _ = fnx.tree_util.tree_flatten(args)
    closed = fnx.make_jaxpr(lambda *l: fnx.tree_util.tree_leaves(
        f(*fnx.tree_util.tree_unflatten(fnx.tree_util.tree_structure(args), l))))(*leaves)
    return GraphExecutable(lower(closed.jaxpr, closed.consts, gpu)), closed


def _mlp(gpu, rng, sizes=(32, 64, 10), batch=16):
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    return fnx.device_put((params, x, labels), gpu)


def test_replay_matches_eager_over_many_calls(gpu):
    import cupy as cp
    rng = np.random.default_rng(0)
    args = _mlp(gpu, rng)
    exe, closed = _graphed(_train_step, args, gpu)
    leaves = [a._value for a in fnx.tree_util.tree_leaves(args)]
    for k in range(6):
        x = cp.asarray(rng.standard_normal(leaves[-2].shape).astype(np.float32))
        leaves[-2] = x
        outs = exe(*leaves)
        ref = fnx.core.jaxpr.eval_jaxpr(closed.jaxpr, closed.consts,
                                        *[fnx.core.core.Array(l, gpu) for l in leaves])
        for o, r in zip(outs, ref):
            np.testing.assert_allclose(cp.asnumpy(o), np.asarray(r), rtol=2e-5, atol=2e-6)
        leaves[:-2] = outs[1:]   # feed the updated parameters back, as training does
    assert exe.graph is not None, exe.describe()


def test_returned_arrays_are_never_overwritten(gpu):
    import cupy as cp
    exe, _ = _graphed(lambda x: (jnp.tanh(x) * 2.0,), (jnp.ones(8),), gpu)
    first = exe(cp.full(8, 1.0, np.float32))[0]
    second = exe(cp.full(8, 2.0, np.float32))[0]
    third = exe(cp.full(8, 3.0, np.float32))[0]
    assert exe.graph is not None
    np.testing.assert_allclose(cp.asnumpy(first), np.tanh(1.0) * 2, rtol=1e-6)
    np.testing.assert_allclose(cp.asnumpy(second), np.tanh(2.0) * 2, rtol=1e-6)
    np.testing.assert_allclose(cp.asnumpy(third), np.tanh(3.0) * 2, rtol=1e-6)


def test_results_the_user_dropped_are_returned_without_copies(gpu):
    """Two graphs alternate: a loop that keeps only the latest results gets each graph's own
    result buffers back; results the user keeps are never overwritten by later calls, nor
    returned again."""
    import cupy as cp
    exe, _ = _graphed(lambda x: (jnp.tanh(x) * 2.0, jnp.sum(x)), (jnp.ones(8),), gpu)
    seen = []
    for k in range(10):
        outs = exe(cp.full(8, float(k), np.float32))
        np.testing.assert_allclose(cp.asnumpy(outs[0]), np.tanh(float(k)) * 2, rtol=1e-6)
        np.testing.assert_allclose(float(outs[1]), 8.0 * k, rtol=1e-6)
        if k >= 4:
            seen.append(outs[0].data.ptr)
    assert "captured graphs alternate" in exe.describe()
    assert len(set(seen)) == 2, seen
    kept = exe(cp.full(8, 0.5, np.float32))
    for k in range(5):
        outs = exe(cp.full(8, -float(k), np.float32))
        assert outs[0].data.ptr != kept[0].data.ptr
        np.testing.assert_allclose(cp.asnumpy(outs[0]), np.tanh(-float(k)) * 2, rtol=1e-6)
    np.testing.assert_allclose(cp.asnumpy(kept[0]), np.tanh(0.5) * 2, rtol=1e-6)
    np.testing.assert_allclose(float(kept[1]), 4.0, rtol=1e-6)


def test_a_view_of_a_dropped_result_keeps_its_graph_from_replaying(gpu):
    """The graph's lease lives as long as any array over its results: a slice kept after the
    result itself is dropped still holds them."""
    import cupy as cp
    exe, _ = _graphed(lambda x: (jnp.tanh(x) * 2.0, jnp.sum(x)), (jnp.ones(8),), gpu)
    for k in range(4):
        exe(cp.full(8, float(k), np.float32))
    assert "captured graphs alternate" in exe.describe()
    views = []
    for k in range(6):
        out = exe(cp.arange(8, dtype=np.float32) + k)[0]
        views.append((k, out[2:5]))
        del out
    for k, view in views:
        np.testing.assert_allclose(cp.asnumpy(view), np.tanh(np.arange(2, 5) + k) * 2,
                                   rtol=1e-6)


def test_a_result_that_is_an_input_is_always_copied(gpu):
    import cupy as cp
    exe, _ = _graphed(lambda x, y: (x, y * 2.0), (jnp.ones(4), jnp.ones(4)), gpu)
    firsts = []
    for k in range(6):
        x = cp.full(4, float(k), np.float32)
        outs = exe(x, x)
        firsts.append(outs[0])
        if k >= 1:      # replays (the eager first call may hand back the input's buffer)
            assert outs[0].data.ptr != x.data.ptr
    assert "captured graphs alternate" not in exe.describe()
    for k, o in enumerate(firsts):
        np.testing.assert_array_equal(cp.asnumpy(o), float(k))


def test_memory_does_not_grow_over_1000_steps(gpu):
    import cupy as cp
    rng = np.random.default_rng(1)
    args = _mlp(gpu, rng)
    exe, _ = _graphed(_train_step, args, gpu)
    leaves = [a._value for a in fnx.tree_util.tree_leaves(args)]
    pool = cp.get_default_memory_pool()
    for step in range(1000):
        outs = exe(*leaves)
        leaves[:-2] = outs[1:]
        if step == 10:
            cp.cuda.get_current_stream().synchronize()
            used_early = pool.used_bytes()
    cp.cuda.get_current_stream().synchronize()
    assert pool.used_bytes() <= used_early, (pool.used_bytes(), used_early)
    assert float(cp.asnumpy(outs[0])) < float(np.log(10))   # the loss went down


def test_capture_failure_falls_back_with_a_reason(gpu, capsys):
    import cupy as cp

    def f(x):
        y = x.at[jnp.array([0, 0, 1])].multiply(2.0)
        fnx.debug.print("y = {}", y)       # a host callback: it cannot be captured
        return (y,)
    exe, _ = _graphed(f, (jnp.ones(4),), gpu)
    for _ in range(3):
        out = exe(cp.ones(4, np.float32))[0]
    np.testing.assert_allclose(cp.asnumpy(out), [4.0, 2.0, 1.0, 1.0])
    assert exe.graph is None and "capture failed" in exe.reason
    assert "debug_callback" in exe.reason      # the launch that failed is named
    assert "eager launches" in exe.describe()
    assert capsys.readouterr().out.count("y = ") == 3


def test_temporaries_freed_inside_the_graph_never_reach_user_arrays(gpu):
    """Ops whose CuPy implementation allocates and frees temporaries (take clamps its indices)
    replay many times while the caller allocates arrays of the same size in between."""
    import cupy as cp
    idx = fnx.device_put(np.array([3, 0, 2, 1], np.int32), gpu)

    def f(x):
        return (jnp.take(x, idx) * 2.0 + jnp.take(x[::-1], idx),)
    exe, _ = _graphed(f, (jnp.ones(4),), gpu)
    kept = []
    for k in range(50):
        x = cp.arange(4, dtype=np.float32) + k
        out = exe(x)[0]
        kept.append((k, out, cp.full(4, -1.0, np.float32)))   # user allocations in between
    for k, out, filler in kept:
        xs = np.arange(4, dtype=np.float32) + k
        np.testing.assert_allclose(cp.asnumpy(out), xs[[3, 0, 2, 1]] * 2 + xs[::-1][[3, 0, 2, 1]])
        np.testing.assert_array_equal(cp.asnumpy(filler), -1.0)


def _jit_step_exe(step):
    from fnx.core.jit import _executables
    traced = next(iter(step._cache.values()))
    return next(e for k, e in _executables[traced.jaxpr].items() if k[1])


def test_donated_parameters_are_updated_in_place(gpu):
    rng = np.random.default_rng(2)
    params, x, labels = _mlp(gpu, rng)
    ref_step = fnx.jit(_train_step)
    step = fnx.jit(_train_step, donate_argnums=0)
    ref_params = fnx.tree_util.tree_map(lambda a: a + 0.0, params)
    for k in range(6):
        x = fnx.device_put(rng.standard_normal(x.shape).astype(np.float32), gpu) if k % 2 else x
        ref_value, ref_params = ref_step(ref_params, x, labels)
        donated = params
        value, params = step(params, x, labels)
        np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-5)
        for a, b in zip(fnx.tree_util.tree_leaves(params), fnx.tree_util.tree_leaves(ref_params)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
    exe = _jit_step_exe(step)
    assert exe.graph is not None and exe.eager_fallbacks == 0, exe.describe()
    assert exe.executable.in_place == len(fnx.tree_util.tree_leaves(params)), exe.describe()
    with pytest.raises(fnx.core.errors.DeletedArrayError, match="donated to jit"):
        np.asarray(donated[0][0])


def test_donation_never_overwrites_results_the_user_kept(gpu):
    rng = np.random.default_rng(3)
    params, x, labels = _mlp(gpu, rng)
    step = fnx.jit(_train_step, donate_argnums=0)
    for _ in range(3):
        _, params = step(params, x, labels)
    kept = params
    kept_host = [np.asarray(a) for a in fnx.tree_util.tree_leaves(kept)]
    # donate other arrays while the last results stay alive: they must not change
    for _ in range(3):
        other = fnx.tree_util.tree_map(lambda a: a * 1.5, kept)
        _, new = step(other, x, labels)
    for a, h in zip(fnx.tree_util.tree_leaves(kept), kept_host):
        np.testing.assert_array_equal(np.asarray(a), h)
    # and a view of a result taken eagerly survives the next in-place step
    del kept, other, params
    _, params = step(new, x, labels)
    del new
    view = params[0][0].T
    before = np.asarray(view)
    fallbacks = _jit_step_exe(step).eager_fallbacks
    _, params = step(params, x, labels)
    np.testing.assert_array_equal(np.asarray(view), before)
    assert _jit_step_exe(step).eager_fallbacks == fallbacks + 1


def test_an_array_passed_twice_is_not_donated(gpu):
    w = fnx.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), gpu)
    f = fnx.jit(lambda a, b: a * 2.0 + b, donate_argnums=0)
    out = f(w, w)
    np.testing.assert_allclose(np.asarray(out), np.arange(6).reshape(2, 3) * 3.0)
    assert not w.is_deleted()


def test_memory_does_not_grow_over_1000_donated_steps(gpu):
    import cupy as cp
    rng = np.random.default_rng(4)
    params, x, labels = _mlp(gpu, rng)
    step = fnx.jit(_train_step, donate_argnums=0)
    pool = cp.get_default_memory_pool()
    for k in range(1000):
        value, params = step(params, x, labels)
        if k == 0:      # programs are shared by jaxpr: earlier tests' fallbacks count here
            fallbacks = _jit_step_exe(step).eager_fallbacks
        if k == 10:
            cp.cuda.get_current_stream().synchronize()
            used_early = pool.used_bytes()
    cp.cuda.get_current_stream().synchronize()
    assert pool.used_bytes() <= used_early
    assert float(value) < float(np.log(10))
    assert _jit_step_exe(step).eager_fallbacks == fallbacks


def test_adam_update_of_every_parameter_is_one_launch(gpu):
    """optax-style Adam under jit: the moments, bias corrections and parameter updates of all
    parameters (four shapes) fuse into one multi-tensor kernel, besides the step counter."""
    import fnx.optim as optim
    rng = np.random.default_rng(5)
    shapes = [(33, 17), (17,), (17, 5), (5,)]
    params = [fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu) for s in shapes]
    opt = optim.adam(1e-2)
    state = opt.init(params)

    @fnx.jit
    def update(params, grads, state):
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state
    ref_p = [np.asarray(p, np.float64) for p in params]
    m = [np.zeros_like(p) for p in ref_p]
    v = [np.zeros_like(p) for p in ref_p]
    for t in range(1, 4):
        grads = [fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu) for s in shapes]
        params, state = update(params, grads, state)
        for k, g in enumerate(grads):
            g = np.asarray(g, np.float64)
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            ref_p[k] = ref_p[k] - 1e-2 * (m[k] / (1 - 0.9 ** t)) / (
                np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    for p, r in zip(params, ref_p):
        np.testing.assert_allclose(np.asarray(p), r, rtol=1e-4, atol=1e-5)
    from fnx.core.jit import _executables
    traced = next(iter(update._cache.values()))
    exe = next(iter(_executables[traced.jaxpr].values()))
    multi = [label for label in exe.executable.labels if label.startswith("multi")]
    assert len(multi) == 1 and "multi[4]" in multi[0], exe.describe()
    assert exe.num_launches <= 3, exe.describe()


def _relu_mlp(gpu, rng, sizes=(64, 128, 128, 32), batch=128):
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
               (rng.standard_normal(n) * 0.1).astype(np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch).astype(np.int32)
    return params, x, labels


def _classifier_step(params, x, labels):
    classes = params[-1][1].shape[0]

    def loss(params):
        h = x
        for w, b in params[:-1]:
            h = nn.relu(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(nn.log_softmax(h @ w + b) * nn.one_hot(labels, classes), -1))
    value, grads = fnx.value_and_grad(loss)(params)
    return value, fnx.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def _classifier_step_float64(params, x, labels):
    params = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    hs, zs = [x.astype(np.float64)], []
    for w, b in params[:-1]:
        zs.append(hs[-1] @ w + b)
        hs.append(np.maximum(zs[-1], 0.0))
    logits = hs[-1] @ params[-1][0] + params[-1][1]
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    onehot = np.eye(logits.shape[1])[labels]
    g = (np.exp(logp) - onehot) / len(x)
    new = [None] * len(params)
    for i in reversed(range(len(params))):
        w, b = params[i]
        new[i] = (w - 0.1 * (hs[i].T @ g), b - 0.1 * g.sum(0))
        if i:
            g = (g @ w.T) * (zs[i - 1] > 0)
    return -np.mean(np.sum(logp * onehot, 1)), new


def _step_matches_float64(exe, leaves, params, x, labels):
    """One call of ``exe`` (a ``_classifier_step``) on ``leaves``, checked against the float64
    step from ``params``; the new parameters go back into ``leaves``, as training does, and are
    returned on the host."""
    import cupy as cp
    outs = exe(*leaves)
    loss, new = _classifier_step_float64(params, x, labels)
    np.testing.assert_allclose(float(outs[0]), loss, rtol=1e-5)
    for o, r in zip(outs[1:], [a for wb in new for a in wb]):
        np.testing.assert_allclose(cp.asnumpy(o), r, rtol=1e-4, atol=1e-5)
    leaves[:-2] = outs[1:]
    return [(cp.asnumpy(w), cp.asnumpy(b)) for w, b in zip(outs[1::2], outs[2::2])]


@pytest.mark.parametrize("path", ["fnx", "lt"])
def test_relu_pairs_on_either_path_match_float64_over_replays(gpu, path):
    from fnx.cuda.lt_backward import ReluPair
    """Each hidden ReLU layer and its backward run fnx's kernels or cuBLASLt's RELU_AUX_BIAS +
    DRELU_BGRAD pair (the choice forced here); replayed steps match a float64 train step."""
    import cupy as cp
    from fnx.cuda import gemm_table
    rng = np.random.default_rng(11)
    params, x, labels = _relu_mlp(gpu, rng)
    args = fnx.device_put((params, x, labels), gpu)
    exe, _ = _graphed(_classifier_step, args, gpu)
    pairs = [c for c in exe.executable.choices if isinstance(c, ReluPair)]
    assert len(pairs) == 2, exe.executable.describe()
    saved = {p.key: gemm_table.TABLE.choices.get(p.key) for p in pairs}
    try:
        for p in pairs:
            gemm_table.TABLE.choices[p.key] = "fnx" if path == "fnx" else "lt:0:0"
            assert path == "fnx" or p._algos() is not None      # cuBLASLt runs this problem
        leaves = [a._value for a in fnx.tree_util.tree_leaves(args)]
        for _ in range(4):
            x = rng.standard_normal(x.shape).astype(np.float32)
            leaves[-2] = cp.asarray(x)
            params = _step_matches_float64(exe, leaves, params, x, labels)
        assert exe.graph is not None, exe.describe()
        text = exe.executable.describe()
        assert ("cuBLASLt RELU_AUX_BIAS + DRELU_BGRAD" in text) == (path == "lt"), text
    finally:
        for key, choice in saved.items():
            if choice is None:
                gemm_table.TABLE.choices.pop(key, None)
            else:
                gemm_table.TABLE.choices[key] = choice


def test_relu_pair_is_timed_on_the_first_call_and_remembered(gpu, tmp_path, monkeypatch):
    import cupy as cp
    from fnx.cuda.lt_backward import ReluPair
    from fnx.cuda import gemm_table
    monkeypatch.setenv("FNX_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(12)
    params, x, labels = _relu_mlp(gpu, rng, sizes=(96, 160, 64, 24), batch=64)
    args = fnx.device_put((params, x, labels), gpu)
    exe, closed = _graphed(_classifier_step, args, gpu)
    pairs = [c for c in exe.executable.choices if isinstance(c, ReluPair)]
    assert len(pairs) == 2
    for p in pairs:
        gemm_table.TABLE.choices.pop(p.key, None)
    leaves = [a._value for a in fnx.tree_util.tree_leaves(args)]
    first = [cp.asnumpy(o) for o in exe(*leaves)]
    choices = [gemm_table.TABLE.choices.get(p.key) for p in pairs]
    assert all(c == "fnx" or c.startswith("lt:") for c in choices), choices
    with open(gemm_table.cache_file()) as fh:
        saved = json.load(fh)
    assert [saved.get(p.key) for p in pairs] == choices
    for _ in range(3):      # later calls, on whichever path was chosen, give the same step
        for o, f in zip(exe(*leaves), first):
            np.testing.assert_allclose(cp.asnumpy(o), f, rtol=1e-5, atol=1e-6)


def test_gemm_kernels_still_compiling_join_by_a_new_capture(gpu, tmp_path, monkeypatch):
    """A first call does not wait for generated GEMM kernels to compile: their problems are
    timed without them, provisionally (kept off the disk), and they compile after it. Once they
    are built, the next call times them and captures the graph again. Every call matches a
    float64 train step."""
    from fnx.cuda import compile as kernels
    from fnx.cuda import gemm_table
    monkeypatch.setenv("FNX_CACHE_DIR", str(tmp_path))
    # a table of its own: earlier tests' choices for the same problems must not count
    monkeypatch.setattr(gemm_table, "TABLE", gemm_table.ChoiceTable())
    # the split GEMM kernels count as not built until released, whatever NVRTC's speed
    held, callbacks = [True], []
    real_ready = kernels.ready

    def tiles(unit):
        return unit[1].startswith("fnx_tiles")
    monkeypatch.setattr(kernels, "ready", lambda u: not (held[0] and tiles(u)) and real_ready(u))
    monkeypatch.setattr(kernels, "when_compiled", lambda units, done: callbacks.append(done))
    rng = np.random.default_rng(21)
    params, x, labels = _relu_mlp(gpu, rng, sizes=(120, 224, 200, 16), batch=96)
    args = fnx.device_put((params, x, labels), gpu)
    exe, _ = _graphed(_classifier_step, args, gpu)
    leaves = [a._value for a in fnx.tree_util.tree_leaves(args)]

    def call_and_check():
        nonlocal params
        params = _step_matches_float64(exe, leaves, params, x, labels)

    earlier = set(gemm_table.TABLE.provisional)
    call_and_check()
    waiting = {k: units for k, units in gemm_table.TABLE.provisional.items()
               if k not in earlier and any(tiles(u) for u in units)}
    assert waiting and callbacks, "no product of this step offers a split GEMM kernel"
    assert not any(gemm_table.TABLE.choices[k].startswith("tiles") for k in waiting)
    with open(gemm_table.cache_file()) as fh:
        assert not set(waiting) & set(json.load(fh))
    call_and_check()
    assert exe.graph is not None and exe.recaptures == 0, exe.describe()
    held[0] = False
    for units in waiting.values():
        for unit in units:
            kernels.kernel(*unit)       # built for real by now, or built here
    for done in callbacks:
        done()
    for _ in range(3):
        call_and_check()
    assert exe.graph is not None and exe.recaptures == 1, exe.describe()
    assert not set(waiting) & set(gemm_table.TABLE.provisional)
    with open(gemm_table.cache_file()) as fh:
        assert set(waiting) <= set(json.load(fh))
    assert "captured again 1 time" in exe.describe()


@pytest.mark.parametrize("count", [2, 7, 130])
def test_one_copy_kernel_moves_any_list_of_buffers(gpu, count):
    """The copies before and after a replay: any number of buffers (more than one launch's
    table holds), any byte size, and pointers not 16-byte aligned, copied exactly."""
    import cupy as cp
    from fnx.cuda.copies import MultiCopy
    rng = np.random.default_rng(count)
    sizes = [int(n) for n in rng.integers(0, 5000, count)] + [1, 16, 70_001]
    backing = [cp.asarray(rng.integers(0, 256, n + 3, dtype=np.uint8)) for n in sizes]
    srcs = [b[k % 3: k % 3 + n] for k, (b, n) in enumerate(zip(backing, sizes))]
    dsts = [cp.full(n + 1, 7, np.uint8)[(k + 1) % 2:(k + 1) % 2 + n]
            for k, n in enumerate(sizes)]
    MultiCopy(sizes)(srcs, dsts)
    for s_, d in zip(srcs, dsts):
        np.testing.assert_array_equal(cp.asnumpy(d), cp.asnumpy(s_))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.complex128])
def test_dense_copies_any_view_in_c_order(gpu, dtype):
    """Strided operands made dense (fnx.cuda.copies.dense) by fnx's kernel: transposes,
    reversed and stepped views; CuPy's copy for 16-byte elements."""
    import cupy as cp
    from fnx.cuda.copies import _folded, dense
    rng = np.random.default_rng(4)
    base = cp.asarray((rng.standard_normal((6, 5, 4, 3)) * 10).astype(dtype))
    views = [base.transpose(1, 0, 2, 3), base.transpose(3, 2, 1, 0), base[:, ::2, :, ::-1],
             base[::-1].transpose(0, 1, 3, 2), base[2].T, base[:, 1, :, 2],
             base.transpose(0, 2, 1, 3), base.transpose(0, 1, 3, 2)]
    folded = 0
    for v in views:
        got = dense(v)
        assert got.flags.c_contiguous and got.shape == v.shape and got.dtype == v.dtype
        np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(v))
        folded += _folded(v) is not None
    assert folded == (len(views) if np.dtype(dtype).itemsize <= 8 else 0)
