"""fnx.cuda.split_gemm without a GPU: which configurations a problem is offered, and what the
generated kernels are made of. Their numerics run on the device (test_gpu_lowering.py's table
of generated GEMMs, against float64)."""
import numpy as np
import pytest

from fnx.cuda.small_gemm import PLAIN, SmallGemm, update
from fnx.cuda.split_gemm import split_candidates, split_tiles


@pytest.mark.parametrize("m,n,k,capability,expected", [
    # a 128-row batch's layers: 64 tiles of 32 x 32, K split over clusters of 8
    (128, 512, 784, 90, ["tiles32x32x8", "tiles32x64x8"]),
    (128, 512, 512, 90, ["tiles32x32x8", "tiles32x64x8"]),
    # each block keeps at least 64 of K
    (128, 512, 256, 90, ["tiles32x32x4", "tiles32x64x4"]),
    # a weight gradient's 400 tiles fill the GPU without splitting K
    (784, 512, 128, 90, ["tiles64x64x1x8", "tiles32x32x1"]),
    # no clusters before 9.0, no asynchronous copies before 8.0
    (128, 512, 784, 80, ["tiles64x64x1x8", "tiles32x32x1"]),
    (128, 512, 784, 75, []),
    # big problems are cuBLAS's, thin ones fnx.cuda.small_gemm's
    (1024, 2048, 784, 90, []),
    (128, 10, 512, 90, []),
    (128, 512, 16, 90, []),
])
def test_configurations_offered(m, n, k, capability, expected):
    assert split_candidates(m, n, k, capability) == expected


def test_a_split_tile_is_a_cluster_that_adds_up_through_shared_memory():
    body, grid, block, attributes = split_tiles(128, 512, 784, False, False, "float", PLAIN,
                                                32, 32, 8)
    assert attributes == "__cluster_dims__(8, 1, 1) "
    assert grid == (4 * 16 * 8,) and block == (64,)
    assert "mapa.u64" in body and body.count("barrier.cluster.wait") == 2
    # a whole-K tile finishes from registers, with no cluster
    body, grid, _, attributes = split_tiles(784, 512, 128, True, False, "float", PLAIN,
                                            64, 64, 1, 8)
    assert attributes == "" and grid == (13 * 8,) and "barrier.cluster" not in body


@pytest.mark.parametrize("n,vector", [(512, True), (70, False)])
def test_outputs_are_stored_16_bytes_at_a_time_where_rows_allow(n, vector):
    """A gradient step in place: every old value a thread updates is read before its stores."""
    gemm = SmallGemm("tiles32x32x1", 96, n, 64, True, False, np.float32, update(-0.5, "float"))
    stores = gemm.source.count("reinterpret_cast<float4*>(C +")
    assert (stores > 0) == vector
    if vector:
        assert gemm.source.rindex("P[i]") < gemm.source.index("reinterpret_cast<float4*>(C +")
        assert gemm.loads_vectors       # the gemm table's alignment check applies


def test_configurations_it_cannot_make_are_refused():
    with pytest.raises(ValueError, match="float32"):
        split_tiles(128, 512, 784, False, False, "double", PLAIN, 32, 32, 8)
    with pytest.raises(ValueError, match="does not split"):
        split_tiles(128, 512, 784, False, False, "float", PLAIN, 32, 32, 3)
