"""The GPU lowering (fused kernels + cuBLAS + generic impls) equals eager execution on the GPU
for every op spec, and an elementwise chain is one launch."""
import numpy as np
import pytest

import fnx
import fnx.nn as nn
import fnx.numpy as jnp

from op_specs import SPECS

pytestmark = pytest.mark.cuda



def _lower(f, args, gpu):
    from fnx.cuda.lowering import lower
    closed = fnx.make_jaxpr(f)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    bufs = [gpu.to_buffer(fnx.device_put(a, gpu), np.asarray(a).dtype) for a in args]
    return exe, exe(*bufs)


# complex programs never reach the generated kernels: the backend runs them eagerly
# (tests/test_gpu.py::test_jit_on_gpu_equals_eager_on_gpu covers them)
LOWERED = [s for s in SPECS if "complex" not in s.tags]


@pytest.mark.parametrize("spec", LOWERED, ids=[s.name for s in LOWERED])
def test_lowered_equals_eager(spec, gpu):
    args = [fnx.device_put(a, gpu) for a in spec.draw(np.random.default_rng(5))]
    _, outs = _lower(spec.fn, args, gpu)
    expected = spec.fn(*args)
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(expected), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("spec", [s for s in LOWERED if s.grad],
                         ids=[s.name for s in LOWERED if s.grad])
def test_lowered_grad_equals_eager(spec, gpu):
    args = [fnx.device_put(a, gpu) for a in spec.draw(np.random.default_rng(6))]
    fidx = [i for i, a in enumerate(args) if a.dtype.kind == "f"]

    def loss(*fa):
        full = list(args)
        for i, v in zip(fidx, fa):
            full[i] = v
        return jnp.sum(spec.fn(*full) ** 2)
    g = fnx.grad(loss, tuple(range(len(fidx))))
    fargs = [args[i] for i in fidx]
    _, outs = _lower(g, fargs, gpu)
    for o, e in zip(outs, g(*fargs)):
        np.testing.assert_allclose(gpu.to_numpy(o), np.asarray(e), atol=1e-6, rtol=1e-6)


def test_elementwise_chain_is_one_launch(gpu):
    x = fnx.device_put(np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32), gpu)
    b = fnx.device_put(np.random.default_rng(1).standard_normal(33).astype(np.float32), gpu)

    def chain(x, b):
        y = jnp.tanh(x * 2.0 + b) - jnp.exp(-x)
        return nn.sigmoid(y) * y + 1.0
    exe, outs = _lower(chain, [x, b], gpu)
    assert exe.num_launches == 1, exe.describe()
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(chain(x, b)), rtol=1e-5, atol=1e-6)


def test_float16_chain(gpu):
    x = fnx.device_put(np.random.default_rng(2).standard_normal(1000).astype(np.float16), gpu)
    exe, outs = _lower(lambda x: jnp.tanh(x) * x + 1.0, [x], gpu)
    expected = np.tanh(np.asarray(x, np.float32)) * np.asarray(x, np.float32) + 1
    np.testing.assert_allclose(gpu.to_numpy(outs[0]).astype(np.float32), expected, rtol=2e-3,
                               atol=2e-3)


@pytest.mark.parametrize("precision,tol", [("highest", 1e-4), ("tensorfloat32", 3e-2)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_cublas_matmul_layouts(gpu, precision, tol, ta, tb):
    """Transposed operands go to cuBLAS as op flags, without copies."""
    import cupy as cp
    from fnx.cuda import lowering
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 80)).astype(np.float32)
    A = a.T.copy() if ta else a
    B = b.T.copy() if tb else b
    dn = (((0 if ta else 1,), (1 if tb else 0,)), ((), ()))
    out = lowering.dot_general(cp.asarray(A), cp.asarray(B), dimension_numbers=dn,
                                 precision=precision)
    np.testing.assert_allclose(cp.asnumpy(out), a.astype(np.float64) @ b, rtol=tol, atol=tol)


def test_batched_matmul_on_cublas(gpu):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 5, 7))
    b = rng.standard_normal((3, 7, 2))
    _, outs = _lower(jnp.matmul, [fnx.device_put(a, gpu), fnx.device_put(b, gpu)], gpu)
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), a @ b, rtol=1e-12)


@pytest.mark.parametrize("spec,shapes,in_place", [
    ("bqhd,bkhd->bhqk", [(4, 16, 3, 8), (4, 20, 3, 8)], True),       # attention's scores
    ("bhqk,bkhd->bhqd", [(4, 3, 16, 20), (4, 20, 3, 8)], True),      # and its values
    ("bqhd,bqhk->bhdk", [(4, 16, 3, 8), (4, 16, 3, 5)], True),       # a backward product
    ("qbhd,kbhd->bhqk", [(16, 4, 3, 8), (20, 4, 3, 8)], True),
    ("bxqd,bkdx->bxqk", [(2, 3, 16, 8), (2, 20, 8, 3)], False),      # no matrix axis last
])
@pytest.mark.parametrize("dtype,precision,tol", [(np.float32, "highest", 1e-4),
                                                 (np.float32, "tensorfloat32", 3e-2),
                                                 (np.float64, "highest", 1e-12)])
def test_products_over_inner_batch_axes_read_their_operands_in_place(
        gpu, monkeypatch, spec, shapes, in_place, dtype, precision, tol):
    """Batch axes that are not the operands' leading ones (per-head attention) go to
    cublasGemmBatchedEx with each member's pointers, no transposed copies, where each member's
    matrix has one axis contiguous (else the operand is copied first)."""
    import cupy as cp
    from fnx.cuda import cublas, lowering
    calls = []
    real = cublas.batched_matmul_into
    monkeypatch.setattr(cublas, "batched_matmul_into",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    if in_place:
        monkeypatch.setattr(lowering, "dense", lambda x: pytest.fail("copied an operand"))
    rng = np.random.default_rng()
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    closed = fnx.make_jaxpr(lambda a, b: jnp.einsum(spec, a, b))(a, b)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "dot_general"]
    out = lowering.dot_general(cp.asarray(a), cp.asarray(b),
                                 dimension_numbers=eqn.params["dimension_numbers"],
                                 precision=precision)
    assert bool(calls) == in_place
    want = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(cp.asnumpy(out), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,f", [
    ("softmax", lambda x: nn.softmax(x)),
    ("log_softmax", lambda x: nn.log_softmax(x)),
    ("logsumexp", lambda x: nn.logsumexp(x, axis=-1)),
    ("layer_norm", lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True)
                                                                        + 1e-5)),
])
@pytest.mark.parametrize("shape", [(7, 10), (3, 4, 3000), (2, 5000)])
def test_row_ops_are_one_launch(gpu, name, f, shape):
    x = fnx.device_put(np.random.default_rng(7).standard_normal(shape).astype(np.float32), gpu)
    exe, outs = _lower(f, [x], gpu)
    assert exe.num_launches == 1, exe.describe()
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(f(x)), rtol=1e-5, atol=1e-5)


def test_softmax_cross_entropy_and_its_gradient(gpu):
    rng = np.random.default_rng(8)
    logits = fnx.device_put(rng.standard_normal((16, 33)), gpu)
    labels = fnx.device_put(rng.integers(0, 33, 16).astype(np.int32), gpu)

    def xent(z):
        return -jnp.mean(jnp.sum(nn.log_softmax(z) * nn.one_hot(labels, 33, dtype=z.dtype), -1))
    for f in (xent, fnx.grad(xent)):
        exe, outs = _lower(f, [logits], gpu)
        np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(f(logits)), rtol=1e-10,
                                   atol=1e-12)
        assert exe.num_launches <= 4, exe.describe()


def test_scalars_computed_inside_a_chain_are_written_once(gpu):
    """A chain over (128, 10) that also yields a scalar used later (as an optimizer's bias
    correction does) must write that scalar into its one-element buffer only."""
    rng = np.random.default_rng(11)
    w = fnx.device_put(rng.standard_normal((128, 10)).astype(np.float32), gpu)
    count = fnx.device_put(np.float32(3.0), gpu)

    def f(w, count):
        c = count + 1.0
        scale = 1.0 / (1.0 - 0.9 ** c)
        return w * scale, scale * 2.0
    exe, outs = _lower(f, [w, count], gpu)
    expected = f(w, count)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(gpu.to_numpy(o), np.asarray(e), rtol=1e-6)


def test_independent_updates_share_one_launch(gpu):
    """An SGD update of parameters of four shapes is one (multi-tensor) kernel."""
    rng = np.random.default_rng(7)
    shapes = [(33, 17), (17,), (17, 5), (5,)]
    ps = [fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu) for s in shapes]
    gs = [fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu) for s in shapes]

    def update(*pg):
        return [p - 0.1 * g for p, g in zip(pg[:4], pg[4:])]
    exe, outs = _lower(update, ps + gs, gpu)
    assert exe.num_launches == 1 and "multi[4]" in exe.describe(), exe.describe()
    for o, p, g in zip(outs, ps, gs):
        np.testing.assert_allclose(gpu.to_numpy(o), np.asarray(p) - 0.1 * np.asarray(g),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(128, 512), (1000, 37), (3, 4, 70), (128, 32, 32, 32),
                                   (70001, 3)])
def test_masked_gradient_and_its_column_sum_are_one_launch(gpu, shape):
    """The backward of relu(x @ w + b): gz = where(z > 0, g, 0) and the bias gradient
    sum(gz, 0), read once (few columns over many rows: the rows split over blocks)."""
    rng = np.random.default_rng(8)
    z = fnx.device_put(rng.standard_normal(shape).astype(np.float32), gpu)
    g = fnx.device_put(rng.standard_normal(shape).astype(np.float32), gpu)

    def backward(z, g):
        gz = jnp.where(z > 0, g, 0.0)
        return gz, jnp.sum(gz, axis=tuple(range(len(shape) - 1)))
    exe, (gz, db) = _lower(backward, [z, g], gpu)
    assert exe.num_launches == 1 and "columns" in exe.describe(), exe.describe()
    bufs = [gpu.to_buffer(a, np.float32) for a in (z, g)]
    for _ in range(2):      # again: the split's tickets are back at zero after each launch
        gz, db = exe(*bufs)
    zn, gn = np.asarray(z, np.float64), np.asarray(g, np.float64)
    ref = np.where(zn > 0, gn, 0.0)
    np.testing.assert_allclose(gpu.to_numpy(gz), ref, rtol=1e-6)
    np.testing.assert_allclose(gpu.to_numpy(db), ref.sum(tuple(range(len(shape) - 1))),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("k", [1, 10, 16, 17])
def test_small_product_is_computed_inside_the_kernel_reading_it(gpu, ta, tb, k):
    """The backward of a dense layer under a classifier head: gz = where(h > 0, g @ w.T, 0)
    and its column sum. With at most 16 terms per element the product joins that kernel; with
    17 it stays a GEMM, and the mask ``h > 0`` (made before the product) is recomputed in the
    kernel reading it rather than launched on its own."""
    from fnx import lax
    rng = np.random.default_rng(k)
    m, n = 96, 130
    g = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    w = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    h = rng.standard_normal((m, n)).astype(np.float32)
    dims = (((0,) if ta else (1,), (1,) if tb else (0,)), ((), ()))

    def backward(g, w, h):
        gz = jnp.where(h > 0, lax.dot_general(g, w, dims), 0.0)
        return gz, jnp.sum(gz, axis=0)
    exe, (gz, db) = _lower(backward, [fnx.device_put(a, gpu) for a in (g, w, h)], gpu)
    gemm = any(label.startswith("dot_general") for label in exe.labels)
    assert (exe.num_launches, gemm) == ((1, False) if k <= 16 else (2, True)), exe.describe()
    product = (g.T if ta else g).astype(np.float64) @ (w.T if tb else w).astype(np.float64)
    ref = np.where(h > 0, product, 0.0)
    np.testing.assert_allclose(gpu.to_numpy(gz), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gpu.to_numpy(db), ref.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("form,m,k", [("dense", 128, 512), ("dense_tanh", 96, 300),
                                      ("dot_transposed", 128, 512), ("dense", 1024, 512)])
def test_narrow_product_is_made_in_the_row_kernel_after_it(gpu, form, m, k):
    """A classifier's logits and the cross-entropy over them, forward and backward: with little
    work (2*m*10*k <= 2**22 flops) the row kernel computes the logits itself, else they stay
    a launch of their own. Loss and gradients match float64."""
    from fnx import lax
    from fnx.cuda.rows import ROW_PRODUCT_FLOPS
    rng = np.random.default_rng(m + k)
    c = 10
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((c, k) if form == "dot_transposed" else (k, c)) * 0.1
         ).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    y = rng.integers(0, c, m).astype(np.int32)

    def loss(w, b, x, y):
        if form == "dot_transposed":
            logits = lax.dot_general(x, w, (((1,), (1,)), ((), ())))
        else:
            logits = x @ w + b
            logits = jnp.tanh(logits) if form == "dense_tanh" else logits
        logp = nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    exe, (value, gw, gb) = _lower(fnx.value_and_grad(loss, argnums=(0, 1)),
                                  [w, b, x, y], gpu)
    fused = 2 * m * c * k <= ROW_PRODUCT_FLOPS
    forward = next(label for label in exe.labels if label.startswith("rows["))
    product = "dot_general" if form == "dot_transposed" else "dense"
    assert forward.split(": ")[1].startswith(product) == fused, exe.describe()
    alone = f"{product}: float32[{m}, {k}]"     # the forward product as a launch of its own
    assert any(label.startswith(alone) for label in exe.labels) != fused, exe.describe()

    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    if form == "dot_transposed":
        z = x64 @ w64.T
    else:
        z = x64 @ w64 + b64
    logits = np.tanh(z) if form == "dense_tanh" else z
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ref_loss = -np.mean(np.log(p[np.arange(m), y]))
    g = (p - np.eye(c)[y]) / m
    gz = g * (1 - logits ** 2) if form == "dense_tanh" else g
    ref_gw = gz.T @ x64 if form == "dot_transposed" else x64.T @ gz
    np.testing.assert_allclose(float(gpu.to_numpy(value)), ref_loss, rtol=1e-5)
    np.testing.assert_allclose(gpu.to_numpy(gw), ref_gw, rtol=1e-4, atol=1e-5)
    if form != "dot_transposed":
        np.testing.assert_allclose(gpu.to_numpy(gb), gz.sum(0), rtol=1e-4, atol=1e-5)


def test_a_small_product_alone_stays_a_gemm(gpu):
    rng = np.random.default_rng(3)
    a, b = (fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu)
            for s in [(64, 8), (8, 48)])
    exe, (c,) = _lower(lambda a, b: a @ b, [a, b], gpu)
    assert exe.num_launches == 1 and not exe.kernels, exe.describe()
    np.testing.assert_allclose(gpu.to_numpy(c),
                               np.asarray(a, np.float64) @ np.asarray(b, np.float64),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_gemm_table_times_candidates_once_and_remembers_the_choice(gpu, ta, tb, tmp_path,
                                                                   monkeypatch):
    import json
    import cupy as cp
    from fnx.cuda import gemm_table
    monkeypatch.setenv("FNX_CACHE_DIR", str(tmp_path))
    # a process that has not chosen yet (choices earlier tests saved elsewhere stay there)
    monkeypatch.setattr(gemm_table, "TABLE", gemm_table.ChoiceTable())
    rng = np.random.default_rng(9)
    m, n, k = 96, 80, 112
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    out = cp.empty((m, n), np.float32)
    gemm_table.matmul_into(out, cp.asarray(a), cp.asarray(b), ta, tb, "highest")
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(cp.asnumpy(out), ref, rtol=1e-4, atol=1e-4)
    key = f"{m}x{n}x{k}b1{'T' if ta else 'N'}{'T' if tb else 'N'}-float32-float32-highest"
    assert gemm_table.TABLE.choice(key) is not None
    assert key in json.load(open(gemm_table.cache_file()))


SMALL_GEMMS = [("vec_block2", 128, 10, 512, False, False), ("vec_block4", 77, 16, 44, False, True),
               ("vec_block8", 130, 3, 2056, False, False), ("warp_rows", 77, 16, 45, False, True),
               ("col_threads8", 200, 10, 96, True, False), ("col_threads16", 77, 16, 45, True, True),
               ("outer4", 100, 64, 7, True, False), ("outer16", 96, 1000, 10, False, True),
               ("outer4", 99, 1000, 9, False, False), ("vec_block8", 66, 10, 300, False, True),
               ("thread_outputs", 512, 10, 32, True, False), ("thread_outputs", 33, 20, 17, False, True),
               ("tiles32x32x8", 128, 512, 784, False, False), ("tiles32x64x8", 130, 70, 300, False, True),
               ("tiles64x64x1x8", 784, 512, 128, True, False), ("tiles32x32x1", 77, 36, 45, True, True),
               ("tiles64x32x4x8", 100, 64, 200, False, False), ("tiles32x32x2", 45, 33, 70, True, False)]


def _operand(cp, host, offset):
    """``host`` on the device, starting ``offset`` elements into its allocation (an offset of
    one breaks 16-byte alignment, which the vector kernels must notice)."""
    flat = cp.empty(host.size + offset, host.dtype)
    flat[offset:] = cp.asarray(host.ravel())
    return flat[offset:].reshape(host.shape)


@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("kind,m,n,k,ta,tb", SMALL_GEMMS)
def test_small_gemm_kinds(gpu, kind, m, n, k, ta, tb, offset):
    """Each generated kernel against float64, on aligned operands and on views one element in
    (which the 16-byte kernels refuse, before launching anything)."""
    import cupy as cp
    from fnx.cuda.small_gemm import SmallGemm
    from fnx.cuda.small_gemm import Misaligned
    rng = np.random.default_rng(10)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    gemm = SmallGemm(kind, m, n, k, ta, tb, np.float32)
    out = cp.full((m, n), 7.0, np.float32)
    operands = _operand(cp, a, offset), _operand(cp, b, offset)
    if offset and gemm.loads_vectors:
        with pytest.raises(Misaligned):
            gemm(out, *operands)
        assert bool((out == 7.0).all())
        return
    gemm(out, *operands)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(cp.asnumpy(out), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind,m,n,k,ta,tb", SMALL_GEMMS)
def test_generated_gemm_epilogues(gpu, kind, m, n, k, ta, tb):
    """Bias + activation, and a gradient step written in place over its own C operand."""
    import cupy as cp
    from fnx.cuda.epilogue import activation_c
    from fnx.cuda.small_gemm import SmallGemm, bias_act, update
    rng = np.random.default_rng(13)
    a = rng.standard_normal((k, m) if ta else (m, k))
    b = rng.standard_normal((n, k) if tb else (k, n))
    bias, p = rng.standard_normal(n), rng.standard_normal((m, n))
    dev = [cp.asarray(v.astype(np.float32)) for v in (a, b, bias, p)]
    z = (a.T if ta else a) @ (b.T if tb else b)
    got = SmallGemm(kind, m, n, k, ta, tb, np.float32,
                    bias_act("relu", activation_c("relu"), "float"))(
        cp.empty((m, n), np.float32), dev[0], dev[1], dev[2])
    np.testing.assert_allclose(cp.asnumpy(got), np.maximum(z + bias, 0), rtol=1e-4, atol=1e-4)
    step = SmallGemm(kind, m, n, k, ta, tb, np.float32, update(-0.25, "float"))
    step(dev[3], dev[0], dev[1], dev[3])
    np.testing.assert_allclose(cp.asnumpy(dev[3]), p - 0.25 * z, rtol=1e-4, atol=1e-4)


def test_small_gemm_candidates():
    """One configuration of each kernel per problem; float64 products take the kinds that load
    one element at a time."""
    from fnx.cuda.small_gemm import SmallGemm
    assert SmallGemm.candidates(1024, 10, 2048, np.float32, 1) == ["vec_block8"]
    assert SmallGemm.candidates(128, 10, 512, np.float32, 1) == ["vec_block2"]
    assert SmallGemm.candidates(2048, 10, 1024, np.float32, 1, True) == ["col_threads32"]
    assert SmallGemm.candidates(128, 512, 10, np.float32, 1) == ["outer4", "thread_outputs"]
    assert SmallGemm.candidates(128, 10, 512, np.float32, 2) == []
    assert SmallGemm.candidates(128, 10, 512, np.float64, 1) == ["warp_rows"]
    assert SmallGemm.candidates(128, 10, 512, np.float64, 1, True) == ["col_threads16"]
    assert "outer4" not in SmallGemm.candidates(96, 1000, 10, np.float64, 1)
    # K split over clusters where a product's tiles are few, whole-K tiles where they are many
    assert SmallGemm.candidates(128, 512, 784, np.float32, 1) == ["tiles32x32x8", "tiles32x64x8"]
    assert SmallGemm.candidates(784, 512, 128, np.float32, 1, True) == ["tiles64x64x1x8",
                                                                        "tiles32x32x1"]
    assert SmallGemm.candidates(1024, 2048, 784, np.float32, 1) == []
    assert SmallGemm.candidates(128, 512, 784, np.float64, 1) == []


@pytest.mark.parametrize("act", ["relu", "none"])
@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (64, 33, 10)])
def test_dense_layer_is_one_gemm_with_its_epilogue(gpu, act, m, k, n):
    rng = np.random.default_rng(11)
    x, w, b = (fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu)
               for s in [(m, k), (k, n), (n,)])

    def layer(x, w, b):
        z = x @ w + b
        return nn.relu(z) if act == "relu" else z
    exe, (out,) = _lower(layer, [x, w, b], gpu)
    assert "dense" in exe.describe() and exe.num_launches == 1, exe.describe()
    ref = np.asarray(x, np.float64) @ np.asarray(w, np.float64) + np.asarray(b, np.float64)
    ref = np.maximum(ref, 0) if act == "relu" else ref
    np.testing.assert_allclose(gpu.to_numpy(out), ref, rtol=1e-4, atol=1e-4)


def test_dense_relu_backward_reads_the_recomputed_mask(gpu):
    """grad through relu(x @ w + b): the forward is one dense launch and the mask the backward
    needs is recomputed from the activation inside the backward's kernel."""
    rng = np.random.default_rng(12)
    x, w, b, g = (fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu)
                  for s in [(32, 24), (24, 16), (16,), (32, 16)])

    def f(x, w, b):
        return jnp.sum(nn.relu(x @ w + b) * g)
    grads = fnx.grad(f, (0, 1, 2))
    exe, outs = _lower(grads, [x, w, b], gpu)
    assert "dense" in exe.describe(), exe.describe()
    xn, wn, bn, gn = (np.asarray(a, np.float64) for a in (x, w, b, g))
    gz = np.where(xn @ wn + bn > 0, gn, 0.0)
    for o, ref in zip(outs, [gz @ wn.T, xn.T @ gz, gz.sum(0)]):
        np.testing.assert_allclose(gpu.to_numpy(o), ref, rtol=1e-4, atol=1e-4)


def test_sgd_step_on_a_weight_is_folded_into_its_gradient_gemm(gpu):
    rng = np.random.default_rng(13)
    w, x, g = (fnx.device_put(rng.standard_normal(s).astype(np.float32), gpu)
               for s in [(24, 16), (32, 24), (32, 16)])

    def step(w, x, g):      # w - 0.05 * x.T @ g, the weight-gradient layout of a dense layer
        return w - 0.05 * fnx.lax.dot_general(x, g, (((0,), (0,)), ((), ())))
    w_before = np.asarray(w)
    exe, (new,) = _lower(step, [w, x, g], gpu)
    assert exe.num_launches == 1 and "gemm_update" in exe.describe(), exe.describe()
    ref = np.asarray(w, np.float64) - 0.05 * np.asarray(x, np.float64).T @ np.asarray(g, np.float64)
    np.testing.assert_allclose(gpu.to_numpy(new), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(w), w_before)   # not donated: w is untouched


def _unique_units(body, count):
    """``count`` kernels never compiled in this process (their names carry a fresh tag)."""
    import time
    tag = time.time_ns()
    return [(f'extern "C" __global__ void fnx_unit{i}_{tag}(float* x) {{ {body.format(i=i)} }}',
             f"fnx_unit{i}_{tag}") for i in range(count)]


def test_kernels_compile_together_in_the_background(gpu):
    import cupy as cp
    from fnx.cuda import compile as nvrtc
    units = _unique_units("x[threadIdx.x] += {i};", 5)
    nvrtc.compile_together(units)           # returns before the programs are built
    x = cp.zeros(32, np.float32)
    for unit in units:                      # each launch waits for its own program
        nvrtc.kernel(*unit)((1,), (32,), (x,))
    np.testing.assert_array_equal(cp.asnumpy(x), np.full(32, 10.0))
    assert all(nvrtc.ready(u) and (0, u) not in nvrtc._PENDING for u in units)


def test_a_kernel_that_fails_to_compile_reports_its_own_error(gpu):
    import cupy as cp
    from fnx.cuda import compile as nvrtc
    good = _unique_units("x[0] = {i};", 2)
    bad = _unique_units("x[0] = undefined_name_{i};", 1)
    nvrtc.compile_together(good + bad)
    x = cp.zeros(1, np.float32)
    nvrtc.kernel(*good[1])((1,), (1,), (x,))
    assert float(x[0]) == 1.0
    with pytest.raises(Exception, match="undefined_name_0"):
        nvrtc.kernel(*bad[0])((1,), (1,), (x,))


@pytest.mark.parametrize("case", range(4))
def test_data_movement_of_computed_values_in_one_kernel_matches_the_cpu(gpu, case):
    from test_passes import MOVED_COMPUTED
    name, fn, shapes = MOVED_COMPUTED[case]
    rng = np.random.default_rng(12 + case)
    host = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    exe, outs = _lower(fn, [fnx.device_put(a, gpu) for a in host], gpu)
    assert exe.num_launches == 1, (name, exe.describe())
    want = fn(*[jnp.asarray(a.astype(np.float64)) for a in host])
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_cheap_work_broadcast_into_one_kernel_matches_the_cpu(gpu):
    from test_passes import cluster_update
    rng = np.random.default_rng(21)
    host = [rng.standard_normal((64, 9)).astype(np.float32),
            (rng.integers(0, 3, 64) * 1.0).astype(np.float32),
            rng.standard_normal((64, 9)).astype(np.float32)]
    exe, outs = _lower(cluster_update, [fnx.device_put(a, gpu) for a in host], gpu)
    assert exe.num_launches == 1, exe.describe()
    want = cluster_update(*[jnp.asarray(a.astype(np.float64)) for a in host])
    np.testing.assert_allclose(gpu.to_numpy(outs[0]), np.asarray(want), rtol=1e-6)
