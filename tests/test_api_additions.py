"""Names and parameters JAX has that real programs and JAX's documentation use: each runs with
fnx's names and with JAX's on the CPU, with fresh random inputs, and must agree in values,
dtypes, shapes and weak types (or raise alike)."""
import numpy as np
import pytest

from test_jax_differences_2 import same_as_jax

x32 = pytest.mark.x32     # the user's defaults; float64 checks run with x64 on


@pytest.fixture(autouse=True)
def _jax_as_fnx(jax_x64_as_fnx):
    """JAX runs with x64 set as fnx's (off: these are the user's defaults)."""


@pytest.fixture
def rng():
    return np.random.default_rng()


# ---------------------------------------------------------------------------------------------
# scipy.linalg's named matrices


@pytest.mark.parametrize("program", [
    lambda s, c, r: s.scipy.linalg.hankel(c),
    lambda s, c, r: s.scipy.linalg.hankel(c, r[:2]),
    lambda s, c, r: s.scipy.linalg.hankel(c.reshape(2, 3), r),
    lambda s, c, r: s.scipy.linalg.circulant(c),
    lambda s, c, r: s.scipy.linalg.circulant(c.reshape(3, 2)),
    lambda s, c, r: s.scipy.linalg.leslie(c[:4], r[:3]),
    lambda s, c, r: s.scipy.linalg.leslie(c.reshape(2, 3), r[:2]),
    lambda s, c, r: s.scipy.linalg.leslie(c[:1], r[:0]),
    lambda s, c, r: s.scipy.linalg.companion(c),
    lambda s, c, r: s.scipy.linalg.companion(c.reshape(2, 3)),
    lambda s, c, r: s.scipy.linalg.companion(s.np.arange(1, 5)),
    lambda s, c, r: s.scipy.linalg.fiedler(c),
    lambda s, c, r: s.scipy.linalg.fiedler(c.reshape(2, 3)),
    lambda s, c, r: [s.scipy.linalg.fiedler_companion(c[:k]) for k in range(1, 7)],
    lambda s, c, r: s.scipy.linalg.fiedler_companion(c.reshape(2, 3)),
    lambda s, c, r: [s.scipy.linalg.convolution_matrix(c[:m], n, mode)
                     for m in (1, 2, 5) for n in (1, 3, 6) for mode in ("full", "same", "valid")],
    lambda s, c, r: s.scipy.linalg.convolution_matrix(c.reshape(2, 3), 4, "same"),
])
@x32
def test_named_matrices_of_vectors_match_jax(program, rng):
    c = rng.standard_normal(6).astype(np.float32)
    r = rng.standard_normal(3).astype(np.float32)
    same_as_jax(lambda s: program(s, s.np.asarray(c), s.np.asarray(r)))


@pytest.mark.parametrize("program", [
    lambda s: [s.scipy.linalg.pascal(n, kind) for n in (1, 4, 6)
               for kind in (None, "lower", "upper")],
    lambda s: [s.scipy.linalg.invpascal(n, kind) for n in (1, 4, 6)
               for kind in (None, "lower", "upper")],
    lambda s: [s.scipy.linalg.invhilbert(n) for n in (1, 3, 5)],
    lambda s: [s.scipy.linalg.helmert(n, full) for n in (1, 2, 5) for full in (False, True)],
    lambda s: [s.scipy.linalg.hadamard(n) for n in (1, 2, 8)] + [s.scipy.linalg.hadamard(4, float)],
    lambda s: [s.scipy.linalg.dft(n, scale) for n in (1, 3, 4) for scale in (None, "sqrtn", "n")],
    lambda s: s.scipy.linalg.pascal(3, "diagonal"),
    lambda s: s.scipy.linalg.hadamard(6),
    lambda s: s.scipy.linalg.dft(3, dtype=s.np.float32),
])
@x32
def test_named_matrices_of_a_size_match_jax(program):
    same_as_jax(program, rtol=1e-4, atol=1e-4)


def test_named_matrices_match_scipy_in_float64(rng):
    import scipy.linalg as sla
    import fnx.scipy.linalg as fla
    a = rng.standard_normal(5)
    a[0] = 1.5
    np.testing.assert_allclose(fla.fiedler_companion(a), sla.fiedler_companion(a), rtol=1e-12)
    np.testing.assert_allclose(fla.companion(a), sla.companion(a), rtol=1e-12)
    np.testing.assert_allclose(fla.hankel(a, a[::-1]), sla.hankel(a, a[::-1]))
    np.testing.assert_allclose(fla.convolution_matrix(a, 4, "same"),
                               sla.convolution_matrix(a, 4, "same"))
    np.testing.assert_allclose(fla.invhilbert(4), sla.invhilbert(4), rtol=1e-9)
    np.testing.assert_allclose(fla.helmert(4, full=True), sla.helmert(4, full=True), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# numpy and lax parameters


@x32
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("extra", [False, True])
def test_unique_along_an_axis_matches_jax(axis, extra, rng):
    x = rng.integers(0, 2, (5, 3, 2)).astype(np.float32)
    x[1] = x[3]
    same_as_jax(lambda s: s.np.unique(s.np.asarray(x), axis=axis, return_index=extra,
                                      return_inverse=extra, return_counts=extra))


@x32
def test_unique_along_an_axis_with_size_under_jit_matches_jax(rng):
    x = rng.integers(0, 2, (6, 2)).astype(np.int32)
    same_as_jax(lambda s: s.m.jit(lambda v: s.np.unique(v, axis=0, size=5, fill_value=-1,
                                                        return_counts=True))(s.np.asarray(x)))
    same_as_jax(lambda s: s.np.unique(s.np.asarray(x), axis=0, size=5, return_inverse=True))


@x32
@pytest.mark.parametrize("config", [[(-1, 2, 0)], [(2, -3, 1)], [(-2, -2, 2)], [(-5, 0, 0)]])
def test_lax_pad_with_negative_edges_matches_jax_with_its_gradient(config, rng):
    x = rng.standard_normal(4).astype(np.float32)
    same_as_jax(lambda s: s.lax.pad(s.np.asarray(x), 0.5, config))
    same_as_jax(lambda s: s.m.grad(lambda v: (s.lax.pad(v, 0.0, config) ** 2).sum())(
        s.np.asarray(x)))


@x32
def test_lax_empty_takes_an_int_shape():
    same_as_jax(lambda s: s.lax.empty(3, s.np.float32).shape)


@x32
@pytest.mark.parametrize("program", [
    lambda s, x, w: s.np.quantile(x, 0.5, weights=w, method="inverted_cdf"),
    lambda s, x, w: s.np.quantile(x, s.np.asarray([0.0, 0.2, 0.5, 0.9, 1.0]), axis=1,
                                  weights=w[0], method="inverted_cdf", keepdims=True),
    lambda s, x, w: s.np.quantile(x, 0.3, axis=0, weights=w, method="inverted_cdf"),
    lambda s, x, w: s.np.quantile(x, s.np.asarray([0.1, 0.7]), axis=(0, 1), method="inverted_cdf"),
    lambda s, x, w: s.np.percentile(x, 40.0, axis=1, weights=w, method="inverted_cdf"),
    lambda s, x, w: s.np.nanquantile(x.at[0, 1].set(s.np.nan), 0.5, axis=1, weights=w,
                                     method="inverted_cdf"),
    lambda s, x, w: s.np.quantile(x.at[0, 1].set(s.np.nan), 0.5, axis=1, weights=w,
                                  method="inverted_cdf"),
    lambda s, x, w: s.np.nanpercentile(x, 50.0, weights=w.at[1, 2].set(-1.0),
                                       method="inverted_cdf"),
    lambda s, x, w: s.np.quantile(x, 0.5, weights=w),
    lambda s, x, w: s.np.quantile(x, 0.5, weights=w[0]),
])
def test_quantile_weights_follow_jax_inverted_cdf(program, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    w = rng.uniform(0, 2, (3, 5)).astype(np.float32)
    w[0, 2] = 0.0
    same_as_jax(lambda s: program(s, s.np.asarray(x), s.np.asarray(w)))


@x32
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_delete_with_unique_traced_indices_matches_jax(axis, rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    idx = rng.choice(4, 2, replace=False).astype(np.int32) - 2     # negatives too
    same_as_jax(lambda s: s.m.jit(lambda v, i: s.np.delete(v, i, axis, assume_unique_indices=True))(
        s.np.asarray(x), s.np.asarray(idx)))
    same_as_jax(lambda s: s.np.delete(s.np.asarray(x), idx, axis, assume_unique_indices=True))


@x32
@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_ufunc_reduceat_matches_jax(name, axis, rng):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    idx = np.array([0, 3, 1, 4, 4], np.int32)
    same_as_jax(lambda s: getattr(s.np, name).reduceat(s.np.asarray(x), s.np.asarray(idx), axis))
    same_as_jax(lambda s: s.m.jit(lambda v: s.np.add.reduceat(v, idx, axis))(
        s.np.asarray(x * 10)))


# ---------------------------------------------------------------------------------------------
# pytrees


def test_tree_reduce_associative_matches_jax(rng):
    import operator
    trees = [[1, (2, 3), [4, 5, 6]], {"a": 7}, [list(range(k)) for k in range(1, 6)]]
    for tree in trees:
        same_as_jax(lambda s: s.m.tree.reduce_associative(operator.add, tree))
    # string concatenation is associative but not commutative: the order must be kept
    same_as_jax(lambda s: [s.m.tree.reduce_associative(operator.add, list("abcdefg"[:k]))
                           for k in range(1, 8)])
    same_as_jax(lambda s: s.m.tree.reduce_associative(operator.add, [], identity=0))
    same_as_jax(lambda s: s.m.tree.reduce_associative(operator.add, []))
    x = rng.standard_normal((3, 2)).astype(np.float32)
    same_as_jax(lambda s: s.m.tree.reduce_associative(
        s.np.maximum, [s.np.asarray(x[0]), {"b": s.np.asarray(x[1]), "c": s.np.asarray(x[2])}]))


def test_tree_static_fields_are_aux_data_as_in_jax(rng):
    import dataclasses
    x = rng.standard_normal(3).astype(np.float32)

    def program(s):
        @s.m.tree_util.register_dataclass
        @dataclasses.dataclass
        class Op:
            x: object
            kind: str = s.m.tree.static(default="add", metadata={"doc": "how"})
        op = Op(s.np.asarray(x))
        leaves, treedef = s.m.tree.flatten(op)
        back = s.m.tree.unflatten(treedef, [v * 2 for v in leaves])
        fields = {f.name: dict(f.metadata) for f in dataclasses.fields(Op)}
        return leaves, back.x, back.kind, fields, s.m.jit(lambda o: o.x + 1)(op)
    same_as_jax(program)


def test_treedef_tuple_matches_jax():
    def program(s):
        tu = s.m.tree_util
        parts = [tu.tree_structure(1), tu.tree_structure({"a": [1, 2]}), tu.tree_structure(None)]
        td = tu.treedef_tuple(parts)
        return (td.num_leaves, tu.tree_unflatten(td, [1, 2, 3]),
                td == tu.tree_structure((0, {"a": [0, 0]}, None)), str(td))
    same_as_jax(program)


# ---------------------------------------------------------------------------------------------
# scipy.linalg's solvers


@pytest.mark.parametrize("method", ["schur", "eigen"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_solve_sylvester_solves_the_equation_in_float64(method, dtype, rng):
    import scipy.linalg
    import fnx.scipy.linalg as fla
    def draw(*shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape) if dtype == np.complex128 else x).astype(dtype)
    a, b, c = draw(2, 4, 4) + 4 * np.eye(4), draw(2, 3, 3) + 4 * np.eye(3), draw(2, 4, 3)
    x = fla.solve_sylvester(a, b, c, method=method)
    assert x.dtype == dtype and x.shape == (2, 4, 3)
    for k in range(2):
        np.testing.assert_allclose(x[k], scipy.linalg.solve_sylvester(a[k], b[k], c[k]),
                                   rtol=1e-9, atol=1e-10)


@x32
def test_solve_sylvester_matches_jax_and_gives_nan_without_a_unique_solution(rng):
    a = rng.standard_normal((3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    b = rng.standard_normal((2, 2)).astype(np.float32) + 3 * np.eye(2, dtype=np.float32)
    c = rng.standard_normal((3, 2)).astype(np.float32)
    same_as_jax(lambda s: s.m.jit(s.scipy.linalg.solve_sylvester)(a, b, c), rtol=1e-3, atol=1e-4)
    eye = np.eye(2, dtype=np.float32)
    same_as_jax(lambda s: s.scipy.linalg.solve_sylvester(eye, -eye, c[:2]))
    same_as_jax(lambda s: s.scipy.linalg.solve_sylvester(a, b, c[:2]))
    same_as_jax(lambda s: s.scipy.linalg.solve_sylvester(a, b, c, method="lu"))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("n", [1, 3, 5])   # SciPy returns 2 x 2 inputs as they are; JAX does not
def test_hessenberg_is_scipys_in_float64(dtype, n, rng):
    import scipy.linalg
    import fnx.scipy.linalg as fla
    a = rng.standard_normal((n, n))
    a = (a + 1j * rng.standard_normal((n, n))).astype(dtype) if dtype == np.complex128 else a
    h, q = fla.hessenberg(a, calc_q=True)
    want_h, want_q = scipy.linalg.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(h, want_h, atol=1e-12)
    np.testing.assert_allclose(q, want_q, atol=1e-12)
    batch = fla.hessenberg(np.stack([a, 2 * a]))
    np.testing.assert_allclose(batch[1], scipy.linalg.hessenberg(2 * a), atol=1e-12)


@x32
def test_hessenberg_and_eigh_tridiagonal_match_jax(rng):
    a = rng.standard_normal((4, 4)).astype(np.float32)
    d, e = rng.standard_normal(5).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    same_as_jax(lambda s: s.m.jit(lambda x: s.scipy.linalg.hessenberg(x, calc_q=True))(a),
                rtol=1e-4, atol=1e-5)
    c = (a[:2, :2] + 1j * a[2:, 2:]).astype(np.complex64)
    same_as_jax(lambda s: s.scipy.linalg.hessenberg(c, calc_q=True), rtol=1e-4, atol=1e-5)
    same_as_jax(lambda s: s.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True),
                rtol=1e-4, atol=1e-5)
    same_as_jax(lambda s: s.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                          select_range=(1, 3)), rtol=1e-4,
                atol=1e-5)
    same_as_jax(lambda s: s.scipy.linalg.eigh_tridiagonal(d, e, select="v", select_range=(0, 1)))


def test_eigh_tridiagonal_vectors_diagonalize_the_matrix(rng):
    import fnx.scipy.linalg as fla
    d, e = rng.standard_normal(6), rng.standard_normal(5)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    w, v = fla.eigh_tridiagonal(d, e)
    np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-12)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(t), atol=1e-12)
    w2, v2 = fla.eigh_tridiagonal(d, e, select="i", select_range=(2, 4))
    np.testing.assert_allclose(w2, np.asarray(w)[2:5], atol=1e-12)
    assert v2.shape == (6, 3)
