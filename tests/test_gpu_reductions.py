"""Generated reductions on the GPU against float64 NumPy, on fresh random inputs: rows split over
thread-block clusters, the mean over rows folded into the row kernel's launch, and
sum/max/min/prod/any/all/argmax/argmin over any axes, each one launch; and the kernels that
count finished blocks stay correct over many CUDA-graph replays."""
import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp

pytestmark = pytest.mark.cuda



@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy
    print(f"inputs drawn with seed {seed}")      # shown when the test fails
    return np.random.default_rng(seed)


def _poison(shapes, dtype=np.float32):
    """Leave NaN-filled blocks of these sizes in CuPy's pool, so that an output a kernel fails to
    write shows up as NaN."""
    import cupy as cp
    blocks = [cp.full(s, np.nan, dtype) for s in shapes]
    cp.cuda.get_current_stream().synchronize()
    del blocks


def _lower(f, args, gpu):
    """The lowered program of ``f`` and its results on ``args`` (NumPy arrays or CuPy buffers)."""
    import cupy as cp
    from fnx.cuda.lowering import lower
    bufs = [a if isinstance(a, cp.ndarray) else cp.asarray(a) for a in args]
    closed = fnx.make_jaxpr(f)(*[cp.asnumpy(b) for b in bufs])
    exe = lower(closed.jaxpr, closed.consts, gpu)
    _poison([v.aval.shape for v in closed.jaxpr.outvars])
    return exe, [cp.asnumpy(o) for o in exe(*bufs)]


def _graphed(f, args):
    import cupy as cp
    from fnx.cuda.lowering import lower
    from fnx.cuda.graph import GraphExecutable
    closed = fnx.make_jaxpr(f)(*[cp.asnumpy(a) for a in args])
    return GraphExecutable(lower(closed.jaxpr, closed.consts, fnx.devices("gpu")[0]))


def _assert_one_kernel(exe):
    assert exe.num_launches == 1 and len(exe.kernels) == 1, exe.describe()


def _assert_sum_close(out, ref, magnitude, rtol=1e-5):
    """``out`` within ``rtol`` of the sum of magnitudes (the bound float32 summation keeps)."""
    assert not np.isnan(out).any()
    np.testing.assert_array_less(np.abs(out - ref), rtol * magnitude + 1e-30)


# -- rows


def _softmax64(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _layer_norm64(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


ROW_SHAPES = [(64, 32768), (37, 5000), (3, 4, 3000), (7, 10), (5, 1003), (2, 300001)]


@pytest.mark.parametrize("clusters", [8, 1], ids=["clusters", "one_block_a_row"])
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name,f,ref", [
    ("softmax", nn.softmax, _softmax64),
    ("log_softmax", nn.log_softmax, lambda x: np.log(_softmax64(x))),
    ("layer_norm", _layer_norm, _layer_norm64),
])
def test_row_ops_are_one_launch_at_any_length(gpu, rng, monkeypatch, clusters, shape, name, f,
                                              ref):
    from fnx.cuda import rows
    monkeypatch.setattr(rows, "MAX_CLUSTER", clusters)
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    exe, (out,) = _lower(f, [x], gpu)
    _assert_one_kernel(exe)
    if shape[-1] == 32768:
        assert exe.kernels[0].in_registers
        assert (exe.kernels[0].cluster > 1) == (rows.max_cluster() > 1), exe.kernels[0].cluster
    expected = ref(x.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=5e-5, atol=5e-6 * np.abs(expected).max())


def test_rows_of_a_misaligned_buffer(gpu, rng):
    """A contiguous view starting 4 bytes into its allocation cannot be read with 16-byte loads:
    the kernel falls back to single loads and stores."""
    import cupy as cp
    rows, cols = 33, 4096
    flat = cp.asarray(rng.standard_normal(rows * cols + 1).astype(np.float32))
    x = flat[1:].reshape(rows, cols)
    assert x.data.ptr % 16 and x.flags.c_contiguous
    exe, (out,) = _lower(nn.softmax, [x], gpu)
    _assert_one_kernel(exe)
    expected = _softmax64(cp.asnumpy(x).astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-9)


def _xent_onehot(z, onehot):
    m = jnp.max(z, axis=-1, keepdims=True)
    lse = jnp.log(jnp.sum(jnp.exp(z - m), axis=-1, keepdims=True)) + m
    return -jnp.mean(jnp.sum((z - lse) * onehot, axis=-1))


def _one_hot(labels, classes):
    out = np.zeros((len(labels), classes), np.float32)
    out[np.arange(len(labels)), labels] = 1
    return out


def _xent64(z, labels):
    z = z.astype(np.float64)
    m = z.max(-1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(-1)) + m[:, 0]
    return np.mean(lse - z[np.arange(len(z)), labels])


@pytest.mark.parametrize("rows,classes", [(64, 32768), (1000, 37), (16, 33), (4096, 1000)])
def test_cross_entropy_with_its_mean_is_one_launch(gpu, rng, rows, classes):
    z = (2 * rng.standard_normal((rows, classes))).astype(np.float32)
    labels = rng.integers(0, classes, rows).astype(np.int32)
    onehot = _one_hot(labels, classes)
    expected = _xent64(z, labels)

    def xent_labels(z, labels):
        return -jnp.mean(jnp.sum(nn.log_softmax(z) * nn.one_hot(labels, classes, dtype=z.dtype),
                                 -1))
    for f, args in ((_xent_onehot, [z, onehot]), (xent_labels, [z, labels])):
        exe, (out,) = _lower(f, args, gpu)
        assert exe.num_launches == 1 and "rows[" in exe.describe(), exe.describe()
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_folded_mean_stays_right_over_graph_replays(gpu, rng):
    """The row kernel finds its last block with a counter it resets itself: every replay of the
    captured graph must find it at zero."""
    import cupy as cp
    rows, classes = 300, 4096
    make = lambda: (2 * rng.standard_normal((rows, classes))).astype(np.float32)  # noqa: E731
    labels = rng.integers(0, classes, rows)
    onehot = cp.asarray(_one_hot(labels, classes))
    exe = _graphed(_xent_onehot, [cp.asarray(make()), onehot])
    for _ in range(6):
        z = make()
        (out,) = exe(cp.asarray(z), onehot)
        np.testing.assert_allclose(cp.asnumpy(out), _xent64(z, labels), rtol=1e-5)
    assert exe.graph is not None and exe.num_launches == 1, exe.describe()


def _kmeans_inertia(x, c):
    d = jnp.sum(x * x, 1, keepdims=True) + jnp.sum(c * c, 1) - 2 * (x @ c.T)
    return jnp.argmin(d, 1), jnp.argmax(d, 1), jnp.mean(jnp.min(d, 1))


@pytest.mark.parametrize("points,k,dims", [(4099, 256, 64), (300, 37, 20), (64, 3000, 17)])
def test_argmin_and_min_of_a_product_read_it_once(gpu, rng, points, k, dims):
    """k-means' distances ``|x|^2 + |c|^2 - 2 x.c``: the product runs alone, and one row kernel
    adds the per-row and per-column norms, takes argmin, argmax and min of each row and the
    mean of the minima, without writing the distances out."""
    x = rng.standard_normal((points, dims)).astype(np.float32)
    c = rng.standard_normal((k, dims)).astype(np.float32)
    exe, (amin, amax, inertia) = _lower(_kmeans_inertia, [x, c], gpu)
    labels = exe.labels
    assert sum(lab.startswith("rows[") and "argmin" in lab and "argmax" in lab
               for lab in labels) == 1, exe.describe()
    assert not any(lab.startswith(f"fused[{points},{k}]") for lab in labels), exe.describe()
    d = ((x.astype(np.float64)[:, None, :] - c.astype(np.float64)[None]) ** 2).sum(-1)
    # float32 cancellation in |x|^2 + |c|^2 - 2 x.c may swap near-ties: compare distances
    picked = d[np.arange(points), amin]
    np.testing.assert_allclose(picked, d.min(1), rtol=1e-4, atol=1e-3 * dims)
    np.testing.assert_allclose(d[np.arange(points), amax], d.max(1), rtol=1e-4, atol=1e-3 * dims)
    np.testing.assert_allclose(inertia, d.min(1).mean(), rtol=1e-4)


def test_layer_norm_scale_and_shift_join_the_row_kernel(gpu, rng):
    x = rng.standard_normal((512, 384)).astype(np.float32)
    g, b = (rng.standard_normal(384).astype(np.float32) for _ in range(2))
    exe, (out,) = _lower(lambda x, g, b: _layer_norm(x) * g + b, [x, g, b], gpu)
    _assert_one_kernel(exe)
    expected = _layer_norm64(x.astype(np.float64)) * g + b
    np.testing.assert_allclose(out, expected, rtol=5e-5, atol=5e-5)


@pytest.mark.parametrize("rows,classes,lanes", [(3001, 100, 32), (5, 1000, 32), (4096, 16, 4),
                                                (1000, 10, 16), (37, 10, 32), (8192, 3, 4)])
def test_warp_rows_with_a_total_stay_right_over_graph_replays(gpu, rng, rows, classes, lanes):
    """Short rows go one to a warp (narrow ones to the fewest lanes that cover them, several to
    a warp, where the rows split evenly among its groups), several to a block, each block
    looping over rows; the last block (counted in blocks, not rows) combines the mean on every
    replay."""
    import cupy as cp
    make = lambda: (2 * rng.standard_normal((rows, classes))).astype(np.float32)  # noqa: E731
    labels = rng.integers(0, classes, rows)
    onehot = cp.asarray(_one_hot(labels, classes))
    exe = _graphed(_xent_onehot, [cp.asarray(make()), onehot])
    kernel = exe.executable.kernels[0]
    assert kernel.warp_rows and kernel.block == lanes, exe.describe()
    for _ in range(4):
        z = make()
        (out,) = exe(cp.asarray(z), onehot)
        np.testing.assert_allclose(cp.asnumpy(out), _xent64(z, labels), rtol=1e-5)
    assert exe.graph is not None and exe.num_launches == 1, exe.describe()


def _per_example_clipped_mean64(w, x, y):
    """float64 NumPy: each example's gradient of ``sum((tanh(x w) - y)^2)`` clipped to norm 1,
    averaged."""
    w, x, y = (a.astype(np.float64) for a in (w, x, y))
    e = np.tanh(x @ w)
    delta = 2 * (e - y) * (1 - e * e)                     # (B, out)
    g = x[:, :, None] * delta[:, None, :]                  # (B, in, out)
    norms = np.sqrt((g * g).sum((1, 2)))
    return (g * np.minimum(1.0, 1.0 / (norms + 1e-6))[:, None, None]).mean(0)


def _per_example_step(norm):
    def step(w, x, y):
        def clipped(w, x, y):
            g = fnx.grad(lambda w: jnp.sum((jnp.tanh(x @ w) - y) ** 2))(w)
            return g * jnp.minimum(1.0, 1.0 / (norm(g) + 1e-6))
        return jnp.mean(fnx.vmap(clipped, in_axes=(None, 0, 0))(w, x, y), axis=0)
    return step


def test_per_example_gradients_are_contracted_not_made(gpu, rng):
    """vmap's batched outer products never exist: the per-example norm is a product of two row
    sums and the clipped sum over the batch one GEMM (fnx.cuda.contractions)."""
    w = rng.standard_normal((300, 200)).astype(np.float32) / 20
    x = rng.standard_normal((64, 300)).astype(np.float32)
    y = rng.standard_normal((64, 200)).astype(np.float32)
    exe, (out,) = _lower(_per_example_step(lambda g: jnp.sqrt(jnp.sum(g * g))), [w, x, y], gpu)
    assert not any("[64,300,200]" in lab for lab in exe.labels), exe.describe()
    expected = _per_example_clipped_mean64(w, x, y)
    np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4 * np.abs(expected).max())


def test_per_example_gradients_are_reduced_where_they_are_made(gpu, rng):
    """A norm that is no sum of products (L1 here) reads the batched outer products inside
    the kernel that reduces them, which never writes them out."""
    w = rng.standard_normal((300, 200)).astype(np.float32) / 20
    x = rng.standard_normal((64, 300)).astype(np.float32)
    y = rng.standard_normal((64, 200)).astype(np.float32)
    exe, (out,) = _lower(_per_example_step(lambda g: jnp.sum(jnp.abs(g))), [w, x, y], gpu)
    labels = exe.labels
    assert any(lab.startswith("reduce[64,300,200]") for lab in labels), exe.describe()
    assert not any(lab.startswith("fused[64,300,200]") for lab in labels), exe.describe()
    w64, x64, y64 = (a.astype(np.float64) for a in (w, x, y))
    e = np.tanh(x64 @ w64)
    g = x64[:, :, None] * (2 * (e - y64) * (1 - e * e))[:, None, :]
    expected = (g * np.minimum(1.0, 1.0 / (np.abs(g).sum((1, 2)) + 1e-6))[:, None, None]).mean(0)
    np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4 * np.abs(expected).max())


def test_a_reduction_computes_the_elementwise_chain_it_reads(gpu, rng):
    x = rng.standard_normal((50, 7)).astype(np.float32)
    y = rng.standard_normal((50, 9)).astype(np.float32)
    f = lambda x, y: (jnp.argmax(jnp.exp(x)[:, :, None] * y[:, None, :], axis=1),  # noqa: E731
                      jnp.max(jnp.sin(x)[:, :, None] - y[:, None, :], axis=(0, 2)))
    exe, (amax, mx) = _lower(f, [x, y], gpu)
    assert not any(lab.startswith("fused[50,7,9]") for lab in exe.labels), exe.describe()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_array_equal(amax, np.argmax(np.exp(x64)[:, :, None] * y64[:, None], 1))
    np.testing.assert_allclose(mx, (np.sin(x64)[:, :, None] - y64[:, None]).max((0, 2)),
                               rtol=1e-6)


# -- reductions over any axes


REDUCTIONS = [
    # (name, fnx function, NumPy float64 function, shape, dtype)
    ("sum_middle", lambda x: jnp.sum(x, 1), lambda x: x.sum(1), (64, 1000, 256), "float32"),
    ("sum_outer_axes", lambda x: jnp.sum(x, (0, 2)), lambda x: x.sum((0, 2)), (30, 7, 300),
     "float32"),
    ("sum_all_long", lambda x: jnp.sum(x), lambda x: x.sum(), ((1 << 22) + 3,), "float32"),
    ("sum_all_3d", lambda x: jnp.sum(x), lambda x: x.sum(), (3, 5, 70001), "float32"),
    ("sum_few_long_rows", lambda x: jnp.sum(x, 1), lambda x: x.sum(1), (4, 1 << 20), "float32"),
    ("sum_int_rows", lambda x: jnp.sum(x, 1), lambda x: x.sum(1), (100, 777), "int32"),
    ("max_outer_axes", lambda x: jnp.max(x, (0, 2)), lambda x: x.max((0, 2)), (30, 7, 300),
     "float32"),
    ("min_leading", lambda x: jnp.min(x, 0), lambda x: x.min(0), (100000, 3), "float32"),
    ("max_int_middle", lambda x: jnp.max(x, 1), lambda x: x.max(1), (100, 50, 3), "int64"),
    ("max_half_last", lambda x: jnp.max(x, 2), lambda x: x.max(2), (8, 3, 500), "float16"),
    ("prod_rows", lambda x: jnp.prod(x, 1), lambda x: x.prod(1), (40, 6), "float64"),
    ("any_leading", lambda x: jnp.any(x, 0), lambda x: x.any(0), (1000, 30), "bool"),
    ("all_rows", lambda x: jnp.all(x, 1), lambda x: x.all(1), (30, 5000), "bool"),
]


def _draw(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.995     # mostly true: all() and any() both have work to do
    if dtype in ("int32", "int64"):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("name,f,ref,shape,dtype", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_over_any_axes_is_one_kernel(gpu, rng, name, f, ref, shape, dtype):
    x = _draw(rng, shape, dtype)
    # an int32 sum is int32 with x64 off (the default); with it on it is an int64 sum, whose
    # widening is a kernel of its own
    with fnx.enable_x64(dtype != "int32"):
        exe, (out,) = _lower(f, [x], gpu)
    _assert_one_kernel(exe)
    label = exe.labels[0]
    assert label.startswith(("reduce[", "rows[", "columns[")), exe.describe()
    if dtype.startswith("float"):
        x64 = x.astype(np.float64)
        expected = ref(x64)
        if name.startswith("sum"):
            _assert_sum_close(out, expected, ref(np.abs(x64)))
        else:
            np.testing.assert_allclose(out, expected, rtol=1e-12 if dtype == "float64" else 0)
    else:
        np.testing.assert_array_equal(out, ref(x).astype(out.dtype))


ARG_CASES = [((1000, 3), 0), ((4, 5, 3000), 2), ((40, 50, 30), 1), ((7, 1 << 18), 1),
             ((3, 200000), 0), ((64, 32768), 1)]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", ARG_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("data", ["normal", "ties", "nans"])
def test_argmax_argmin_over_any_axis(gpu, rng, op, shape, axis, data):
    """The first index of the extreme along ``axis``, a NaN counting as the extreme (NumPy's
    rule), ties going to the smaller index."""
    if data == "ties":
        x = rng.integers(0, 4, shape).astype(np.int32)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        if data == "nans":
            x[rng.random(shape) < 2e-4] = np.nan
    f = lambda a: getattr(jnp, op)(a, axis=axis)  # noqa: E731
    exe, (out,) = _lower(f, [x], gpu)
    _assert_one_kernel(exe)
    # over the last axis of floats a row kernel, unless a few long rows are split over blocks
    kinds = ("rows[", "reduce[") if axis == len(shape) - 1 and data != "ties" else ("reduce[",)
    assert exe.labels[0].startswith(kinds), exe.describe()
    np.testing.assert_array_equal(out, getattr(np, op)(x, axis=axis))


@pytest.mark.parametrize("f,shape", [
    (lambda x: jnp.sum(x), ((1 << 22) + 3,)),
    (lambda x: jnp.argmax(x, 0), (100000, 3)),
    (lambda x: jnp.max(x, (0, 2)), (30, 7, 3000)),
], ids=["sum_all", "argmax_columns", "max_outer_axes"])
def test_split_reductions_stay_right_over_graph_replays(gpu, rng, f, shape):
    """Reductions split over several blocks per output combine them in the last block, found
    with a counter the kernel resets: every replay must find it at zero."""
    import cupy as cp
    exe = _graphed(f, [cp.asarray(rng.standard_normal(shape).astype(np.float32))])
    assert exe.executable.kernels[0].split > 1, exe.describe()
    for _ in range(6):
        x = rng.standard_normal(shape).astype(np.float32)
        (out,) = exe(cp.asarray(x))
        expected = np.asarray(f(x.astype(np.float64)))
        if np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(cp.asnumpy(out), expected)
        else:
            np.testing.assert_allclose(cp.asnumpy(out), expected, rtol=1e-4, atol=1e-2)
    assert exe.graph is not None, exe.describe()


@pytest.mark.parametrize("cols", [7, 256, 3000])
def test_min_beside_argmin_is_the_argmins_value(gpu, rng, cols):
    """A row's min (max) beside its argmin (argmax) is read from the arg-reduction's (value,
    column) pair, one reduction instead of two, NaN and ties included."""
    x = rng.standard_normal((37, cols)).astype(np.float32)
    x[3, cols // 2] = np.nan
    x[5, :] = 1.5
    x[6, ::2] = -np.inf

    def f(x):
        d = x * 2.0 + 1.0
        return (jnp.argmin(d, axis=1), jnp.min(d, axis=1), jnp.argmax(d, axis=1),
                jnp.max(d, axis=1))
    exe, outs = _lower(f, [x], gpu)
    _assert_one_kernel(exe)
    source = exe.kernels[0].source
    plain = source.replace("ArgMinOp()(", "").replace("ArgMaxOp()(", "")
    assert "MinOp()(" not in plain and "MaxOp()(" not in plain, source
    d = x.astype(np.float64) * 2 + 1
    for got, want in zip(outs, (np.argmin(d, 1), np.min(d, 1), np.argmax(d, 1), np.max(d, 1))):
        np.testing.assert_array_equal(got, want.astype(got.dtype))


@pytest.mark.parametrize("rows,cols", [(4096, 16), (1000, 10), (999, 8), (2048, 5)])
def test_narrow_rows_write_rows_and_arg_reductions(gpu, rng, rows, cols):
    """Several narrow rows to a warp: softmax rows written back (vector stores where aligned),
    and argmax/argmin with NumPy's first-index ties, against float64 NumPy."""
    z = rng.standard_normal((rows, cols)).astype(np.float32)
    z[::7, 1] = z[::7, 0]       # ties: the first index wins

    def f(z):
        e = jnp.exp(z - jnp.max(z, -1, keepdims=True))
        return e / jnp.sum(e, -1, keepdims=True), jnp.argmax(z, -1), jnp.argmin(z, -1)
    exe, (soft, amax, amin) = _lower(f, [z], gpu)
    z64 = z.astype(np.float64)
    e = np.exp(z64 - z64.max(-1, keepdims=True))
    np.testing.assert_allclose(soft, e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(amax, z.argmax(-1))
    np.testing.assert_array_equal(amin, z.argmin(-1))
