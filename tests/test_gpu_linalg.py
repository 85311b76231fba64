"""GPU linear algebra through fnx's cuSOLVER/cuBLAS binding (fnx/cuda/solver.py).

Two halves:

- On the CPU (no mark): the impls' layout logic (row-major arrays as column-major matrices,
  flags, leading dimensions, batch pointer offsets, the copies, triangles and NaN fills) runs
  against an emulation of the device calls in which every pointer is resolved in a fake address
  space (bounds checked) and every cuSOLVER/cuBLAS routine is LAPACK's, through SciPy, on the
  column-major matrix the pointer and leading dimension describe. The results must match the CPU
  impls (fnx/backends/numpy_linalg.py).
- On the GPU (``cuda``): the same checks on the real calls, eager, captured directly into a CUDA
  graph, and under ``fnx.jit`` (which replays a CUDA graph from the second call), batched, in
  float32 and float64, with failures as NaN and a gradient through a Cholesky solve.
"""
import bisect

import numpy as np
import pytest
import scipy.linalg
from scipy.linalg import lapack

import fnx
import fnx.linalg as linalg
import fnx.numpy as jnp
from fnx.backends import numpy_linalg
from fnx.core import linalg_prims as P
from fnx.cuda import solver

cuda = pytest.mark.cuda

DTYPES = [np.float32, np.float64]
BATCHES = [(), (3,), (2, 2)]


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# random inputs (fresh, never zeros)


def _general(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _spd(rng, batch, n, dtype):
    g = rng.standard_normal(batch + (n, n))
    return (g @ np.swapaxes(g, -1, -2) + n * np.eye(n)).astype(dtype)


def _triangular_operand(rng, batch, n, dtype):
    """Random in both triangles (the unread one must not matter) with a strong diagonal."""
    return (rng.standard_normal(batch + (n, n)) + 2 * n * np.eye(n)).astype(dtype)


def _symmetric_with_garbage(rng, batch, n, dtype, lower):
    """A matrix whose read triangle (lower or upper) defines a symmetric matrix, the other
    triangle random: returns (x, the symmetric matrix it means)."""
    g = rng.standard_normal(batch + (n, n))
    tri = np.tril(g) if lower else np.triu(g)
    sym = tri + np.swapaxes(tri, -1, -2) - np.eye(n) * g
    return g.astype(dtype), sym


# ---------------------------------------------------------------------------------------------
# checks shared by the emulated and the GPU runs (outputs converted to NumPy first)


def _check_cholesky(out, x):
    ref = numpy_linalg.cholesky(x.astype(np.float64))
    assert out.shape == x.shape and out.dtype == x.dtype
    np.testing.assert_allclose(out, ref, **_tol(x.dtype))
    np.testing.assert_array_equal(np.triu(out, 1), 0)


def _check_triangular_solve(out, a, b, **params):
    ref = numpy_linalg.triangular_solve(a.astype(np.float64), b.astype(np.float64), **params)
    assert out.shape == b.shape and out.dtype == b.dtype
    np.testing.assert_allclose(out, ref, **_tol(b.dtype))


def _check_lu(outs, x):
    lu, pivots, perm = outs
    m, n = x.shape[-2:]
    k = min(m, n)
    assert lu.shape == x.shape and lu.dtype == x.dtype
    assert pivots.shape == x.shape[:-2] + (k,) and pivots.dtype == np.int32
    assert perm.shape == x.shape[:-2] + (m,) and perm.dtype == np.int32
    # the CPU impl on each matrix (LAPACK's getrf through SciPy, as cuSOLVER's)
    x64 = x.astype(np.float64)
    parts = [numpy_linalg.lu(x64[idx]) for idx in np.ndindex(*x.shape[:-2])]
    ref = [np.stack([p[i] for p in parts]).reshape(o.shape) for i, o in enumerate(outs)]
    np.testing.assert_array_equal(pivots, ref[1])
    np.testing.assert_array_equal(perm, ref[2])
    np.testing.assert_allclose(lu, ref[0], **_tol(x.dtype))


def _signs(got, ref):
    """Per column (..., 1, c): the sign that turns each column of ``got`` towards the same
    column of ``ref`` (eigenvectors and singular vectors are defined up to sign)."""
    return np.where(np.sum(got * ref, axis=-2, keepdims=True) < 0, -1.0, 1.0)


def _vec_tol(dtype):
    """Vectors of float32 decompositions move by eps / gap: a looser bound than values."""
    return dict(rtol=2e-3, atol=2e-3) if dtype == np.float32 else _tol(dtype)


def _check_qr(outs, x, full_matrices):
    q, r = outs
    m, n = x.shape[-2:]
    k = min(m, n)
    kq = m if full_matrices else k
    assert q.shape == x.shape[:-2] + (m, kq) and r.shape == x.shape[:-2] + (kq, n)
    assert q.dtype == x.dtype and r.dtype == x.dtype
    tol = _tol(x.dtype)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(kq), q.shape[:-2]
                                                                          + (kq, kq)), **tol)
    np.testing.assert_allclose(q @ r, x, **tol)
    rq, rr = numpy_linalg.qr(x.astype(np.float64), full_matrices=full_matrices)
    sign = _signs(q[..., :k], rq[..., :k])
    np.testing.assert_allclose(q[..., :k] * sign, rq[..., :k], **tol)
    np.testing.assert_allclose(r[..., :k, :] * np.swapaxes(sign, -1, -2), rr[..., :k, :], **tol)


def _check_eigh(outs, x, sym, lower):
    v, w = outs
    assert v.shape == x.shape and w.shape == x.shape[:-1]
    assert v.dtype == x.dtype and w.dtype == x.dtype
    tol = _tol(x.dtype)
    rv, rw = numpy_linalg.eigh(x.astype(np.float64), lower=lower)
    np.testing.assert_allclose(w, rw, **tol)
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(v * _signs(v, rv), rv, **_vec_tol(x.dtype))
    np.testing.assert_allclose(sym @ v, v * w[..., None, :], **tol)


def _check_svd(outs, x, full_matrices, compute_uv):
    m, n = x.shape[-2:]
    k = min(m, n)
    tol = _tol(x.dtype)
    ref = numpy_linalg.svd(x.astype(np.float64), full_matrices=full_matrices,
                           compute_uv=compute_uv)
    assert len(outs) == len(ref)
    s = outs[0]
    assert s.shape == x.shape[:-2] + (k,) and s.dtype == x.dtype
    np.testing.assert_allclose(s, ref[0], **tol)
    if not compute_uv:
        return
    u, vh = outs[1], outs[2]
    assert u.shape == ref[1].shape and vh.shape == ref[2].shape
    assert u.dtype == x.dtype and vh.dtype == x.dtype
    eye_u = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    eye_v = np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, eye_u, **tol)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), eye_v, **tol)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, **tol)
    sign = _signs(u[..., :k], ref[1][..., :k])
    np.testing.assert_allclose(u[..., :k] * sign, ref[1][..., :k], **_vec_tol(x.dtype))
    np.testing.assert_allclose(vh[..., :k, :] * np.swapaxes(sign, -1, -2), ref[2][..., :k, :],
                               **_vec_tol(x.dtype))


# ---------------------------------------------------------------------------------------------
# CPU: the impls against an emulation of the device calls


class _LapackDevice:
    """solver._CudaDevice's interface on NumPy arrays in a fake address space; cuSOLVER and
    cuBLAS routines are LAPACK's on the column-major matrices the pointers describe."""

    def __init__(self):
        self.bases, self.arrays, self.ids = [], [], {}
        self.next = 1 << 32
        self.calls = []

    # memory
    def _register(self, arr):
        base = self.next
        self.next += (arr.nbytes + 4096) // 256 * 256 + 256
        self.bases.append(base)
        self.arrays.append(arr)
        self.ids[id(arr)] = base
        return arr

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        garbage = np.nan if dtype.kind == "f" else -12345
        return self._register(np.full(shape, garbage, dtype))     # reads of it show up

    def zeros(self, shape, dtype):
        return self._register(np.zeros(shape, dtype))

    def dense(self, x):
        return self._register(np.array(x, order="C", copy=True))

    def ptr(self, a):
        return self.ids[id(a)]

    def _flat(self, ptr, dtype, count):
        i = bisect.bisect_right(self.bases, ptr) - 1
        arr, off = self.arrays[i], ptr - self.bases[i]
        dtype = np.dtype(dtype)
        assert arr.dtype == dtype, f"pointer into a {arr.dtype} buffer used as {dtype}"
        assert off % dtype.itemsize == 0 and 0 <= off
        assert off + count * dtype.itemsize <= arr.nbytes, "read or write past the buffer"
        start = off // dtype.itemsize
        return arr.reshape(-1)[start:start + count]

    def _matrix(self, ptr, dtype, rows, cols, ld):
        assert ld >= max(1, rows), f"leading dimension {ld} < rows {rows}"
        flat = self._flat(ptr, dtype, ld * (cols - 1) + rows)
        isz = np.dtype(dtype).itemsize
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (isz, ld * isz))

    def _ints(self, ptr, count):
        return self._flat(ptr, np.int32, count)

    # library calls
    def handle(self):
        return 0xABC

    def buffer_size(self, routine, dtype, *args):
        self.calls.append((routine + "_bufferSize", args))
        kinds = solver._SIGNATURES[routine + "_bufferSize"]
        for kind, a in zip(kinds, args):
            if kind is solver._P:
                self._flat(a, dtype, 1)         # a pointer into a buffer of this dtype
        return 7

    def solver(self, routine, dtype, *args):
        self.calls.append((routine, args))
        fn = lambda name: lapack.get_lapack_funcs(name, dtype=np.dtype(dtype))   # noqa: E731
        if routine == "potrfBatched":
            uplo, n, ptrs, lda, info, count = args
            for b, a in enumerate(self._addresses(ptrs, count)):
                self.solver("potrf", dtype, uplo, n, a, lda, None, None, info + 4 * b)
        elif routine == "potrf":
            uplo, n, a, lda, _, _, info = args
            A = self._matrix(a, dtype, n, n, lda)
            c, inf = fn("potrf")(A.copy(), lower=uplo == solver.LOWER, clean=0)
            A[...] = c
            self._ints(info, 1)[0] = inf
        elif routine == "getrf":
            m, n, a, lda, _, ipiv, info = args
            A = self._matrix(a, dtype, m, n, lda)
            lu, piv, inf = fn("getrf")(A.copy())
            A[...] = lu
            self._ints(ipiv, min(m, n))[:] = piv + 1          # cuSOLVER's pivots are 1-based
            self._ints(info, 1)[0] = inf
        elif routine == "geqrf":
            m, n, a, lda, tau, _, _, info = args
            A = self._matrix(a, dtype, m, n, lda)
            qr, t, _, inf = fn("geqrf")(A.copy())
            A[...] = qr
            self._flat(tau, dtype, min(m, n))[:] = t
            self._ints(info, 1)[0] = inf
        elif routine == "orgqr":
            m, nq, k, a, lda, tau, _, _, info = args
            assert m >= nq >= k
            A = self._matrix(a, dtype, m, nq, lda)
            reflectors = A.copy()
            assert np.isfinite(reflectors[:, :k]).all(), "orgqr reads unset reflectors"
            q, _, inf = fn("orgqr")(np.nan_to_num(reflectors), self._flat(tau, dtype, k).copy())
            A[...] = q
            self._ints(info, 1)[0] = inf
        elif routine == "syevd":
            jobz, uplo, n, a, lda, w, _, _, info = args
            assert jobz == solver.EIG_MODE_VECTOR
            A = self._matrix(a, dtype, n, n, lda)
            ww, v, inf = fn("syevd")(A.copy(), compute_v=1, lower=int(uplo == solver.LOWER))
            A[...] = v
            self._flat(w, dtype, n)[:] = ww
            self._ints(info, 1)[0] = inf
        elif routine == "gesvd":
            jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, _, _, _, info = args
            assert jobu == jobvt and m >= n, "gesvd needs rows >= columns"
            job = chr(jobu)
            A = self._matrix(a, dtype, m, n, lda)
            uu, ss, vv, inf = fn("gesvd")(A.copy(), compute_uv=int(job != "N"),
                                          full_matrices=int(job == "A"))
            A[...] = np.nan                                   # gesvd destroys its input
            self._flat(s, dtype, n)[:] = ss
            if job != "N":
                self._matrix(u, dtype, m, uu.shape[1], ldu)[...] = uu
                self._matrix(vt, dtype, vv.shape[0], n, ldvt)[...] = vv
            else:
                assert u is None and vt is None
            self._ints(info, 1)[0] = inf
        else:
            raise AssertionError(routine)

    batched_eigen = True

    def syev_batched(self, dtype, uplo, n, a, lda, w, info, nb):
        self.calls.append(("syev_batched", (uplo, n, lda, nb)))
        isz = np.dtype(dtype).itemsize
        for b in range(nb):
            self.solver("syevd", dtype, solver.EIG_MODE_VECTOR, uplo, n, a + b * n * lda * isz,
                        lda, w + b * n * isz, None, None, info + 4 * b)

    def _svd_each(self, dtype, m, n, a, s, info, nb, full, write):
        isz = np.dtype(dtype).itemsize
        k = min(m, n)
        for b in range(nb):
            A = self._matrix(a + b * m * n * isz, dtype, m, n, m)
            uu, ss, vv, inf = lapack.get_lapack_funcs("gesvd", dtype=np.dtype(dtype))(
                A.copy(), compute_uv=1, full_matrices=int(full))
            A[...] = np.nan                                   # the input is destroyed
            self._flat(s + b * k * isz, dtype, k)[:] = ss
            write(b, uu, vv.T)
            self._ints(info + 4 * b, 1)[0] = inf

    def gesvdj_batched(self, dtype, m, n, a, s, u, v, info, nb):
        assert max(m, n) <= solver.JACOBI_MAX
        self.calls.append(("gesvdj_batched", (m, n, nb)))
        isz = np.dtype(dtype).itemsize

        def write(b, uu, vv):                               # full U (m x m), V (n x n)
            self._matrix(u + b * m * m * isz, dtype, m, m, m)[...] = uu
            self._matrix(v + b * n * n * isz, dtype, n, n, n)[...] = vv
        self._svd_each(dtype, m, n, a, s, info, nb, True, write)

    def gesvda_batched(self, dtype, vectors, m, n, a, s, u, v, info, nb):
        assert m >= n, "gesvda needs rows >= columns"
        self.calls.append(("gesvda_batched", (m, n, nb)))
        isz = np.dtype(dtype).itemsize

        def write(b, uu, vv):                               # thin U (m x n), V (n x n)
            if vectors:
                self._matrix(u + b * m * n * isz, dtype, m, n, m)[...] = uu
                self._matrix(v + b * n * n * isz, dtype, n, n, n)[...] = vv
        self._svd_each(dtype, m, n, a, s, info, nb, False, write)

    def pointers(self, base, stride, nb):
        return self._register(base + stride * np.arange(nb, dtype=np.uint64))

    def _addresses(self, ptrs, count):
        return [int(a) for a in self._flat(ptrs, np.uint64, count)]

    def getrf_batched(self, dtype, n, a_ptrs, lda, ipiv, info, count):
        self.calls.append(("getrf_batched", (n, lda, count)))
        for b, a in enumerate(self._addresses(a_ptrs, count)):
            self.solver("getrf", dtype, n, n, a, lda, None, ipiv + 4 * n * b, info + 4 * b)

    def trsm_batched(self, dtype, side, uplo, trans, diag, m, n, a_ptrs, lda, b_ptrs, ldb,
                     count):
        self.calls.append(("trsm_batched", (side, uplo, trans, diag, m, n, lda, ldb, count)))
        for a, b in zip(self._addresses(a_ptrs, count), self._addresses(b_ptrs, count)):
            self.trsm(dtype, side, uplo, trans, diag, m, n, a, lda, b, ldb)

    def trsm(self, dtype, side, uplo, trans, diag, m, n, a_ptr, lda, b_ptr, ldb):
        self.calls.append(("trsm", (side, uplo, trans, diag, m, n, lda, ldb)))
        size = m if side == solver.SIDE_LEFT else n
        A = self._matrix(a_ptr, dtype, size, size, lda)
        B = self._matrix(b_ptr, dtype, m, n, ldb)
        kw = dict(lower=uplo == solver.LOWER, unit_diagonal=diag == solver.DIAG_UNIT,
                  check_finite=False)
        if side == solver.SIDE_LEFT:      # op(A) X = B
            X = scipy.linalg.solve_triangular(A, B, trans=trans, **kw)
        else:                             # X op(A) = B  <=>  op(A)^T X^T = B^T
            X = scipy.linalg.solve_triangular(A, B.T, trans=1 - trans, **kw).T
        B[...] = X

    # kernels
    def gather(self, src, dst, nb, rows, cols, src_strides, dst_strides=None, tri=0, bad=None,
               fill=0):
        if nb * rows * cols == 0:
            return dst
        if dst_strides is None:
            dst_strides = (rows * cols, cols, 1)
        assert src.flags.c_contiguous and dst.flags.c_contiguous
        b, r, c = np.meshgrid(np.arange(nb), np.arange(rows), np.arange(cols), indexing="ij")
        sidx = b * src_strides[0] + r * src_strides[1] + c * src_strides[2]
        didx = b * dst_strides[0] + r * dst_strides[1] + c * dst_strides[2]
        assert sidx.max() < src.size and didx.max() < dst.size
        v = src.reshape(-1)[sidx]
        if fill:
            flagged = bad.reshape(-1)[b] != 0
            v = np.where(flagged, 0 if fill == solver.FILL_ZERO else np.nan, v)
        if tri == solver.TRI_UPPER:
            v = np.where(c < r, 0, v)
        elif tri == solver.TRI_LOWER:
            v = np.where(c > r, 0, v)
        dst.reshape(-1)[didx] = v
        return dst

    def nonfinite(self, src, nb, rows, cols, tri=0):
        m = src.reshape(nb, rows, cols)
        if tri == solver.TRI_UPPER:
            m = np.triu(m)
        elif tri == solver.TRI_LOWER:
            m = np.tril(m)
        return self._register((~np.isfinite(m).all(axis=(1, 2))).astype(np.int32))

    def either(self, a, b):
        return self._register(np.bitwise_or(a, b))

    def lu_perm(self, ipiv, nb, k, m):
        pivots = self.empty((nb, k), np.int32)
        perm = self.empty((nb, m), np.int32)
        for b in range(nb):
            perm[b] = np.arange(m)
            for j in range(k):
                p = ipiv[b, j] - 1
                pivots[b, j] = p
                perm[b, [j, p]] = perm[b, [p, j]]
        return pivots, perm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_emulated_cholesky(rng, batch, dtype):
    x = _spd(rng, batch, 5, dtype)
    _check_cholesky(solver.cholesky(x, _dev=_LapackDevice()), x)


def test_emulated_cholesky_not_positive_definite_is_nan(rng):
    x = _spd(rng, (3,), 4, np.float64)
    x[1, 2, 2] = -50.0
    out = solver.cholesky(x, _dev=_LapackDevice())
    _check_cholesky(out, x)
    assert np.isnan(out[1][np.tril_indices(4)]).all() and np.isfinite(out[[0, 2]]).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_emulated_triangular_solve(rng, left_side, lower, transpose_a, unit_diagonal, dtype):
    batch, n = (2,), 4
    a = _triangular_operand(rng, batch, n, dtype)
    if unit_diagonal:
        a = a - 2 * n * np.eye(n, dtype=dtype) * 0.9   # the diagonal must not be read
    b = _general(rng, batch + ((n, 3) if left_side else (3, n)), dtype)
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=False,
                  unit_diagonal=unit_diagonal)
    dev = _LapackDevice()
    _check_triangular_solve(solver.triangular_solve(a, b, _dev=dev, **params), a, b, **params)
    assert len([c for c in dev.calls if c[0] == "trsm"]) == 2


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_trsm_plan_flips_triangle_and_transpose(left_side, lower, transpose_a, unit_diagonal):
    side, uplo, trans, diag, m, n, ldb = solver.trsm_plan(left_side, lower, transpose_a,
                                                          unit_diagonal, 5, 3)
    assert side == (solver.SIDE_LEFT if left_side else solver.SIDE_RIGHT)
    assert uplo == (solver.UPPER if lower else solver.LOWER)
    assert trans == (solver.OP_N if transpose_a else solver.OP_T)
    assert diag == (solver.DIAG_UNIT if unit_diagonal else solver.DIAG_NON_UNIT)
    assert (m, n, ldb) == (5, 3, 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6)])
def test_emulated_lu(rng, batch, shape, dtype):
    x = _general(rng, batch + shape, dtype)
    _check_lu([np.asarray(o) for o in solver.lu(x, _dev=_LapackDevice())], x)


def test_emulated_lu_of_a_batch_of_small_square_matrices_is_one_batched_call(rng):
    x = _general(rng, (7, 5, 5), np.float32)
    dev = _LapackDevice()
    _check_lu([np.asarray(o) for o in solver.lu(x, _dev=dev)], x)
    assert [c[0] for c in dev.calls if "getrf" in c[0]].count("getrf_batched") == 1
    x[3, :, 2] = 0.0        # a singular member factors without error, as LAPACK's
    _check_lu([np.asarray(o) for o in solver.lu(x, _dev=_LapackDevice())], x)


def test_emulated_lu_of_a_singular_matrix(rng):
    x = _general(rng, (4, 4), np.float64)
    x[:, 1] = 0.0
    lu, pivots, perm = solver.lu(x, _dev=_LapackDevice())
    _check_lu([lu, pivots, perm], x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_emulated_qr(rng, batch, shape, full_matrices, dtype):
    x = _general(rng, batch + shape, dtype)
    _check_qr(solver.qr(x, full_matrices=full_matrices, _dev=_LapackDevice()), x, full_matrices)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_emulated_eigh(rng, batch, lower, dtype):
    x, sym = _symmetric_with_garbage(rng, batch, 5, dtype, lower)
    _check_eigh(solver.eigh(x, lower=lower, _dev=_LapackDevice()), x, sym, lower)


def test_emulated_eigh_of_a_non_finite_matrix_is_nan(rng):
    x, sym = _symmetric_with_garbage(rng, (3,), 4, np.float64, True)
    x[1, 3, 0] = np.inf          # in the lower triangle: read
    x[2, 0, 3] = np.nan          # in the upper triangle: not read
    v, w = solver.eigh(x, lower=True, _dev=_LapackDevice())
    assert np.isnan(v[1]).all() and np.isnan(w[1]).all()
    _check_eigh([v[[0, 2]], w[[0, 2]]], x[[0, 2]], sym[[0, 2]], True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (40, 40), (41, 34), (34, 41)])
@pytest.mark.parametrize("full_matrices,compute_uv", [(True, True), (False, True),
                                                      (False, False)])
def test_emulated_svd(rng, batch, shape, full_matrices, compute_uv, dtype):
    x = _general(rng, batch + shape, dtype)
    dev = _LapackDevice()
    outs = solver.svd(x, full_matrices=full_matrices, compute_uv=compute_uv, _dev=dev)
    _check_svd(outs, x, full_matrices, compute_uv)
    method = solver.svd_method(*shape, full_matrices, compute_uv, dtype)
    routine = {"gesvdj": "gesvdj_batched", "gesvda": "gesvda_batched", "gesvd": "gesvd"}[method]
    assert {c[0] for c in dev.calls} & {"gesvdj_batched", "gesvda_batched", "gesvd"} == \
        {routine}


@pytest.mark.parametrize("shape,full_matrices,compute_uv,method", [
    ((32, 20), True, True, "gesvdj"), ((33, 20), False, True, "gesvda"),
    ((20, 33), False, False, "gesvda"), ((40, 40), True, True, "gesvda"),
    ((40, 33), True, True, "gesvd"), ((33, 40), True, True, "gesvd")])
def test_svd_method_keeps_gesvd_for_a_full_basis_of_a_large_non_square_matrix(
        shape, full_matrices, compute_uv, method):
    assert solver.svd_method(*shape, full_matrices, compute_uv, np.float32) == method
    large = max(shape) > solver.JACOBI_MAX
    assert solver.svd_method(*shape, full_matrices, compute_uv, np.float64) == \
        ("gesvd" if large else "gesvdj")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_svd_plan_needs_no_copy_for_wide_matrices(shape):
    transpose_in, gm, gn, job, u_cols = solver.svd_plan(*shape, True, True)
    assert gm >= gn and transpose_in == (shape[0] > shape[1]) and chr(job) == "A"
    assert u_cols == gm


def test_emulated_svd_of_a_non_finite_matrix_is_nan(rng):
    x = _general(rng, (2, 4, 3), np.float64)
    x[0, 1, 1] = np.nan
    s, u, vh = solver.svd(x, full_matrices=False, compute_uv=True, _dev=_LapackDevice())
    assert np.isnan(s[0]).all() and np.isnan(u[0]).all() and np.isnan(vh[0]).all()
    _check_svd([s[1:], u[1:], vh[1:]], x[1:], False, True)


def test_unsupported_dtypes_keep_the_generic_impls():
    assert not solver.supported(np.ones((2, 2), np.float16))
    assert not solver.supported(np.ones((0, 2), np.float32))
    assert not solver.supported(np.ones((2, 2), np.float32), np.ones((2, 2), np.float64))
    assert solver.supported(np.ones((2, 2), np.float32), np.ones((2, 1), np.float32))


# ---------------------------------------------------------------------------------------------
# GPU


def _np(x):
    import cupy as cp
    return cp.asnumpy(x) if isinstance(x, cp.ndarray) else np.asarray(x)


# (name, prim params, input maker(rng, batch, dtype) -> inputs, checker(outs, inputs, params))
def _case_inputs(name, rng, batch, dtype, params):
    if name == "cholesky":
        return [_spd(rng, batch, 6, dtype)]
    if name == "triangular_solve":
        a = _triangular_operand(rng, batch, 5, dtype)
        b = _general(rng, batch + ((5, 3) if params["left_side"] else (3, 5)), dtype)
        return [a, b]
    if name == "lu":
        return [_general(rng, batch + params.pop("_shape", (6, 6)), dtype)]
    if name == "qr":
        return [_general(rng, batch + params.pop("_shape", (6, 4)), dtype)]
    if name == "eigh":
        return [_symmetric_with_garbage(rng, batch, params.pop("_n", 6), dtype,
                                        params["lower"])[0]]
    if name == "svd":
        return [_general(rng, batch + params.pop("_shape", (6, 4)), dtype)]
    raise AssertionError(name)


def _check(name, outs, inputs, params):
    outs = [_np(o) for o in outs] if isinstance(outs, (list, tuple)) else _np(outs)
    if name == "cholesky":
        _check_cholesky(outs, inputs[0])
    elif name == "triangular_solve":
        _check_triangular_solve(outs, *inputs, **params)
    elif name == "lu":
        _check_lu(outs, inputs[0])
    elif name == "qr":
        _check_qr(outs, inputs[0], params["full_matrices"])
    elif name == "eigh":
        x = inputs[0].astype(np.float64)
        lower = params["lower"]
        tri = np.tril(x) if lower else np.triu(x)
        sym = tri + np.swapaxes(tri, -1, -2) - np.eye(x.shape[-1]) * x
        _check_eigh(outs, inputs[0], sym, lower)
    elif name == "svd":
        _check_svd(outs, inputs[0], params["full_matrices"], params["compute_uv"])


_PRIMS = {"cholesky": P.cholesky_p, "triangular_solve": P.triangular_solve_p, "lu": P.lu_p,
          "qr": P.qr_p, "eigh": P.eigh_p, "svd": P.svd_p}

CASES = [
    ("cholesky", {}),
    *[("triangular_solve", dict(left_side=ls, lower=lo, transpose_a=t, conjugate_a=False,
                                unit_diagonal=u))
      for ls in (True, False) for lo in (True, False) for t in (True, False)
      for u in (True, False)],
    ("lu", {}), ("lu", {"_shape": (7, 4)}), ("lu", {"_shape": (4, 7)}),
    ("qr", dict(full_matrices=True)), ("qr", dict(full_matrices=False)),
    ("qr", dict(full_matrices=True, _shape=(4, 6))), ("qr", dict(full_matrices=False,
                                                                 _shape=(4, 6))),
    ("eigh", dict(lower=True)), ("eigh", dict(lower=False)),
    ("svd", dict(full_matrices=True, compute_uv=True)),
    ("svd", dict(full_matrices=False, compute_uv=True)),
    ("svd", dict(full_matrices=False, compute_uv=False)),
    ("svd", dict(full_matrices=True, compute_uv=True, _shape=(4, 6))),
    ("svd", dict(full_matrices=False, compute_uv=True, _shape=(4, 6))),
    # gesvdaStridedBatched (past gesvdj's 32) and gesvd (a full basis of a non-square one)
    ("svd", dict(full_matrices=True, compute_uv=True, _shape=(40, 40))),
    ("svd", dict(full_matrices=False, compute_uv=True, _shape=(44, 36))),
    ("svd", dict(full_matrices=False, compute_uv=True, _shape=(36, 44))),
    ("svd", dict(full_matrices=False, compute_uv=False, _shape=(36, 44))),
    ("svd", dict(full_matrices=True, compute_uv=True, _shape=(44, 36))),
    ("eigh", dict(lower=True, _n=40)),
]
CASE_IDS = [name + "".join(f"-{k}={v}" for k, v in p.items()) for name, p in CASES]


def _split(params):
    params = dict(params)
    return params, {k: v for k, v in params.items() if not k.startswith("_")}


@cuda
def test_gpu_table_uses_the_solver_impls(gpu):
    for name, prim in _PRIMS.items():
        impl, target = gpu.impls.get(prim), getattr(solver, name)
        # (wrapped to widen bfloat16 operands to float32 first)
        assert impl is target or target in [c.cell_contents for c in impl.__closure__ or ()]


def _not_captured(name, params, dtype):
    """The cases cuSOLVER cannot run under stream capture (fnx.cuda.solver._refuse_capture):
    gesvd, which synchronises inside (see solver.svd_method)."""
    if name != "svd":
        return False
    shape = params.get("_shape", (6, 4))
    return solver.svd_method(*shape, params["full_matrices"], params["compute_uv"],
                             dtype) == "gesvd"


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("name,params", CASES, ids=CASE_IDS)
def test_eager_on_gpu(gpu, rng, name, params, batch, dtype):
    import cupy as cp
    params, prim_params = _split(params)
    inputs = _case_inputs(name, rng, batch, dtype, params)
    outs = getattr(solver, name)(*[cp.asarray(x) for x in inputs], **prim_params)
    _check(name, outs, inputs, prim_params)
    # and through the backend's table
    outs = gpu.impls.get(_PRIMS[name])(*[cp.asarray(x) for x in inputs], **prim_params)
    _check(name, outs, inputs, prim_params)


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,params", CASES, ids=CASE_IDS)
def test_direct_capture_and_replay(rng, name, params, dtype):
    """Each impl captured alone into a CUDA graph on a stream prepared as graph.py prepares its
    capture stream, replayed on new inputs copied into the static ones; gesvd refuses
    a capturing stream instead (it synchronises inside)."""
    import cupy as cp
    from fnx.cuda import cublas
    params, prim_params = _split(params)
    fn = getattr(solver, name)
    if _not_captured(name, params, dtype):
        stream = cp.cuda.Stream(non_blocking=True)
        x = cp.asarray(_case_inputs(name, rng, (2,), dtype, dict(params))[0])
        with stream:
            stream.begin_capture()
            try:
                with pytest.raises(solver.CaptureUnsupported):
                    fn(x, **prim_params)
            finally:
                stream.end_capture()
        return
    stream = cp.cuda.Stream(non_blocking=True)
    cublas.handle_for(stream.ptr)
    solver.handle_for(stream.ptr)
    first = _case_inputs(name, rng, (2,), dtype, dict(params))
    static = [cp.asarray(x) for x in first]
    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc), stream:
        fn(*static, **prim_params)                 # warm-up on this stream
        stream.synchronize()
        stream.begin_capture()
        try:
            outs = fn(*static, **prim_params)
        finally:
            graph = stream.end_capture()
        for k in range(3):
            inputs = first if k == 0 else _case_inputs(name, rng, (2,), dtype, dict(params))
            for s, x in zip(static, inputs):
                s.set(x, stream=stream)
            graph.launch(stream)
            stream.synchronize()
            _check(name, outs, inputs, prim_params)


@cuda
def test_a_capture_stream_without_a_handle_is_refused_clearly():
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(np.eye(3) * 2.0)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(RuntimeError, match="before capture begins"):
                solver.cholesky(x)
        finally:
            stream.end_capture()


def _jit_step_exe(step):
    """The GPU executable (a GraphExecutable) of jitted ``step``'s one traced signature."""
    from fnx.core.jit import _executables
    traced = next(iter(step._cache.values()))
    return next(e for k, e in _executables[traced.jaxpr].items() if k[0] == "gpu")


def _fnx_op(name, params):
    if name == "cholesky":
        return lambda x: P.cholesky_p.bind(x)
    if name == "triangular_solve":
        return lambda a, b: P.triangular_solve(a, b, **params)
    if name == "lu":
        return lambda x: tuple(P.lu(x))
    if name == "qr":
        return lambda x: P.qr(x, full_matrices=params["full_matrices"])
    if name == "eigh":
        return lambda x: P.eigh(x, lower=params["lower"], symmetrize_input=False)
    if name == "svd":
        def f(x):     # (u, s, vh), or s alone
            outs = P.svd(x, full_matrices=params["full_matrices"],
                         compute_uv=params["compute_uv"])
            return outs if params["compute_uv"] else (outs,)
        return f
    raise AssertionError(name)


def _prim_order(name, outs, params):
    """The primitive's output order from the public function's."""
    if name in ("cholesky", "triangular_solve"):
        return outs
    if name == "svd" and params["compute_uv"]:
        u, s, vh = outs
        return [s, u, vh]
    return list(outs)


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,params", CASES, ids=CASE_IDS)
def test_jit_replays_a_cuda_graph(gpu, rng, name, params, dtype):
    """Under fnx.jit, called three times on fresh inputs: the second call captures the graph,
    the third replays it; every call matches float64 NumPy."""
    params, prim_params = _split(params)
    f = fnx.jit(_fnx_op(name, prim_params))
    for _ in range(3):
        inputs = _case_inputs(name, rng, (2,), dtype, dict(params))
        outs = f(*[fnx.device_put(x, gpu) for x in inputs])
        _check(name, _prim_order(name, outs, prim_params), inputs, prim_params)
    exe = _jit_step_exe(f)
    if _not_captured(name, params, dtype):       # runs without a graph, and says why
        assert exe.graph is None and "synchronises inside" in exe.reason, exe.describe()
    else:
        assert exe.graph is not None, exe.describe()


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_not_positive_definite_gives_nan_eagerly_and_under_jit(gpu, rng, dtype):
    x = _spd(rng, (3,), 5, dtype)
    x[1, 0, 0] = -1.0
    x_gpu = fnx.device_put(x, gpu)
    eager = np.asarray(linalg.cholesky(x_gpu))
    f = fnx.jit(lambda a: P.cholesky_p.bind(a))
    outs = [np.asarray(f(x_gpu)) for _ in range(3)]
    for out in [eager] + outs:
        assert np.isnan(out[1][np.tril_indices(5)]).all()
        np.testing.assert_array_equal(np.triu(out[1], 1), 0)
        _check_cholesky(out[[0, 2]], x[[0, 2]])
    assert _jit_step_exe(f).graph is not None, _jit_step_exe(f).describe()


@cuda
def test_non_finite_inputs_give_nan_factors_on_gpu(gpu, rng):
    import cupy as cp
    x = _general(rng, (2, 4, 4), np.float64)
    x[0, 2, 1] = np.inf
    v, w = [_np(o) for o in solver.eigh(cp.asarray(x), lower=True)]
    assert np.isnan(v[0]).all() and np.isnan(w[0]).all() and np.isfinite(v[1]).all()
    s, u, vh = [_np(o) for o in solver.svd(cp.asarray(x), full_matrices=False, compute_uv=True)]
    assert np.isnan(s[0]).all() and np.isnan(u[0]).all() and np.isnan(vh[0]).all()
    assert np.isfinite(s[1]).all()


@cuda
def test_singular_inputs_raise_nothing_on_gpu(gpu, rng):
    import cupy as cp
    x = _general(rng, (4, 4), np.float64)
    x[:, 2] = 0.0
    lu, pivots, perm = [_np(o) for o in solver.lu(cp.asarray(x))]
    _check_lu([lu, pivots, perm], x)
    a = _triangular_operand(rng, (), 4, np.float64)
    a[1, 1] = 0.0
    out = _np(solver.triangular_solve(cp.asarray(a), cp.asarray(np.ones((4, 2))),
                                      left_side=True, lower=True, transpose_a=False,
                                      conjugate_a=False, unit_diagonal=False))
    assert not np.isfinite(out[1:]).all()


@cuda
def test_jitted_solve_and_det_on_gpu_replay_as_a_graph(gpu, rng):
    """fnx.linalg.solve / det / inv (built on lu and triangular_solve) under jit."""
    f = fnx.jit(lambda a, b: (linalg.solve(a, b), linalg.det(a), linalg.inv(a)))
    for _ in range(3):
        a = _general(rng, (5, 5), np.float32) + 5 * np.eye(5, dtype=np.float32)
        b = _general(rng, (5, 2), np.float32)
        x, d, inv = f(fnx.device_put(a, gpu), fnx.device_put(b, gpu))
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a.astype(np.float64), b),
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(float(d), np.linalg.det(a.astype(np.float64)), rtol=1e-4)
        np.testing.assert_allclose(np.asarray(inv), np.linalg.inv(a.astype(np.float64)),
                                   rtol=1e-4, atol=1e-4)
    exe = _jit_step_exe(f)
    assert exe.graph is not None, exe.describe()


def _ridge_loss(X, y, lam):
    n = X.shape[-1]
    A = X.T @ X + lam * jnp.eye(n, dtype=X.dtype)
    L = linalg.cholesky(A)
    w = linalg.cho_solve((L, True), X.T @ y)
    return jnp.sum((X @ w - y) ** 2) + lam * jnp.sum(w ** 2)


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_of_a_cholesky_ridge_solve_under_jit_matches_cpu(gpu, cpu, rng, dtype):
    step = fnx.jit(fnx.value_and_grad(_ridge_loss, argnums=(0, 2)))
    ref = fnx.value_and_grad(_ridge_loss, argnums=(0, 2))
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float32 else dict(rtol=1e-8, atol=1e-8)
    for _ in range(3):
        X = _general(rng, (12, 4), dtype)
        y = _general(rng, (12,), dtype)
        lam = dtype(0.5 + rng.random())
        value, (gX, glam) = step(*fnx.device_put((X, y, lam), gpu))
        rvalue, (rX, rlam) = ref(*fnx.device_put((X.astype(np.float64), y.astype(np.float64),
                                                  np.float64(lam)), cpu))
        np.testing.assert_allclose(float(value), float(rvalue), **tol)
        np.testing.assert_allclose(np.asarray(gX), np.asarray(rX), **tol)
        np.testing.assert_allclose(float(glam), float(rlam), **tol)
    exe = _jit_step_exe(step)
    assert exe.graph is not None, exe.describe()
