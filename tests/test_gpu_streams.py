"""Side streams on the GPU: a jitted training step whose weight updates run beside its backward
pass gives the same results, call after call, as the same step on one stream."""
import numpy as np
import pytest

import fnx

from test_gpu_graph import _jit_step_exe, _mlp, _train_step

pytestmark = pytest.mark.cuda



@pytest.mark.parametrize("sizes,batch", [((32, 64, 10), 16), ((256, 512, 512, 10), 256)])
def test_side_streams_train_like_one_stream(gpu, sizes, batch, monkeypatch):
    from fnx.cuda.graph import GraphExecutable
    # replay the side-stream graph whichever is faster, so that it is the one checked
    monkeypatch.setattr(GraphExecutable, "_times", lambda self, recorded, static_in: [1, 2])
    rng = np.random.default_rng(5)
    params, x, labels = _mlp(gpu, rng, sizes, batch)
    copy = fnx.tree_util.tree_map(lambda a: a + 0.0, params)
    steps = {n: fnx.jit(lambda p, x, y: _train_step(p, x, y), donate_argnums=0) for n in (0, 2)}
    one, two = copy, params
    xs = [fnx.device_put(rng.standard_normal(x.shape).astype(np.float32), gpu) for _ in range(3)]
    for k in range(12):     # eager first call, capture, then replays with changing inputs
        xk = xs[k % 3]
        with fnx.config.option("gpu_side_streams", 0):    # read when the step is lowered
            v1, one = steps[0](one, xk, labels)
        v2, two = steps[2](two, xk, labels)
        np.testing.assert_allclose(float(v2), float(v1), rtol=1e-6)
        for a, b in zip(fnx.tree_util.tree_leaves(two), fnx.tree_util.tree_leaves(one)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    exe = _jit_step_exe(steps[2])
    sched = exe.executable.schedule
    layers = len(sizes) - 1
    # every weight update but the first layer's, and the bias updates, beside the main chain
    assert sched.side_steps >= layers, exe.describe()
    assert "side stream" in exe.describe()
    assert exe.graph is not None and exe.eager_fallbacks == 0, exe.describe()
    assert _jit_step_exe(steps[0]).executable.schedule.side_steps == 0


def test_graph_keeps_side_streams_only_where_clearly_faster_and_says_so(gpu):
    rng = np.random.default_rng(6)
    params, x, labels = _mlp(gpu, rng, (64, 128, 128, 10), 64)
    step = fnx.jit(lambda p, x, y: _train_step(p, x, y), donate_argnums=0)
    ref = fnx.jit(lambda p, x, y: _train_step(p, x, y))
    ref_params = fnx.tree_util.tree_map(lambda a: a + 0.0, params)
    for _ in range(4):
        v, params = step(params, x, labels)
        rv, ref_params = ref(ref_params, x, labels)
    # timing the two graphs replayed the step on the donated buffers: they were put back
    for a, b in zip(fnx.tree_util.tree_leaves(params), fnx.tree_util.tree_leaves(ref_params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    exe = _jit_step_exe(step)
    times = exe.timed
    assert set(times) == {"side streams", "one stream"}, exe.describe()
    from fnx.cuda.graph import SIDE_STREAMS_MIN_GAIN
    side = times["side streams"] < (1 - SIDE_STREAMS_MIN_GAIN) * times["one stream"]
    assert (exe.schedule.side_steps > 0) == side, exe.describe()
    assert "chosen by replay time" in exe.describe()
    # side streams' cuBLAS workspaces are held only by a program that runs on them
    workspaces = exe.executable._side_workspaces
    assert (workspaces is not None and len(workspaces) > 0) == side
