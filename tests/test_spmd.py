"""pmap, shard_map, meshes and shardings on 8 virtual CPU devices: the SPMD engine (one thread
per device, collectives in memory) gives the single-device program's numbers and JAX's."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.sharding import Mesh, NamedSharding, PartitionSpec as P, PositionalSharding
from conftest import virtual_cpu_devices


@pytest.fixture(autouse=True, scope="module")
def eight_devices():
    """8 virtual CPU devices, the default ones even where a GPU is present."""
    with virtual_cpu_devices(8):
        yield


# one per-device step that uses every collective, run by fnx here and by JAX in a subprocess
_PROGRAM = """
def program(x, w):
    h = jnp.tanh(x @ w)
    h = h - lax.pmean(h, "i")
    h = h + lax.ppermute(h, "i", [(k, (k + 1) % 8) for k in range(8)]) * 0.5
    hs = lax.stop_gradient(h)          # JAX does not differentiate pmax and pmin
    g = lax.all_gather(h, "i", axis=0, tiled=True)[:2] + lax.pmax(hs, "i") - lax.pmin(hs, "i")
    g = lax.all_to_all(jnp.concatenate([g] * 4, axis=1), "i", 1, 0, tiled=True)
    g = lax.psum_scatter(g, "i", scatter_dimension=0, tiled=True)
    g = g + lax.all_gather(g[0], "i")[:2]
    return jnp.sum(g ** 2) * (1 + lax.axis_index("i")), lax.psum(h, "i")
"""
_namespace = {"jnp": jnp, "lax": lax}
exec(_PROGRAM, _namespace)
_program = _namespace["program"]


def test_devices_follow_the_option():
    devs = fnx.devices()
    assert len(devs) == fnx.device_count() == fnx.local_device_count() == 8
    assert [d.id for d in devs] == list(range(8)) and repr(devs[3]) == "CpuDevice(id=3)"
    assert devs[0] is fnx.devices("cpu")[0]


def test_pmap_equals_vmap_with_the_axis_name(rng):
    xs, w = rng.standard_normal((8, 2, 3)), rng.standard_normal((3, 4))
    got = fnx.pmap(_program, axis_name="i", in_axes=(0, None))(xs, w)
    want = fnx.vmap(_program, axis_name="i", in_axes=(0, None))(xs, w)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
    assert got[0].sharding.device_set == set(fnx.devices())
    assert [s.data.shape for s in got[1].addressable_shards] == [(2, 4)] * 8


def test_grad_inside_pmap_and_pmap_inside_grad_and_jit(rng):
    xs, w = rng.standard_normal((8, 2, 3)), rng.standard_normal((3, 4))
    loss = lambda w, x: _program(x, w)[0]          # noqa: E731
    got = fnx.pmap(fnx.grad(loss), axis_name="i", in_axes=(None, 0))(w, xs)
    want = fnx.vmap(fnx.grad(loss), axis_name="i", in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    total = lambda w: jnp.sum(fnx.pmap(loss, axis_name="i", in_axes=(None, 0))(w, xs))  # noqa
    np.testing.assert_allclose(fnx.grad(total)(w), fnx.jit(fnx.grad(total))(w), rtol=1e-10)
    np.testing.assert_allclose(fnx.grad(total)(w), want.sum(0) * 0 + fnx.grad(
        lambda w: jnp.sum(fnx.vmap(loss, axis_name="i", in_axes=(None, 0))(w, xs)))(w),
        rtol=1e-10)


def test_pmap_arguments(rng):
    xs = rng.standard_normal((3, 4, 5))
    f = fnx.pmap(lambda x, k, y: (x * k + lax.psum(y, "i"), x), axis_name="i",
                 in_axes=(1, None, 0), out_axes=(None, 2), static_broadcasted_argnums=1)
    with pytest.raises(fnx.ShapeError, match="different sizes"):
        f(xs, 2.0, np.ones((3,)))
    ys = rng.standard_normal((4,))
    # out_axes=None: the result must be the same on every device; here it is not, and
    # device 0's value is returned, as in JAX
    first, moved = f(xs, 2.0, ys)
    np.testing.assert_allclose(first, xs[:, 0] * 2.0 + ys.sum(), rtol=1e-12)
    np.testing.assert_allclose(moved, np.moveaxis(xs, 1, 2), rtol=0)
    assert moved.sharding.sharded_dim == 2


def test_pmap_on_a_subset_of_devices_and_too_many(rng):
    xs = rng.standard_normal((2, 3))
    devs = fnx.devices()[5:7]
    out = fnx.pmap(lambda x: lax.psum(x, "i"), axis_name="i", devices=devs)(xs)
    np.testing.assert_allclose(out, np.broadcast_to(xs.sum(0), xs.shape), rtol=1e-12)
    assert out.sharding.device_set == set(devs)
    with pytest.raises(fnx.MeshError, match="size 9, but only 8 devices") as info:
        fnx.pmap(lambda x: x)(np.ones((9, 2)))
    assert info.value.source.filename == __file__


def _mesh_program(x, w):
    h = x @ w                                   # rows over 'data', columns over 'model'
    h = lax.psum(jnp.sum(h * h, axis=1, keepdims=True), "model") + h
    return lax.pmean(jnp.sum(h ** 2), ("data", "model")), h


def test_shard_map_on_a_2d_mesh_equals_its_one_device_program(rng):
    mesh = fnx.make_mesh((4, 2), ("data", "model"))
    x, w = rng.standard_normal((8, 6)), rng.standard_normal((6, 4))
    f = fnx.shard_map(_mesh_program, mesh=mesh, in_specs=(P("data"), P(None, "model")),
                      out_specs=(P(), P("data", "model")))
    loss, h = f(x, w)
    loss_j, h_j = fnx.jit(f)(x, w)           # traced: the vmapped one-device program
    np.testing.assert_allclose(loss, loss_j, rtol=1e-12)
    np.testing.assert_allclose(h, h_j, rtol=1e-12)
    assert h.sharding == NamedSharding(mesh, P("data", "model"))
    # NumPy, block by block
    blocks = [[x[2 * a:2 * a + 2] @ w[:, 2 * b:2 * b + 2] for b in range(2)] for a in range(4)]
    sq = [sum((blk * blk).sum(1, keepdims=True) for blk in row) for row in blocks]
    h_np = np.block([[blk + sq[a] for blk in row] for a, row in enumerate(blocks)])
    np.testing.assert_allclose(h, h_np, rtol=1e-12)
    np.testing.assert_allclose(loss, (h_np ** 2).sum() / 8, rtol=1e-12)
    grad = fnx.grad(lambda w: f(x, w)[0])(w)
    grad_j = fnx.jit(fnx.grad(lambda w: f(x, w)[0]))(w)
    np.testing.assert_allclose(grad, grad_j, rtol=1e-12)


def test_data_parallel_step_equals_the_one_device_step(rng):
    """shard_map with the batch split and the parameters replicated; jit with shardings."""
    mesh = fnx.make_mesh((8,), ("batch",))
    w, x = rng.standard_normal((5, 3)), rng.standard_normal((32, 5))
    y = rng.standard_normal((32, 3))
    loss = lambda w, x, y: jnp.mean((jnp.tanh(x @ w) - y) ** 2)        # noqa: E731

    def step(w, x, y):
        lv, g = fnx.value_and_grad(loss)(w, x, y)
        return w - 0.1 * lax.pmean(g, "batch"), lax.pmean(lv, "batch")
    dp = fnx.shard_map(step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                       out_specs=(P(), P()))
    w1, l1 = dp(w, x, y)
    l0, g0 = fnx.value_and_grad(loss)(w, x, y)
    np.testing.assert_allclose(l1, l0, rtol=1e-12)
    np.testing.assert_allclose(w1, w - 0.1 * g0, rtol=1e-12)
    w2, _ = dp(w1, x, y)          # the replicated result's blocks are reused where they are
    np.testing.assert_allclose(w2, w1 - 0.1 * fnx.grad(loss)(w1, x, y), rtol=1e-12)

    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    jstep = fnx.jit(lambda w, x, y: w - 0.1 * fnx.grad(loss)(w, x, y),
                    in_shardings=(rep, rows, rows), out_shardings=rep)
    out = jstep(w, x, y)
    np.testing.assert_allclose(out, w - 0.1 * g0, rtol=1e-12)
    assert out.sharding == rep and out.is_fully_replicated


def test_device_put_with_shardings(rng):
    mesh = fnx.make_mesh((2, 4), ("a", "b"))
    x = rng.standard_normal((4, 8))
    y = fnx.device_put(x, NamedSharding(mesh, P("b", "a")))
    shards = y.addressable_shards
    assert len(shards) == 8 and {s.data.shape for s in shards} == {(1, 4)}
    for s in shards:
        np.testing.assert_array_equal(s.data, x[s.index])
        assert s.data.sharding.device_set == {s.device}
    rep = fnx.device_put(x, NamedSharding(mesh, P()))
    assert {s.replica_id for s in rep.addressable_shards} == set(range(8))
    pos = fnx.device_put(x, PositionalSharding(fnx.devices()).reshape(2, 4).replicate(0))
    assert {s.data.shape for s in pos.addressable_shards} == {(4, 2)}
    with pytest.raises(fnx.ShapeError, match=r"dimension 0 \(5\) is not a multiple of 4"):
        fnx.device_put(np.ones((5, 2)), NamedSharding(mesh, P("b")))
    with pytest.raises(fnx.MeshError, match="not in"):
        NamedSharding(mesh, P("c"))


def test_meshes_that_do_not_fit():
    with pytest.raises(fnx.MeshError, match=r"needs 16 devices, but 8 are available") as info:
        fnx.make_mesh((4, 4), ("a", "b"))
    assert info.value.source.filename == __file__
    with pytest.raises(fnx.MeshError, match="needs 2 axis names"):
        Mesh(np.array(fnx.devices()).reshape(2, 4), ("a",))
    mesh = fnx.make_mesh((8,), ("i",))
    f = fnx.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    with pytest.raises(fnx.ShapeError, match="cannot be split"):
        f(np.ones(12))


def test_a_failing_device_releases_the_others():
    mesh = fnx.make_mesh((8,), ("i",))

    def bad(x):
        # device 3 raises before the collective the others wait in
        y = fnx.pure_callback(lambda v: _raise_on(3, v), x, x)
        return lax.psum(y, "i")
    with pytest.raises(RuntimeError, match="device 3 fails"):
        fnx.shard_map(bad, mesh=mesh, in_specs=P("i"), out_specs=P())(np.arange(8.0))
    # and the devices work afterwards
    out = fnx.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"),
                        out_specs=P())(np.arange(8.0))
    np.testing.assert_allclose(out, [28.0])


def _raise_on(k, v):
    if float(np.asarray(v)[0]) == k:
        raise RuntimeError(f"device {k} fails")
    return v


def test_collective_of_mismatched_shapes_names_the_devices():
    from fnx.backends.host_comm import HostCommunicator
    comm = HostCommunicator((0, 1))
    errors = []

    def run(rank, shape):
        try:
            comm.exchange(rank, np.ones(shape), [0, 1], lambda vals: vals[0])
        except fnx.ShapeError as e:
            errors.append(str(e))
    ts = [threading.Thread(target=run, args=(r, s)) for r, s in ((0, (2,)), (1, (3,)))]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert len(errors) == 2 and "CpuDevice(id=1): float64[3]" in errors[0]


_JAX_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax import lax
    from jax.sharding import NamedSharding, PartitionSpec as P
    jax.config.update("jax_enable_x64", True)
    data = np.load(sys.argv[1])
    xs, w, x2 = data["xs"], data["w"], data["x2"]

    exec(data["program"].item(), globals())
    prog = lambda x, w: program(x, w)[0]
    out = {"pmap": np.asarray(jax.pmap(prog, axis_name="i", in_axes=(0, None))(xs, w)),
           "pmap_grad": np.asarray(jax.pmap(jax.grad(prog, 1), axis_name="i",
                                            in_axes=(0, None))(xs, w))}
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    def mesh_prog(x, w):
        h = x @ w
        h = lax.psum(jnp.sum(h * h, axis=1, keepdims=True), "model") + h
        return lax.pmean(jnp.sum(h ** 2), ("data", "model")), h
    f = jax.shard_map(mesh_prog, mesh=mesh, in_specs=(P("data"), P(None, "model")),
                      out_specs=(P(), P("data", "model")), check_vma=False)
    args = (jax.device_put(x2, NamedSharding(mesh, P("data"))),
            jax.device_put(w, NamedSharding(mesh, P(None, "model"))))
    loss, h = jax.jit(f)(*args)
    out["shard_loss"], out["shard_h"] = np.asarray(loss), np.asarray(h)
    np.savez(sys.argv[2], **out)
""")


def test_pmap_and_shard_map_match_jax_on_virtual_devices(rng, tmp_path):
    """JAX's device count is fixed at its first use: it runs in a subprocess of its own."""
    xs, w, x2 = rng.standard_normal((8, 2, 6)), rng.standard_normal((6, 4)), \
        rng.standard_normal((8, 6))
    np.savez(tmp_path / "in.npz", xs=xs, w=w, x2=x2, program=np.array(_PROGRAM))
    script = tmp_path / "oracle.py"
    script.write_text(_JAX_SCRIPT)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npz")], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    want = np.load(tmp_path / "out.npz")

    prog = lambda x, w: _program(x, w)[0]        # noqa: E731
    np.testing.assert_allclose(fnx.pmap(prog, axis_name="i", in_axes=(0, None))(xs, w),
                               want["pmap"], rtol=1e-10)
    np.testing.assert_allclose(fnx.pmap(fnx.grad(prog, 1), axis_name="i",
                                        in_axes=(0, None))(xs, w), want["pmap_grad"],
                               rtol=1e-10, atol=1e-12 * np.abs(want["pmap_grad"]).max())
    mesh = fnx.make_mesh((4, 2), ("data", "model"))
    f = fnx.shard_map(_mesh_program, mesh=mesh, in_specs=(P("data"), P(None, "model")),
                      out_specs=(P(), P("data", "model")))
    loss, h = f(x2, w)
    np.testing.assert_allclose(loss, want["shard_loss"], rtol=1e-12)
    np.testing.assert_allclose(h, want["shard_h"], rtol=1e-12)


def test_xla_flags_set_the_device_count_in_a_fresh_process():
    code = "import fnx; print(fnx.device_count('cpu'))"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=3",
               FNX_PLATFORM="cpu", PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "3"


def test_pmap_style_replicated_parameters(rng):
    devs = fnx.devices()[:4]
    w = rng.standard_normal((3, 2))
    ws = fnx.device_put_replicated({"w": w}, devs)
    assert ws["w"].shape == (4, 3, 2) and ws["w"].sharding.device_set == set(devs)
    xs = fnx.device_put_sharded([rng.standard_normal((5, 3)) for _ in range(4)], devs)
    step = fnx.pmap(lambda p, x: {"w": p["w"] - lax.pmean(x.T @ (x @ p["w"]), "i")},
                    axis_name="i")
    new = step(ws, xs)
    xs_np = np.asarray(xs)
    want = w - np.mean([x.T @ (x @ w) for x in xs_np], axis=0)
    np.testing.assert_allclose(new["w"], np.broadcast_to(want, (4, 3, 2)), rtol=1e-12)
    again = step(new, xs)       # the result's blocks are used where they are
    np.testing.assert_allclose(again["w"][0], want - np.mean(
        [x.T @ (x @ want) for x in xs_np], axis=0), rtol=1e-12)


def test_set_mesh_gives_shard_map_its_mesh():
    mesh = fnx.make_mesh((8,), ("i",))
    with fnx.set_mesh(mesh):
        out = fnx.shard_map(lambda x: lax.psum(x, "i"), in_specs=P("i"), out_specs=P())(
            np.arange(8.0))
    np.testing.assert_allclose(out, [28.0])
    with pytest.raises(fnx.MeshError, match="needs a mesh"):
        fnx.shard_map(lambda x: x, in_specs=P("i"), out_specs=P("i"))


def test_distributed_store_hands_values_between_processes():
    """The coordinator's key-value store (NCCL's unique ids travel through it)."""
    import socket
    from fnx.distributed import _Server, _Store
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = _Server(("127.0.0.1", port))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        a, b = _Store(("127.0.0.1", port), 5.0), _Store(("127.0.0.1", port), 5.0)
        got = []
        reader = threading.Thread(target=lambda: got.append(b.get("nccl-id/0,1")))
        reader.start()              # waits until the key arrives
        a.set("nccl-id/0,1", list(range(-3, 125)))
        reader.join(5)
        assert got == [list(range(-3, 125))]
    finally:
        server.shutdown()
        server.server_close()
    assert fnx.process_index() == 0 and fnx.process_count() == 1


def test_jit_with_parameters_sharded_over_a_mesh_axis(rng):
    mesh = fnx.make_mesh((2, 4), ("data", "model"))
    w, x = rng.standard_normal((6, 8)), rng.standard_normal((4, 6))
    cols, rows = NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("data"))
    f = fnx.jit(lambda w, x: lax.with_sharding_constraint(jnp.tanh(x @ w), cols),
                in_shardings=(cols, rows), out_shardings=NamedSharding(mesh, P("data", "model")))
    out = f(w, x)
    np.testing.assert_allclose(out, np.tanh(x @ w), rtol=1e-12)
    assert out.sharding.spec == P("data", "model")
    assert {s.data.shape for s in out.addressable_shards} == {(2, 2)}
    g = fnx.grad(lambda w: jnp.sum(f(w, x)))(w)
    np.testing.assert_allclose(g, x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-12)
    with pytest.raises(fnx.ShapeError, match="not a multiple of 4"):
        f(np.ones((6, 6)), x)


def test_unknown_axis_names_in_pmap_and_shard_map():
    with pytest.raises(fnx.AxisNameError, match=r"'j'.*bound here: \['i'\]") as info:
        fnx.pmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.ones((2, 3)))
    assert info.value.source.filename == __file__
    mesh = fnx.make_mesh((2, 4), ("a", "b"))
    with pytest.raises(fnx.AxisNameError, match=r"'c'.*\['a', 'b'\]"):
        fnx.shard_map(lambda x: lax.all_gather(x, "c"), mesh=mesh, in_specs=P("a"),
                      out_specs=P("a"))(np.ones(4))


def test_blocks_placed_on_their_devices_are_used_where_they_are(rng):
    """(GPUs place a sharded array's blocks at device_put; the CPU path cuts them per call.)"""
    from fnx.core import spmd
    mesh = fnx.make_mesh((4, 2), ("a", "b"))
    sharding = NamedSharding(mesh, P("b", "a"))
    x = fnx.device_put(rng.standard_normal((4, 8)), sharding)
    spmd.place_blocks(x, sharding)
    bufs = spmd._resident[id(x)][2]
    for buf, s in zip(bufs, x.addressable_shards):
        np.testing.assert_array_equal(buf, s.data)
    f = fnx.shard_map(lambda v: v * (1 + lax.axis_index("a")), mesh=mesh,
                      in_specs=P("b", "a"), out_specs=P("b", "a"))
    scale = np.repeat(np.arange(1, 5), 2)[None, :]
    np.testing.assert_allclose(f(x), np.asarray(x) * scale, rtol=1e-12)


def _device_program(placed):
    """The per-device jaxpr a jit with shardings runs (its shard_map's traced program)."""
    from fnx.core.shard_map import _ShardMapped
    run = next(r for r in placed._partitioned.values() if r)
    mapped = next(c.cell_contents for c in run.__closure__
                  if isinstance(c.cell_contents, _ShardMapped))
    return next(iter(mapped._cache.values()))[0]


def test_jit_with_shardings_runs_a_data_parallel_step_on_every_device(rng):
    mesh = fnx.make_mesh((8,), ("batch",))
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    params = (rng.standard_normal((5, 3)), rng.standard_normal(3))
    x, y = rng.standard_normal((32, 5)), rng.standard_normal((32, 3))

    def loss(p, x, y):
        h = fnx.nn.relu(x @ p[0] + p[1])
        return jnp.mean((fnx.nn.log_softmax(h) - y) ** 2) + 0.1 * jnp.max(jnp.abs(h))

    def step(p, x, y):
        lv, g = fnx.value_and_grad(loss)(p, x, y)
        return fnx.tree.map(lambda a, b: a - 0.1 * b, p, g), lv
    placed = fnx.jit(step, in_shardings=(rep, rows, rows), out_shardings=(rep, rep))
    (w1, b1), l1 = placed(params, x, y)
    (w0, b0), l0 = fnx.jit(step)(params, x, y)
    for got, want in ((w1, w0), (b1, b0), (l1, l0)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    jaxpr = _device_program(placed)
    names = {e.primitive.name for e in jaxpr.eqns}
    assert {"psum", "pmax"} <= names and "all_gather" not in names
    # every product works on the device's 4 rows (or contracts them, then psums)
    dots = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert all(32 not in e.invars[0].aval.shape + e.invars[1].aval.shape for e in dots)
    assert w1.sharding == rep


def test_jit_with_shardings_keeps_a_conv_net_data_parallel(rng):
    """Convolutions of the device's images, and each kernel's gradient from them psum'd."""
    mesh = fnx.make_mesh((8,), ("batch",))
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    params = (rng.standard_normal((3, 3, 2, 4)), rng.standard_normal((3, 3, 4, 3)))
    x = rng.standard_normal((16, 6, 6, 2))
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(p, x):
        h = fnx.nn.relu(lax.conv_general_dilated(x, p[0], (1, 1), "SAME",
                                                 dimension_numbers=dn))
        y = lax.conv_general_dilated(h, p[1], (2, 2), "VALID", dimension_numbers=dn)
        return jnp.mean(y ** 2)

    grad = fnx.grad(loss)
    placed = fnx.jit(grad, in_shardings=(rep, rows), out_shardings=rep)
    for got, want in zip(placed(params, x), fnx.jit(grad)(params, x)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    jaxpr = _device_program(placed)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert "all_gather" not in names and names.count("conv_general_dilated") == 5
    assert all(16 not in v.aval.shape for e in jaxpr.eqns for v in e.invars)


@pytest.mark.parametrize("case", ["model_parallel", "reshape", "fallback", "2d_reduce",
                                  "attention", "gram"])
def test_jit_with_shardings_partitions_like_the_global_program(rng, case):
    mesh = fnx.make_mesh((2, 4), ("data", "model"))
    S = lambda *spec: NamedSharding(mesh, P(*spec))          # noqa: E731
    if case == "model_parallel":      # columns of w over 'model', rows of x over 'data'
        f = lambda w, x: jnp.tanh(x @ w) @ w.T                # noqa: E731
        args, ins, out = (rng.standard_normal((6, 8)), rng.standard_normal((4, 6))), \
            (S(None, "model"), S("data")), S("data")
    elif case == "reshape":
        f = lambda x: (x.reshape(8, 3, 4) * 2).reshape(8, 12).sum(1)   # noqa: E731
        args, ins, out = (rng.standard_normal((8, 12)),), (S("data"),), S("data")
    elif case == "fallback":          # a cumulative sum along the split axis: gathered
        f = lambda x: jnp.cumsum(x, axis=0) * x                # noqa: E731
        args, ins, out = (rng.standard_normal((8, 4)),), (S("model"),), S("model")
    elif case == "gram":              # one axis would split both dimensions: rhs is gathered
        f = lambda x: x.T @ x                                  # noqa: E731
        args, ins, out = (rng.standard_normal((4, 8)),), (S("data", "model"),), S("model")
    elif case == "2d_reduce":
        f = lambda x: jnp.max(x, axis=(0, 1)) * jnp.sum(x, axis=(0, 1))  # noqa: E731
        args, ins, out = (rng.standard_normal((4, 8, 3)),), (S("data", "model"),), S()
    else:                             # a batch of sequences over 'data', weights replicated

        def f(x, w):
            q, k, v = jnp.split(x @ w, 3, axis=-1)
            att = fnx.nn.softmax(q @ k.transpose(0, 2, 1) / 2.0)
            return fnx.grad(lambda v: jnp.sum(jnp.tanh(att @ v)))(v)
        args, ins, out = (rng.standard_normal((4, 5, 6)), rng.standard_normal((6, 9))), \
            (S("data"), S()), S("data")
    placed = fnx.jit(f, in_shardings=ins, out_shardings=out)
    got = placed(*args)
    np.testing.assert_allclose(got, f(*[jnp.asarray(a) for a in args]), rtol=1e-12, atol=1e-13)
    assert got.sharding == out
    names = {e.primitive.name for e in _device_program(placed).eqns}
    assert ("all_gather" in names) == (case in ("fallback", "gram"))
