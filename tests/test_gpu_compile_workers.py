"""NVRTC in compiling processes (fnx.cuda.compile.Workers, started with the GPU backend):
programs they build load and run, their binaries are cached on disk, and a source that fails
to compile leaves the in-process path to report it."""
import numpy as np
import pytest

pytestmark = pytest.mark.cuda

_TWICE = ('extern "C" __global__ void fnx_twice(float* x, int n) {\n'
          '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
          '  if (i < n) x[i] *= 2.0f;\n}\n')


@pytest.fixture
def workers(tmp_path, monkeypatch):
    from fnx.cuda import compile as C
    monkeypatch.setenv("FNX_CACHE_DIR", str(tmp_path))
    w = C.Workers(2)
    w.start()
    monkeypatch.setattr(C, "_workers", w)
    yield w
    while not w.idle.empty():
        w.idle.get().kill()


def test_a_program_built_by_the_workers_runs_and_is_cached(workers, tmp_path):
    import cupy as cp
    from fnx.cuda import compile as C
    assert workers.alive == 2 and workers.usable()
    source = _TWICE + "// " + str(np.random.default_rng().integers(1 << 30))  # not yet built
    C._build_program([(source, "fnx_twice")], cp.cuda.Device().id)
    kernel = C._KERNELS.pop((cp.cuda.Device().id, (source, "fnx_twice")))
    assert isinstance(kernel, C.LoadedKernel)
    x = cp.arange(5, dtype=cp.float32)
    kernel((1,), (32,), (x, np.int32(5)))
    np.testing.assert_array_equal(cp.asnumpy(x), [0, 2, 4, 6, 8])
    assert len(list(tmp_path.glob("kernels/*/*.bin"))) == 1
    assert C._binary(source) is not None          # from the disk cache


def test_a_source_that_does_not_compile_gives_no_binary(workers):
    from fnx.cuda import compile as C
    assert C._binary('extern "C" __global__ void broken( {') is None
    assert workers.alive == 2                     # the worker answered, and is kept
