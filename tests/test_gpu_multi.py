"""Collectives on GPUs: a one-GPU mesh, NCCL with one rank, an all-reduce captured in a
CUDA graph, and (with two or more GPUs) pmap against vmap. Run on the device machine."""
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.sharding import NamedSharding, PartitionSpec as P

pytestmark = pytest.mark.cuda


def _loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def _dp_step(w, x, y):
    loss, g = fnx.value_and_grad(_loss)(w, x, y)
    return w - 0.1 * lax.pmean(g, "batch"), lax.pmean(loss, "batch")


def test_one_gpu_mesh(gpu, rng):
    mesh = fnx.make_mesh((1,), ("batch",), devices=[gpu])
    w = rng.standard_normal((8, 4)).astype(np.float32)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((16, 4)).astype(np.float32)
    step = fnx.shard_map(_dp_step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                         out_specs=(P(), P()))
    w1, loss = step(w, x, y)
    assert w1.sharding == NamedSharding(mesh, P()) and w1._backend is gpu
    with fnx.default_device(fnx.devices("cpu")[0]):
        l0, g0 = fnx.value_and_grad(_loss)(w, x, y)
    np.testing.assert_allclose(loss, l0, rtol=1e-5)
    np.testing.assert_allclose(w1, w - 0.1 * np.asarray(g0), rtol=1e-5, atol=1e-6)
    out = fnx.pmap(lambda v: lax.psum(v, "i"), axis_name="i", devices=[gpu])(x[None])
    np.testing.assert_allclose(out[0], x, rtol=0)


def test_nccl_with_one_rank(gpu, rng):
    import cupy as cp
    from fnx.core import collectives as C
    from fnx.cuda import nccl
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"
    group = nccl.NcclGroup([gpu])
    x = cp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
    with C.device_context(C.DeviceContext([("i", 1)], (0,), group)):
        total = nccl.impls()[C.psum_p](x, axes=("i",))
        gathered = nccl.impls()[C.all_gather_p](x, axes=("i",), axis_size=1, axis=1,
                                               tiled=False)
        index = nccl.impls()[C.axis_index_p](axes=("i",))
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(total), cp.asnumpy(x))
    np.testing.assert_array_equal(cp.asnumpy(gathered), cp.asnumpy(x)[:, None])
    assert int(index) == 0


def test_all_reduce_is_captured_in_the_programs_graph(gpu, rng):
    from fnx.core import spmd
    mesh = fnx.make_mesh((1,), ("batch",), devices=[gpu])
    step = fnx.shard_map(_dp_step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                         out_specs=(P(), P()))
    w = rng.standard_normal((8, 4)).astype(np.float32)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((16, 4)).astype(np.float32)
    ws = [w]
    for _ in range(4):
        ws.append(np.asarray(step(ws[-1], x, y)[0]))
    exe = next(iter(spmd._programs[next(iter(step._cache.values()))[0]].values()))
    assert exe.graph is not None, exe.reason
    assert "psum" in exe.describe()
    with fnx.default_device(fnx.devices("cpu")[0]):
        want = [w]
        for _ in range(4):
            want.append(np.asarray(want[-1] - 0.1 * fnx.grad(_loss)(want[-1], x, y)))
    np.testing.assert_allclose(ws[-1], want[-1], rtol=1e-4, atol=1e-5)


def test_pmap_over_every_gpu_equals_vmap(rng):
    gpus = fnx.devices("gpu")
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    n = len(gpus)
    xs = rng.standard_normal((n, 6, 4)).astype(np.float32)

    def f(x):
        h = x - lax.pmean(x, "i")
        h = h + lax.ppermute(h, "i", [(k, (k + 1) % n) for k in range(n)])
        g = lax.all_gather(h, "i", axis=1, tiled=True)
        return lax.psum_scatter(g, "i", scatter_dimension=1, tiled=True) + lax.axis_index("i")
    got = fnx.pmap(f, axis_name="i")(xs)
    want = fnx.vmap(f, axis_name="i")(xs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert got.sharding.device_set == set(gpus)
