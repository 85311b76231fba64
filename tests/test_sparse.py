"""fnx.experimental.sparse against the same computation on dense float64 NumPy arrays and
against jax.experimental.sparse on the CPU, with random values, shapes, layouts and nse; under
jit, grad and vmap."""
import jax
import jax.experimental.sparse as jsparse
import jax.numpy as jjnp
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.experimental import sparse

jax.config.update("jax_platforms", "cpu")
pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def close(actual, expected, tol=1e-10):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def sparse_array(rng, shape, density=0.4, dtype=np.float64):
    """A dense NumPy array with about ``density`` of its entries nonzero."""
    x = rng.standard_normal(shape).astype(dtype)
    return np.where(rng.random(shape) < density, x, 0).astype(dtype)


LAYOUTS = [((5, 4), 0, 0), ((5, 4), 1, 0), ((5, 4), 0, 1), ((3, 5, 4), 1, 0),
           ((3, 5, 4), 1, 1), ((2, 3, 4), 0, 0), ((2, 3, 4, 2), 2, 1)]


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_round_trip(rng, shape, n_batch, n_dense):
    x = sparse_array(rng, shape)
    M = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    n_sparse = len(shape) - n_batch - n_dense
    stored = np.any(x != 0, axis=tuple(range(n_batch + n_sparse, len(shape))))
    nse = stored.reshape(shape[:n_batch] + (-1,)).sum(-1).max()
    assert (M.shape, M.nse, M.n_batch, M.n_dense, M.n_sparse) == (shape, nse, n_batch, n_dense,
                                                                  n_sparse)
    assert M.indices.dtype == np.int32 and M.dtype == np.float64
    close(M.todense(), x)
    close(sparse.bcoo_todense(M), x)
    padded = sparse.bcoo_fromdense(x, nse=M.nse + 2, n_batch=n_batch, n_dense=n_dense)
    assert padded.nse == M.nse + 2
    close(padded.todense(), x)


@pytest.mark.parametrize("shape,n_batch,n_dense", [((3, 5, 4), 1, 1), ((5, 4), 0, 0)])
def test_fromdense_layout_matches_jax(rng, shape, n_batch, n_dense):
    x = sparse_array(rng, shape)
    M = sparse.bcoo_fromdense(x, nse=9, n_batch=n_batch, n_dense=n_dense)
    J = jsparse.bcoo_fromdense(jjnp.asarray(x), nse=9, n_batch=n_batch, n_dense=n_dense)
    close(M.data, J.data)
    np.testing.assert_array_equal(M.indices, J.indices)


def test_constructor_duplicates_padding_and_shape_errors():
    data = jnp.array([1.0, 2.0, 3.0, 4.0])
    indices = jnp.array([[0, 1], [0, 1], [2, 0], [5, 5]])      # a duplicate, then padding
    M = sparse.BCOO((data, indices), shape=(3, 2))
    expected = np.zeros((3, 2))
    expected[0, 1], expected[2, 0] = 3.0, 3.0
    close(M.todense(), expected)
    S = sparse.bcoo_sum_duplicates(M)
    assert S.nse == 2 and S.unique_indices and S.indices_sorted
    close(S.todense(), expected)
    close(S.data, [3.0, 3.0])
    np.testing.assert_array_equal(S.indices, [[0, 1], [2, 0]])
    with pytest.raises(fnx.errors.ShapeError, match=r"shape \(3, 3, 3\)"):
        sparse.BCOO((data, indices), shape=(3, 3, 3))
    with pytest.raises(TypeError):
        sparse.BCOO((data, indices.astype(jnp.float32)), shape=(3, 2))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_matmul_both_sides_against_numpy_and_jax(rng, shape, n_batch, n_dense):
    x = sparse_array(rng, shape)
    M = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    v = rng.standard_normal(shape[-1])
    w = rng.standard_normal((shape[-1], 3))
    u = rng.standard_normal((2, shape[-2]))
    close(M @ v, x @ v)
    close(M @ w, x @ w)
    close(u @ M, u @ x)
    if (n_batch, n_dense) == (1, 0) and len(shape) == 3:    # JAX cannot contract dense ones
        J = jsparse.BCOO.fromdense(jjnp.asarray(x), n_batch=n_batch, n_dense=n_dense)
        close(M @ jnp.asarray(w), J @ jjnp.asarray(w))
        close(jnp.asarray(u) @ M, jjnp.asarray(u) @ J)


DOT_CASES = [
    ((4, 5), (5, 3), (([1], [0]), ([], [])), 0, 0),
    ((4, 5), (4, 3), (([0], [0]), ([], [])), 0, 0),
    ((4, 5), (3, 5), (([1], [1]), ([], [])), 1, 0),
    ((2, 4, 5), (2, 5, 3), (([2], [1]), ([0], [0])), 1, 0),
    ((2, 4, 5), (2, 5, 3), (([2], [1]), ([0], [0])), 0, 0),
    ((2, 4, 5), (5, 2), (([2, 0], [0, 1]), ([], [])), 1, 1),
    ((3, 4, 2), (2, 4), (([2], [0]), ([], [])), 0, 1),
    ((3, 4, 2), (3, 2, 6), (([2], [1]), ([0], [0])), 0, 1),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dims,n_batch,n_dense", DOT_CASES)
def test_bcoo_dot_general_sparse_dense_and_dense_sparse(rng, lhs_shape, rhs_shape, dims,
                                                         n_batch, n_dense):
    x = sparse_array(rng, lhs_shape)
    y = rng.standard_normal(rhs_shape)
    M = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    expected = jax.lax.dot_general(jjnp.asarray(x), jjnp.asarray(y), dims)
    close(sparse.bcoo_dot_general(M, y, dimension_numbers=dims), expected)
    (lc, rc), (lb, rb) = dims
    swapped = ((rc, lc), (rb, lb))
    close(sparse.bcoo_dot_general(y, M, dimension_numbers=swapped),
          jax.lax.dot_general(jjnp.asarray(y), jjnp.asarray(x), swapped))
    if n_dense == 0:
        Y = sparse.BCOO.fromdense(sparse_array(rng, rhs_shape))
        out = sparse.bcoo_dot_general(M, Y, dimension_numbers=dims)
        assert isinstance(out, sparse.BCOO)
        close(out.todense(), jax.lax.dot_general(jjnp.asarray(x), jjnp.asarray(Y.todense()),
                                                 dims))


def test_dot_general_grad_wrt_data_and_dense_operand_matches_jax(rng):
    x = sparse_array(rng, (4, 6))
    M = sparse.BCOO.fromdense(x)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x))
    w = rng.standard_normal((6, 3))

    def loss(data, w, mod, ctor):
        out = ctor((data, M.indices if mod is sparse else J.indices), shape=(4, 6)) @ w
        return (mod_np(mod).tanh(out) ** 2).sum()
    mod_np = lambda mod: jnp if mod is sparse else jjnp  # noqa: E731
    g = fnx.grad(loss, argnums=(0, 1))(M.data, w, sparse, sparse.BCOO)
    gj = jax.grad(loss, argnums=(0, 1))(J.data, jjnp.asarray(w), jsparse, jsparse.BCOO)
    close(g[0], gj[0])
    close(g[1], gj[1])
    # finite differences along a random direction of the data
    direction = rng.standard_normal(M.data.shape)
    eps = 1e-6
    fd = (loss(M.data + eps * direction, w, sparse, sparse.BCOO)
          - loss(M.data - eps * direction, w, sparse, sparse.BCOO)) / (2 * eps)
    close(np.sum(np.asarray(g[0]) * direction), fd, tol=1e-6)
    # rhs sparse too
    gr = fnx.grad(lambda d: (w.T @ sparse.BCOO((d, M.indices), shape=(4, 6)).T).sum())(M.data)
    gjr = jax.grad(lambda d: (jjnp.asarray(w).T @ jsparse.BCOO((d, J.indices),
                                                               shape=(4, 6)).T).sum())(J.data)
    close(gr, gjr)


def test_sparse_grad_and_value_and_grad_return_sparse_gradients(rng):
    x = sparse_array(rng, (5, 4))
    v = rng.standard_normal(4)
    M = sparse.BCOO.fromdense(x)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x))
    f = lambda M, v: jnp.sin(M @ v).sum()                  # noqa: E731
    fj = lambda M, v: jjnp.sin(M @ v).sum()                # noqa: E731
    g = sparse.grad(f)(M, v)
    gj = jsparse.grad(fj)(J, jjnp.asarray(v))
    assert isinstance(g, sparse.BCOO) and g.shape == M.shape
    np.testing.assert_array_equal(g.indices, M.indices)
    close(g.data, gj.data)
    value, (g0, g1) = sparse.value_and_grad(f, argnums=(0, 1))(M, v)
    valuej, (gj0, gj1) = jsparse.value_and_grad(fj, argnums=(0, 1))(J, jjnp.asarray(v))
    close(value, valuej)
    close(g0.data, gj0.data)
    close(g1, gj1)
    (gaux, aux) = sparse.grad(lambda M: (f(M, v), 7.0), has_aux=True)(M)
    close(gaux.data, gj.data)
    assert float(aux) == 7.0
    close(fnx.jit(sparse.grad(f))(M, v).data, gj.data)
    close(sparse.jacrev(f)(M, v).data, gj.data)
    close(sparse.jacfwd(f)(M, v).data, gj.data)


@pytest.mark.parametrize("n_batch", [0, 1])
def test_jit_over_sparse_arguments_and_results(rng, n_batch):
    x = sparse_array(rng, (3, 6))
    M = sparse.BCOO.fromdense(x, n_batch=n_batch)
    v = rng.standard_normal(6)
    f = fnx.jit(lambda M, v: (M @ v, 2 * M, M.T))
    out, doubled, transposed = f(M, v)
    close(out, x @ v)
    assert isinstance(doubled, sparse.BCOO) and doubled.n_batch == n_batch
    close(doubled.todense(), 2 * x)
    close(transposed.todense(), x.T)
    nse = M.nse
    made = fnx.jit(lambda x: sparse.bcoo_fromdense(x, nse=nse, n_batch=n_batch))(x)
    close(made.todense(), x)
    with pytest.raises(fnx.errors.ConcretizationTypeError, match="nse"):
        fnx.jit(lambda x: sparse.BCOO.fromdense(x))(x)


def test_vmap_over_the_batch_dimension_matches_jax(rng):
    x = sparse_array(rng, (4, 3, 5))
    v = rng.standard_normal(5)
    M = sparse.BCOO.fromdense(x, n_batch=1)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x), n_batch=1)
    seen = []

    def f(m, v):
        seen.append((m.shape, m.n_batch))
        return m @ v
    out = fnx.vmap(f, in_axes=(0, None))(M, v)
    assert seen[0] == ((3, 5), 0)
    close(out, np.einsum("bij,j->bi", x, v))
    close(out, jax.vmap(lambda m: m @ jjnp.asarray(v))(J))
    dense = fnx.vmap(lambda m: m.todense())(M)
    close(dense, x)
    # vmap over dense arguments with a shared sparse matrix, and sparse results
    vs = rng.standard_normal((6, 5))
    N = sparse.BCOO.fromdense(x[0])
    close(fnx.vmap(lambda v: N @ v)(vs), vs @ x[0].T)
    doubled = fnx.vmap(lambda m: 3 * m)(M)
    assert isinstance(doubled, sparse.BCOO) and doubled.n_batch == 1
    close(doubled.todense(), 3 * x)
    per_example = fnx.vmap(sparse.grad(lambda m, v: (m @ v).sum()), in_axes=(0, None))(M, v)
    close(per_example.todense(), (x != 0) * v)


def test_elementwise_operators_keep_sparsity_and_match_jax(rng):
    x = sparse_array(rng, (4, 5))
    y = rng.standard_normal((4, 5))
    row = rng.standard_normal(5)
    M = sparse.BCOO.fromdense(x)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x))
    cases = [
        (lambda A: 2.5 * A, 2.5 * x),
        (lambda A: A * y, x * y),
        (lambda A: A * row, x * row),
        (lambda A: A / 4.0, x / 4.0),
        (lambda A: -A, -x),
        (lambda A: A + A, 2 * x),
        (lambda A: A - 2 * A, -x),
        (lambda A: A * A, x * x),
        (lambda A: abs(A), abs(x)),
        (lambda A: A ** 3, x ** 3),
        (lambda A: A.astype(np.float32), x.astype(np.float32)),
    ]
    for f, expected in cases:
        out = f(M)
        assert isinstance(out, sparse.BCOO)
        assert out.dtype == expected.dtype
        close(out.todense(), expected, tol=1e-6)
    for f in (lambda A: A * jjnp.asarray(row) if isinstance(A, jsparse.BCOO) else A * row,
              lambda A: A ** 2):
        close(f(M).todense(), f(J).todense())
    close((M * y).todense(), x * y)
    close(sparse.bcoo_multiply_dense(M, y), jsparse.bcoo_multiply_dense(J, jjnp.asarray(y)))
    added = M + y                         # sparse + dense is dense, as in JAX
    close(added, x + y)
    other = sparse.BCOO.fromdense(sparse_array(rng, (4, 5)))
    close((M + other).todense(), x + other.todense())
    close((M * other).todense(), x * np.asarray(other.todense()))
    close(sparse.bcoo_multiply_sparse(M, other).todense(), x * np.asarray(other.todense()))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_sums_and_reductions(rng, shape, n_batch, n_dense):
    x = sparse_array(rng, shape)
    M = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x), n_batch=n_batch, n_dense=n_dense) \
        if (n_batch, n_dense) == (1, 1) else None
    for axes in [(0,), (len(shape) - 1,), tuple(range(len(shape)))]:
        out = sparse.bcoo_reduce_sum(M, axes=axes)
        close(out.todense(), x.sum(axis=axes))
    close(M.sum(), x.sum())
    close(M.sum(0).todense(), x.sum(0))
    if (n_batch, n_dense) == (1, 1):
        close(M.sum(axis=-1).todense(), J.sum(axis=-1).todense())


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_transpose_reshape_and_update_layout(rng, shape, n_batch, n_dense):
    x = sparse_array(rng, shape)
    M = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    close(M.T.todense(), x.T)
    close(M.transpose().todense(), x.T)
    perm = tuple(rng.permutation(len(shape)))
    close(sparse.bcoo_transpose(M, permutation=perm).todense(), x.transpose(perm))
    close(M.transpose(perm).todense(), x.transpose(perm))
    close(M.reshape(-1).todense(), x.reshape(-1))
    close(sparse.bcoo_reshape(M, new_sizes=shape[::-1]).todense(), x.reshape(shape[::-1]))
    for nb in range(len(shape) + 1):
        for nd in range(len(shape) + 1 - nb):
            L = sparse.bcoo_update_layout(M, n_batch=nb, n_dense=nd, on_inefficient=None)
            assert (L.n_batch, L.n_dense, L.shape) == (nb, nd, shape)
            close(L.todense(), x)
            L2 = M.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None)
            close(L2.todense(), x)
    if any(d > 1 for d in shape[n_batch:]) and n_batch + n_dense < len(shape):
        with pytest.raises(sparse.SparseEfficiencyError):
            sparse.bcoo_update_layout(M, n_batch=len(shape) - n_dense)
        with pytest.warns(sparse.SparseEfficiencyWarning):
            sparse.bcoo_update_layout(M, n_batch=len(shape) - n_dense, on_inefficient="warn")


def test_transpose_matches_jax_layout(rng):
    x = sparse_array(rng, (3, 4, 5))
    M = sparse.BCOO.fromdense(x, n_batch=1)
    J = jsparse.BCOO.fromdense(jjnp.asarray(x), n_batch=1)
    out, outj = sparse.bcoo_transpose(M, permutation=(0, 2, 1)), \
        jsparse.bcoo_transpose(J, permutation=(0, 2, 1))
    assert (out.n_batch, out.nse) == (outj.n_batch, outj.nse)
    close(out.data, outj.data)
    np.testing.assert_array_equal(out.indices, outj.indices)


def test_indexing_the_leading_dimension(rng):
    x = sparse_array(rng, (5, 4))
    for n_batch in (0, 1):
        M = sparse.BCOO.fromdense(x, n_batch=n_batch)
        for i in (0, 3, -1):
            assert isinstance(M[i], sparse.BCOO)
            close(M[i].todense(), x[i])
        close(M[1:4].todense(), x[1:4])
        close(M[::2].todense(), x[::2])
        close(fnx.jit(lambda M, i: M[i].todense())(M, 2), x[2])
        close(np.stack([r.todense() for r in M]), x)
    close(sparse.bcoo_slice(sparse.BCOO.fromdense(x), start_indices=(1, 1),
                            limit_indices=(5, 4), strides=(2, 1)).todense(), x[1:5:2, 1:4])
    close(sparse.bcoo_dynamic_slice(sparse.BCOO.fromdense(x), (jnp.array(3), jnp.array(2)),
                                    (2, 2)).todense(), x[3:5, 2:4])


def test_sparsify_runs_dense_code_on_sparse_arguments(rng):
    x = sparse_array(rng, (4, 6))
    v = rng.standard_normal(6)
    M = sparse.BCOO.fromdense(x)

    @sparse.sparsify
    def f(M, v):
        return 2 * M.T @ (M @ v) - M.sum(0) * 0.5

    @jax.jit
    def fj(x, v):
        return 2 * x.T @ (x @ v) - x.sum(0) * 0.5
    close(f(M, v), fj(x, v))
    close(fnx.jit(f)(M, v), fj(x, v))

    def g(A):
        return jnp.sum(jnp.tanh(-A) * 3.0, axis=1)
    out = sparse.sparsify(g)(M)
    assert isinstance(out, sparse.BCOO)
    close(out.todense(), np.sum(np.tanh(-x) * 3.0, axis=1))
    # nested jit and custom_jvp functions are interpreted sparsely too
    out = sparse.sparsify(lambda A: fnx.jit(lambda B: B * 2.0)(A))(M)
    assert isinstance(out, sparse.BCOO)
    close(out.todense(), 2 * x)
    # a primitive without a sparse rule sees a dense operand, with a warning
    with pytest.warns(sparse.SparseEfficiencyWarning, match="exp"):
        out = sparse.sparsify(jnp.exp)(M)
    close(out, np.exp(x))
    # BCSR arguments are accepted as well
    B = sparse.BCSR.fromdense(x)
    close(sparse.sparsify(lambda A, v: A @ v)(B, v), x @ v)


def test_sum_duplicates_sort_and_eliminate_zeros_match_jax(rng):
    n = 12
    indices = rng.integers(0, 4, size=(2, n, 2)).astype(np.int32)
    data = rng.standard_normal((2, n))
    data[0, :3] = 0.0
    M = sparse.BCOO((data, indices), shape=(2, 4, 4))
    J = jsparse.BCOO((jjnp.asarray(data), jjnp.asarray(indices)), shape=(2, 4, 4))
    dense = np.asarray(J.todense())
    close(M.todense(), dense)
    S, SJ = sparse.bcoo_sum_duplicates(M), jsparse.bcoo_sum_duplicates(J)
    assert S.nse == SJ.nse
    close(S.data, SJ.data)
    np.testing.assert_array_equal(S.indices, SJ.indices)
    close(M.sum_duplicates(nse=n).todense(), dense)
    E = M.sum_duplicates()
    close(E.todense(), dense)
    assert E.nse <= S.nse
    T = sparse.bcoo_sort_indices(M)
    TJ = jsparse.bcoo_sort_indices(J)
    np.testing.assert_array_equal(T.indices, TJ.indices)
    close(T.todense(), dense)
    g = fnx.grad(lambda d: (sparse.bcoo_sum_duplicates(
        sparse.BCOO((d, indices), shape=(2, 4, 4)), nse=n).data ** 2).sum())(data)
    gj = jax.grad(lambda d: (jsparse.bcoo_sum_duplicates(
        jsparse.BCOO((d, jjnp.asarray(indices)), shape=(2, 4, 4)), nse=n).data ** 2).sum())(
        jjnp.asarray(data))
    close(g, gj)


def test_extract_and_dot_general_sampled(rng):
    x = sparse_array(rng, (4, 5))
    y = rng.standard_normal((4, 5))
    M = sparse.BCOO.fromdense(x)
    close(sparse.bcoo_extract(M, y).todense(), (x != 0) * y)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    dims = (([1], [0]), ([], []))
    close(sparse.bcoo_dot_general_sampled(a, b, M.indices, dimension_numbers=dims),
          jsparse.bcoo_dot_general_sampled(jjnp.asarray(a), jjnp.asarray(b),
                                           jjnp.asarray(M.indices), dimension_numbers=dims))


def test_bcsr_round_trip_products_and_bcoo_conversion(rng):
    for shape, n_batch in [((5, 4), 0), ((3, 5, 4), 1), ((6, 6), 0)]:
        x = sparse_array(rng, shape)
        M = sparse.BCSR.fromdense(x, n_batch=n_batch)
        if n_batch:
            J = jsparse.BCSR.fromdense(jjnp.asarray(x), n_batch=n_batch)
            np.testing.assert_array_equal(M.indptr, J.indptr)
            np.testing.assert_array_equal(M.indices, J.indices)
            close(M.data, J.data)
        close(M.todense(), x)
        close(sparse.bcsr_todense(M), x)
        v = rng.standard_normal(shape[-1])
        close(M @ v, x @ v)
        close(M.to_bcoo().todense(), x)
        close(sparse.BCSR.from_bcoo(sparse.BCOO.fromdense(x, n_batch=n_batch)).todense(), x)
        close(fnx.jit(lambda M, v: M @ v)(M, v), x @ v)
    x = sparse_array(rng, (5, 4))
    u = rng.standard_normal(5)
    close(u @ sparse.BCSR.fromdense(x), u @ x)
    padded = sparse.bcsr_fromdense(x, nse=int((x != 0).sum()) + 3)
    close(padded.todense(), x)


def test_empty_eye_random_and_todense(rng):
    for N, M, k in [(3, 3, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5)]:
        E, EJ = sparse.eye(N, M, k), jsparse.eye(N, M, k)
        close(E.todense(), np.eye(N, M, k))
        assert E.nse == EJ.nse
        close(sparse.eye(N, M, k, sparse_format="bcsr").todense(), np.eye(N, M, k))
        close(sparse.eye(N, M, k, n_batch=1).todense(), np.eye(N, M, k))
    Z = sparse.empty((2, 3, 4), n_batch=1, nse=2)
    assert (Z.nse, Z.n_batch, Z.shape) == (2, 1, (2, 3, 4))
    close(Z.todense(), np.zeros((2, 3, 4)))
    R = sparse.random_bcoo(fnx.random.key(int(rng.integers(1 << 30))), (3, 4, 5), nse=0.3,
                           n_batch=1)
    assert R.nse == 6 and R.n_batch == 1
    assert all(int((R.todense()[b] != 0).sum()) == 6 for b in range(3))
    R = sparse.random_bcoo(fnx.random.key(1), (6, 4), nse=5, dtype=jnp.float32,
                           sorted_indices=True)
    assert R.dtype == np.float32 and R.indices_sorted
    tree = sparse.todense({"a": sparse.eye(2), "b": [np.ones(2)]})
    close(tree["a"], np.eye(2))
    close(tree["b"][0], np.ones(2))


@pytest.mark.x32
def test_default_dtypes_match_jax_with_x64_off():
    x = np.array([[0.0, 1.5], [2.0, 0.0]])       # float64 input, canonicalized as in JAX
    M = sparse.BCOO.fromdense(x)
    assert M.dtype == np.float32 and M.indices.dtype == np.int32
    assert (M @ np.ones(2)).dtype == np.float32
    assert sparse.eye(2).dtype == np.float32 and sparse.empty((2,)).dtype == np.float32
    assert (2 * M).dtype == np.float32
    assert sparse.BCOO.fromdense(np.arange(4)).dtype == np.int32


def test_pytree_and_repr():
    M = sparse.BCOO.fromdense(jnp.eye(3), n_batch=1)
    leaves, tree = fnx.tree_util.tree_flatten(M)
    assert len(leaves) == 2
    back = fnx.tree_util.tree_unflatten(tree, leaves)
    assert repr(back) == "BCOO(float64[3, 3], nse=1, n_batch=1)"
    assert repr(sparse.BCSR.fromdense(jnp.eye(3))) == "BCSR(float64[3, 3], nse=3)"
    doubled = fnx.tree_util.tree_map(lambda a: a * 2 if a.dtype == np.float64 else a, M)
    close(doubled.todense(), 2 * np.eye(3))
    assert len(M) == 3 and M.size == 9 and M.ndim == 2
