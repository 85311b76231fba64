"""Nothing falls back: under jit on the GPU, every op spec, every control-flow program and the
training steps run as one CUDA graph, and match the CPU.

A program that cannot be captured still runs (its launches eagerly) and ``describe()`` says why;
these tests fail with that reason. Exemptions are listed with theirs.
"""
import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp
from fnx import lax
from op_specs import SPECS, SPEC_IDS

pytestmark = pytest.mark.cuda

# spec name -> why it may run without a graph
EXEMPT = {
    **{s.name: "complex values: the GPU backend runs the program as eager CuPy calls"
       for s in SPECS if "complex" in s.tags},
}


def _on(backend, xs):
    return [fnx.device_put(x, backend) for x in xs]


def assert_one_graph(f, args, cpu_args, *, rtol=1e-5, atol=1e-6, calls=3, later=()):
    """``jit(f)`` on the GPU replays one captured graph from its second call, and its results
    on every call match ``f`` on the CPU; ``later``: more ``(args, cpu_args)`` to replay it on."""
    jitted = fnx.jit(f)

    def check(args, cpu_args):
        got = fnx.tree_util.tree_leaves(jitted(*args))
        want = fnx.tree_util.tree_leaves(f(*cpu_args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                       rtol=rtol, atol=atol)
    for _ in range(calls):       # eager warm-up, capture, replay
        check(args, cpu_args)
    exe = jitted.lower(*args).compile()
    assert exe.graph is not None, f"not one CUDA graph: {exe.reason}\n{exe.describe()}"
    for more in later:
        check(*more)
    assert exe.graph is not None and exe.eager_fallbacks == 0
    return exe


CAPTURED = [s for s in SPECS if s.name not in EXEMPT]


@pytest.mark.parametrize("spec", CAPTURED, ids=[s.name for s in CAPTURED])
def test_every_op_spec_is_one_graph(spec, gpu, cpu):
    args = spec.draw(np.random.default_rng(11))
    assert_one_graph(spec.fn, _on(gpu, args), _on(cpu, args), atol=max(spec.atol, 1e-5))


GRAD_SPECS = [s for s in CAPTURED if s.grad]


@pytest.mark.parametrize("spec", GRAD_SPECS, ids=[s.name for s in GRAD_SPECS])
def test_every_gradient_is_one_graph(spec, gpu, cpu):
    args = spec.draw(np.random.default_rng(12))
    floats = [i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.floating)]

    def loss(*xs):
        return jnp.sum(jnp.sin(spec.fn(*xs)))
    g = fnx.grad(loss, argnums=tuple(floats))
    assert_one_graph(g, _on(gpu, args), _on(cpu, args), atol=max(spec.atol, 1e-5) * 10,
                     rtol=1e-4)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _scan_rnn(w, u, xs, h0):
    def cell(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, jnp.sum(h * h)
    return lax.scan(cell, h0, xs)


def _scan_rnn_loss(w, u, xs, h0):
    h, ys = _scan_rnn(w, u, xs, h0)
    return jnp.mean(h) + jnp.mean(ys)


CONTROL_FLOW = {
    "scan": (_scan_rnn, lambda: [_rand(8, 8, seed=1) * 0.3, _rand(4, 8, seed=2) * 0.3,
                                 _rand(6, 3, 4, seed=3), _rand(3, 8, seed=4)]),
    "scan_reverse": (lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(5), xs,
                                         reverse=True),
                     lambda: [_rand(7, 5, seed=5)]),
    "grad_scan": (fnx.grad(_scan_rnn_loss, argnums=(0, 1, 2, 3)),
                  lambda: [_rand(8, 8, seed=1) * 0.3, _rand(4, 8, seed=2) * 0.3,
                           _rand(6, 3, 4, seed=3), _rand(3, 8, seed=4)]),
    "scan_long": (lambda w, xs: lax.scan(lambda c, x: (jnp.tanh(c @ w + x), c.sum()),
                                         jnp.zeros(8), xs),
                  lambda: [_rand(8, 8, seed=14) * 0.3, _rand(3000, 8, seed=15)]),
    "scan_long_reverse": (lambda xs: lax.scan(lambda c, x: (c * 0.9 + x, c * x), jnp.ones(3),
                                              xs, reverse=True),
                          lambda: [_rand(2500, 3, seed=16)]),
    "fori_static": (lambda x: lax.fori_loop(0, 5, lambda i, c: jnp.sin(c) * 1.1 + i, x),
                    lambda: [_rand(16, seed=6)]),
    "fori_traced": (lambda n, x: lax.fori_loop(0, n, lambda i, c: jnp.cos(c) + 0.1 * i, x),
                    lambda: [np.int32(6), _rand(16, seed=7)]),
    "while": (lambda x: lax.while_loop(lambda c: jnp.sum(c[0]) < 50.0,
                                       lambda c: (c[0] * 1.5 + 1.0, c[1] + 1),
                                       (x, jnp.int32(0))),
              lambda: [np.abs(_rand(4, seed=8))]),
    "cond": (lambda p, x: lax.cond(p > 0, lambda x: jnp.sin(x) @ x.T, lambda x: x @ x.T, x),
             lambda: [np.float32(0.3), _rand(4, 4, seed=9)]),
    "cond_false": (lambda p, x: lax.cond(p > 0, lambda x: jnp.sin(x), lambda x: x * 2.0, x),
                   lambda: [np.float32(-0.3), _rand(4, 4, seed=10)]),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda x: x * x], x),
               lambda: [np.int32(2), _rand(5, seed=11)]),
    "map": (lambda xs: lax.map(lambda x: jnp.sum(x @ x.T), xs), lambda: [_rand(5, 3, 3, seed=12)]),
    "grad_cond": (fnx.grad(lambda p, x: jnp.sum(lax.cond(p > 0, jnp.sin, jnp.cos, x)),
                           argnums=1),
                  lambda: [np.float32(0.5), _rand(6, seed=13)]),
}


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_control_flow_is_one_graph(name, gpu, cpu):
    f, draw = CONTROL_FLOW[name]
    args = draw()
    # replays on other values: other trip counts, the other branch
    others = [[-a if a.ndim == 0 and a.dtype.kind == "f" else
               (a + 1 if a.ndim == 0 else a * 0.5) for a in map(np.asarray, args)],
              [a * 2 if a.ndim == 0 or a.dtype.kind != "f" else a * 1.5
               for a in map(np.asarray, args)]]
    exe = assert_one_graph(f, _on(gpu, args), _on(cpu, args), rtol=1e-4, atol=1e-5,
                           later=[(_on(gpu, o), _on(cpu, o)) for o in others])
    if name.startswith("scan_long"):     # too long to unroll: one conditional node
        assert "WHILE node" in exe.describe(), exe.describe()


def _mlp_adam_step(params, opt_state, x, labels, *, opt):
    def loss(params):
        h = x
        for w, b in params[:-1]:
            h = nn.gelu(h @ w + b)
        w, b = params[-1]
        return jnp.mean(nn.softmax_cross_entropy_with_integer_labels(h @ w + b, labels))
    value, grads = fnx.value_and_grad(loss)(params)
    updates, opt_state = opt.update(grads, opt_state, params)
    return value, fnx.optim.apply_updates(params, updates), opt_state


def test_adam_training_step_is_one_graph(gpu, cpu):
    import functools
    rng = np.random.default_rng(14)
    sizes = (20, 32, 10)
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
               rng.standard_normal(n).astype(np.float32) * 0.1)
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((16, 20)).astype(np.float32)
    labels = rng.integers(0, 10, 16).astype(np.int32)
    opt = fnx.optim.adam(1e-2)
    step = functools.partial(_mlp_adam_step, opt=opt)

    def args_on(backend):
        p = fnx.device_put(params, backend)
        return [p, opt.init(p), fnx.device_put(x, backend), fnx.device_put(labels, backend)]
    assert_one_graph(step, args_on(gpu), args_on(cpu), rtol=1e-4, atol=1e-5)


def _gru_loss(params, xs, h0, targets):
    wz, uz, wr, ur, wh, uh, wo = params

    def cell(h, x):
        z = nn.sigmoid(x @ wz + h @ uz)
        r = nn.sigmoid(x @ wr + h @ ur)
        c = jnp.tanh(x @ wh + (r * h) @ uh)
        h = (1 - z) * h + z * c
        return h, h @ wo
    _, ys = lax.scan(cell, h0, xs)
    return jnp.mean((ys - targets) ** 2)


def test_gru_training_step_through_scan_is_one_graph(gpu, cpu):
    rng = np.random.default_rng(15)
    d, hdim, t, b = 6, 16, 12, 4
    params = [rng.standard_normal(s).astype(np.float32) * 0.3
              for s in [(d, hdim), (hdim, hdim)] * 3 + [(hdim, 3)]]
    xs = rng.standard_normal((t, b, d)).astype(np.float32)
    targets = rng.standard_normal((t, b, 3)).astype(np.float32)
    h0 = np.zeros((b, hdim), np.float32)

    def step(params, xs, h0, targets):
        loss, grads = fnx.value_and_grad(_gru_loss)(params, xs, h0, targets)
        return loss, [p - 0.1 * g for p, g in zip(params, grads)]
    exe = assert_one_graph(step, [fnx.device_put(params, gpu)] + _on(gpu, [xs, h0, targets]),
                           [fnx.device_put(params, cpu)] + _on(cpu, [xs, h0, targets]),
                           rtol=1e-4, atol=1e-5)
    assert "scan[length=12" in exe.describe()


def test_conv_net_training_step_is_one_graph(gpu, cpu):
    rng = np.random.default_rng(16)
    x = rng.standard_normal((4, 3, 10, 10)).astype(np.float32)
    labels = rng.integers(0, 5, 4).astype(np.int32)
    params = [rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
              rng.standard_normal(8).astype(np.float32) * 0.1,
              rng.standard_normal((8 * 5 * 5, 5)).astype(np.float32) * 0.1]

    def loss(params, x, labels):
        k, b, w = params
        h = lax.conv_general_dilated(x, k, (1, 1), "SAME") + b[None, :, None, None]
        h = nn.relu(h)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        logits = h.reshape(h.shape[0], -1) @ w
        return jnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, labels))

    def step(params, x, labels):
        value, grads = fnx.value_and_grad(loss)(params, x, labels)
        return value, [p - 0.05 * g for p, g in zip(params, grads)]
    assert_one_graph(step, [fnx.device_put(params, gpu)] + _on(gpu, [x, labels]),
                     [fnx.device_put(params, cpu)] + _on(cpu, [x, labels]), rtol=1e-4,
                     atol=1e-5)


def test_as_text_on_the_gpu_prints_its_fusion_groups(gpu):
    x = fnx.device_put(np.ones(3, np.float32), gpu)
    lowered = fnx.jit(lambda x: jnp.exp(x) * 2.0).lower(x)
    assert [g.kind for g in lowered.fusion_groups] == ["elementwise"]
    assert "GPU launches" in lowered.as_text()


def _conv_loss(w, x):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.mean(nn.relu(y) ** 2)


def _scan_loss(w, xs):
    def cell(h, x):
        h = jnp.tanh(x @ w + h)
        return h, jnp.sum(h * h)
    _, ys = lax.scan(cell, jnp.zeros((4, 8), jnp.float32), xs)
    return jnp.mean(ys)


@pytest.mark.x32
@pytest.mark.parametrize("loss,shapes", [
    (_conv_loss, [(3, 3, 4, 6), (2, 8, 8, 4)]),
    (_scan_loss, [(8, 8), (5, 4, 8)]),
    (lambda w, x: jnp.sum(nn.log_softmax(nn.relu(x @ w) @ w.T) ** 2), [(16, 12), (8, 16)]),
], ids=["conv", "scan", "dense"])
def test_the_printed_launches_are_the_launches_that_run(gpu, loss, shapes):
    """``lower().fusion_groups`` and the lowered program come from one walk: the same launches
    in the same order."""
    from fnx.cuda.lowering import lower
    rng = np.random.default_rng(3)
    args = _on(gpu, [rng.standard_normal(s).astype(np.float32) for s in shapes])
    step = fnx.jit(fnx.value_and_grad(loss))
    lowered = step.lower(*args)
    groups = lowered.fusion_groups
    exe = lower(lowered.traced.jaxpr, [], gpu)     # as jit compiles it
    kernel_labels = {"elementwise": "fused[", "rows": "rows[", "columns": "columns[",
                     "reduce": "reduce[", "multi": "multi[", "gradient_step": "gemm_update"}
    assert len(groups) == len(exe.labels), "\n".join(exe.labels)
    for g, label in zip(groups, exe.labels):
        assert label.startswith(kernel_labels.get(g.kind, g.eqns[0].primitive.name)), (g, label)
