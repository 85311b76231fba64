"""CPU jit benchmark: fnx beside JAX (XLA on the CPU) and hand-written NumPy, in one run.

    python3 benchmarks/cpu_jit.py

Measures (1) the cost of a cached jitted call of ``x + 1`` on 4 floats, (2) the MLP train step
784-512-512-10, batch 128, softmax cross-entropy, SGD, float32, (3) fnx's first call of that
step (trace + lowering + run), and (4) three loops of small arrays, where the per-equation
overhead is the time: an RK4 Lorenz integration (``fori_loop``, 2,000 steps of a 3-vector), a
GRU-like ``scan`` (200 steps, 16x16) and a ``while_loop`` Newton iteration. Prints times and
ratios.
"""
from __future__ import annotations

import time

import numpy as np

SIZES, BATCH, LR = [784, 512, 512, 10], 128, 0.01


def median_us(fn, reps=7, number=None):
    fn()
    if number is None:
        t = time.perf_counter()
        fn()
        number = max(1, int(0.05 / max(time.perf_counter() - t, 1e-7)))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number * 1e6)
    return float(np.median(times))


def data():
    rng = np.random.default_rng(0)
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
               np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    return params, x, y


def numpy_step(params, x, y):
    """The step written by hand in NumPy: forward, softmax cross-entropy, backward, SGD."""
    acts, h = [x], x
    for w, b in params[:-1]:
        h = np.maximum(h @ w + b, 0)
        acts.append(h)
    w, b = params[-1]
    logits = h @ w + b
    logits = logits - logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y]).mean()
    g = p
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    new = []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        a = acts[i]
        gw, gb = a.T @ g, g.sum(0)
        if i:
            g = (g @ w.T) * (a > 0)
        new.append((w - LR * gw, b - LR * gb))
    return loss, new[::-1]


def fnx_step_fn():
    import fnx
    import fnx.nn as nn
    import fnx.numpy as jnp

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = nn.relu(h @ w + b)
        w, b = params[-1]
        logp = nn.log_softmax(h @ w + b)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        value, grads = fnx.value_and_grad(loss)(params, x, y)
        return value, fnx.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
    return fnx.jit(step)


def loop_programs(jnp, lax, sigmoid):
    """The loop workloads, written once for fnx and JAX: ``[(name, fn, args)]``."""
    def lorenz(s):
        def f(s):
            x, y, z = s[0], s[1], s[2]
            return jnp.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])

        def body(i, s):
            k1 = f(s)
            k2 = f(s + 0.005 * k1)
            k3 = f(s + 0.005 * k2)
            k4 = f(s + 0.01 * k3)
            return s + 0.01 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return lax.fori_loop(0, 2000, body, s)

    def gru(h, xs, w, u):
        def step(h, x):
            z = sigmoid(x @ w + h @ u)
            h = (1 - z) * h + z * jnp.tanh(x @ u + (z * h) @ w)
            return h, h.sum()
        return lax.scan(step, h, xs)

    def newton(a):
        def cond(c):
            return (jnp.abs(c[0] * c[0] - a) > 1e-6).any() & (c[1] < 100)
        return lax.while_loop(cond, lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, 0))

    rng = np.random.default_rng(0)
    mat = lambda *s: (rng.standard_normal(s) / 4).astype(np.float32)  # noqa: E731
    return [("RK4 Lorenz fori 2000", lorenz, (np.ones(3, np.float32),)),
            ("GRU scan 200 16x16", gru, (mat(16, 16), mat(200, 16, 16), mat(16, 16),
                                         mat(16, 16))),
            ("Newton while_loop", newton, (rng.uniform(1, 100, 8).astype(np.float32),))]


LOOPS = [name for name, _, _ in loop_programs(np, None, None)]


def main():
    import fnx
    import fnx.numpy as fjnp
    rows = []
    a_np = np.ones(4, np.float32)
    a_fnx = fjnp.asarray(a_np)
    tiny = fnx.jit(lambda x: x + 1)
    rows.append(("jitted x+1 (4 floats)", median_us(lambda: tiny(a_fnx)), "fnx"))
    rows.append(("jitted x+1 (4 floats)", median_us(lambda: a_np + 1), "numpy"))
    params, x, y = data()
    t = time.perf_counter()
    step = fnx_step_fn()
    fp = fnx.device_put(params)
    fx, fy = fjnp.asarray(x), fjnp.asarray(y)
    out = step(fp, fx, fy)
    np.asarray(out[0])
    first = time.perf_counter() - t
    rows.append(("MLP step", median_us(lambda: step(fp, fx, fy), reps=5), "fnx"))
    rows.append(("MLP step", median_us(lambda: numpy_step(params, x, y), reps=5), "numpy"))
    for name, fn, args in loop_programs(fjnp, fnx.lax, fnx.nn.sigmoid):
        loop = fnx.jit(fn)
        rows.append((name, median_us(lambda: loop(*args), reps=5), "fnx"))
    try:
        import jax
        import jax.numpy as jjnp
        a_jax = jjnp.ones(4, np.float32)
        jtiny = jax.jit(lambda v: v + 1)
        rows.append(("jitted x+1 (4 floats)",
                     median_us(lambda: jtiny(a_jax).block_until_ready()), "jax"))

        def jloss(params, x, y):
            h = x
            for w, b in params[:-1]:
                h = jax.nn.relu(h @ w + b)
            w, b = params[-1]
            logp = jax.nn.log_softmax(h @ w + b)
            return -jjnp.mean(jjnp.take_along_axis(logp, y[:, None], axis=1))

        @jax.jit
        def jstep(params, x, y):
            v, g = jax.value_and_grad(jloss)(params, x, y)
            return v, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, g)
        jp, jx, jy = jax.device_put((params, x, y))
        t = time.perf_counter()
        jstep(jp, jx, jy)[0].block_until_ready()
        jfirst = time.perf_counter() - t
        rows.append(("MLP step", median_us(lambda: jstep(jp, jx, jy)[0].block_until_ready(),
                                           reps=5), "jax"))
        for name, fn, args in loop_programs(jjnp, jax.lax, jax.nn.sigmoid):
            jloop = jax.jit(fn)
            rows.append((name, median_us(
                lambda: jax.block_until_ready(jloop(*args)), reps=5), "jax"))
    except ImportError:
        jfirst = float("nan")
    table = {(w, f): v for w, v, f in rows}
    print(f"{'workload':24s} {'fnx':>10s} {'NumPy':>10s} {'JAX':>10s} {'fnx/JAX':>8s} {'fnx/NumPy':>9s}")
    for w in ("jitted x+1 (4 floats)", "MLP step", *LOOPS):
        f, n, j = (table.get((w, k), float("nan")) for k in ("fnx", "numpy", "jax"))
        print(f"{w:24s} {f:10.1f} {n:10.1f} {j:10.1f} {f / j:8.2f} {f / n:9.2f}")
    print(f"first call of the MLP step: fnx {first:.3f} s, JAX {jfirst:.3f} s")
    print("times in microseconds (median)")


if __name__ == "__main__":
    main()
