"""Linear-algebra primitives: cholesky, triangular_solve, lu, qr, eigh and svd, each with all of
its rules.

Operands may carry leading batch dimensions (``(..., m, n)``), so a batching rule only moves the
mapped axis to the front. fnx.numpy.linalg and fnx.linalg build solve, inv, det, slogdet and
cho_solve on ``lu`` and ``triangular_solve``. The derivative rules follow JAX's
(jax/_src/lax/linalg.py) for real dtypes.
"""
from __future__ import annotations

from . import dtypes, lax
from .ad import Zero, add_tangents, is_undefined, tangent_aval
from .batching import bdim_at_front, not_mapped
from .core import ShapedArray, get_aval, shape_str
from .errors import DTypeError, ShapeError
from .lax import primitive


def _shp(s):
    return shape_str(s)


def _check_matrix(name, x, square=False):
    if x.ndim < 2:
        raise ShapeError(f"{name} needs a matrix (or a batch of them), got shape {_shp(x.shape)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{name} needs square matrices, got shape {_shp(x.shape)}")
    if not dtypes.is_float(x.dtype) or x.dtype.kind == "c":
        raise DTypeError(f"{name} supports real floating-point matrices, got {x.dtype}")


# ---------------------------------------------------------------------------------------------
# Matrix helpers on primitives (the rules below need them; fnx.numpy sits above core)


def tri_mask(shape, k: int = 0, lower: bool = True):
    """Boolean mask of the (k-shifted) lower or upper triangle over the last two axes."""
    nd = len(shape)
    rows = lax.broadcasted_iota(dtypes.int32, shape, nd - 2)
    cols = lax.broadcasted_iota(dtypes.int32, shape, nd - 1)
    diff = lax.sub(cols, rows)
    k = lax.full(shape, k, dtypes.int32)
    return lax.le(diff, k) if lower else lax.ge(diff, k)


def tril(x, k: int = 0):
    aval = get_aval(x)
    return lax.select(tri_mask(aval.shape, k, True), x, lax.full(aval.shape, 0, aval.dtype))


def triu(x, k: int = 0):
    aval = get_aval(x)
    return lax.select(tri_mask(aval.shape, k, False), x, lax.full(aval.shape, 0, aval.dtype))


def eye_like(x):
    """Identity matrices shaped like ``x`` (batch dims included)."""
    aval = get_aval(x)
    nd = aval.ndim
    rows = lax.broadcasted_iota(dtypes.int32, aval.shape, nd - 2)
    cols = lax.broadcasted_iota(dtypes.int32, aval.shape, nd - 1)
    return lax.convert_element_type(lax.eq(rows, cols), aval.dtype)


def swap_last(x):
    nd = get_aval(x).ndim
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return lax.transpose(x, perm)


def matmul(a, b):
    """``a @ b`` for operands with the same leading batch dims."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return lax.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _symmetrize(x):
    """``(x + x.T) / 2``: a decomposition of it has the symmetric derivative."""
    return lax.mul(lax.add(x, swap_last(x)), lax.full((), 0.5, get_aval(x).dtype))


def _diagonal(x):
    """The diagonals of square matrices (..., n, n) -> (..., n)."""
    return lax.reduce_sum(lax.mul(x, eye_like(x)), (get_aval(x).ndim - 1,))


def _along_rows(v, shape):
    """Vectors (..., k) broadcast to matrices (..., m, k): entry (i, j) is ``v[j]``."""
    nd = len(shape)
    return lax.broadcast_in_dim(v, shape, tuple(range(nd - 2)) + (nd - 1,))


def _along_cols(v, shape):
    """Vectors (..., k) broadcast to matrices (..., k, m): entry (i, j) is ``v[i]``."""
    nd = len(shape)
    return lax.broadcast_in_dim(v, shape, tuple(range(nd - 1)))


def _batch_front(vals, dims):
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    return [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]


# ---------------------------------------------------------------------------------------------
# triangular_solve: op(a) @ x = b (left_side) or x @ op(a) = b, op = identity or transpose


triangular_solve_p = primitive("triangular_solve")


def _triangular_solve_aval(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_matrix("triangular_solve", a, square=True)
    _check_matrix("triangular_solve", b)
    if a.dtype != b.dtype:
        raise DTypeError(f"triangular_solve got dtypes {a.dtype} and {b.dtype}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"triangular_solve batch dimensions differ: {_shp(a.shape)} and "
                         f"{_shp(b.shape)}")
    m = a.shape[-1]
    side = b.shape[-2] if left_side else b.shape[-1]
    if side != m:
        raise ShapeError(f"triangular_solve: a of shape {_shp(a.shape)} does not fit b of shape "
                         f"{_shp(b.shape)} (left_side={left_side})")
    return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


def _triangular_solve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    m, n = get_aval(ans).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = lax.neg(g_a)
    g_a = swap_last(g_a) if transpose_a else g_a

    def a_inverse(rhs):
        return triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                transpose_a=transpose_a, conjugate_a=conjugate_a,
                                unit_diagonal=unit_diagonal)

    # d(op(a)^-1 b) = -op(a)^-1 op(da) x; the order is the cheaper one for the shapes
    if left_side:
        return a_inverse(matmul(g_a, ans)) if m > n else matmul(a_inverse(g_a), ans)
    return a_inverse(matmul(ans, g_a)) if m < n else matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (ta, tb) = primals, tangents
    out = triangular_solve_p.bind(a, b, **params)
    acc = Zero(tangent_aval(get_aval(out)))
    if not isinstance(tb, Zero):
        acc = add_tangents(acc, triangular_solve_p.bind(a, tb, **params))
    if not isinstance(ta, Zero):
        acc = add_tangents(acc, _triangular_solve_jvp_a(ta, out, a, **params))
    return out, acc


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # nonlinear in a, linear in b (like div with its operands swapped)
    assert not is_undefined(a) and is_undefined(b)
    if isinstance(ct, Zero):
        return [None, None]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                          unit_diagonal=unit_diagonal)]


def _triangular_solve_batch(vals, dims, **params):
    a, b = _batch_front(vals, dims)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p.abstract_eval = _triangular_solve_aval
triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.transpose = _triangular_solve_transpose
triangular_solve_p.batch = _triangular_solve_batch


def triangular_solve(a, b, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``
    (lax.linalg.triangular_solve; only the ``lower`` or upper triangle of ``a`` is read).

    >>> L, b = jnp.array([[2.0, 0.0], [1.0, 1.0]]), jnp.array([[2.0], [3.0]])
    >>> triangular_solve(L, b, left_side=True, lower=True)   # L @ x == b
    Array([[1.],
           [2.]], dtype=float32)
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a),
                                   conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# ---------------------------------------------------------------------------------------------
# cholesky: the lower factor L with L @ L.T = x (only x's lower triangle is read)


cholesky_p = primitive("cholesky")


def _cholesky_aval(x):
    _check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _phi(x):
    """The lower triangle with its diagonal halved."""
    half = lax.add(lax.full(get_aval(x).shape, 1, get_aval(x).dtype), eye_like(x))
    return lax.div(tril(x), half)


def _cholesky_jvp(primals, tangents):
    # L_dot = L phi(L^-1 x_dot L^-T), Murray (2016), arXiv:1602.07527
    (x,), (t,) = primals, tangents
    L = cholesky_p.bind(x)
    if isinstance(t, Zero):
        return L, Zero(tangent_aval(get_aval(L)))
    tmp = triangular_solve(L, t, left_side=False, lower=True, transpose_a=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    return L, matmul(L, _phi(inner))


cholesky_p.abstract_eval = _cholesky_aval
cholesky_p.jvp = _cholesky_jvp
cholesky_p.batch = lambda vals, dims: (cholesky_p.bind(bdim_at_front(vals[0], dims[0], None)),
                                       0)


def cholesky(x, symmetrize_input: bool = True):
    """Lower Cholesky factor of symmetric positive-definite ``x`` (NaNs where it is not
    positive definite, as in JAX). ``symmetrize_input`` uses ``(x + x.T) / 2``, which makes the
    derivative the symmetric one.

    >>> L = cholesky(jnp.array([[4.0, 2.0], [2.0, 3.0]])); L @ L.T
    Array([[4., 2.],
           [2., 3.]], dtype=float32)
    """
    if symmetrize_input:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


# ---------------------------------------------------------------------------------------------
# lu: partial-pivoting LU, P @ x = L @ U, with LAPACK's pivots and the row permutation


lu_p = primitive("lu", multiple_results=True)


def _lu_aval(x):
    _check_matrix("lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [ShapedArray(x.shape, x.dtype, x.weak_type),
            ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


def _lu_jvp(primals, tangents):
    # L' = L tril(L^-1 P A' U^-1, -1), U' = triu(L^-1 P A' U^-1) U  (de Hoog, Anderssen, Lukas)
    (a,), (a_dot,) = primals, tangents
    lu, pivots, perm = lu_p.bind(a)
    zeros = [Zero(tangent_aval(get_aval(o))) for o in (lu, pivots, perm)]
    if isinstance(a_dot, Zero):
        return [lu, pivots, perm], zeros
    aval = get_aval(a)
    shape, nd = aval.shape, aval.ndim
    m, n = shape[-2:]
    k = min(m, n)
    perm_b = lax.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    x = lax.take_along_axis(a_dot, perm_b, nd - 2)
    zero = lax.full((), 0, aval.dtype)
    l_pad = [(0, 0, 0)] * nd
    l_pad[-1] = (0, m - k, 0)
    l = lax.pad(tril(lax.slice_in_dim(lu, 0, k, 1, nd - 1), -1), zero, l_pad)
    l = lax.add(l, eye_like(l))
    u_pad = [(0, 0, 0)] * nd
    u_pad[-2] = (0, n - k, 0)
    u = lax.pad(triu(lax.slice_in_dim(lu, 0, k, 1, nd - 2)), zero, u_pad)
    if n > k:   # ones on the padded part of the diagonal keep u invertible
        ushape = get_aval(u).shape
        padded_rows = lax.ge(lax.broadcasted_iota(dtypes.int32, ushape, nd - 2),
                             lax.full(ushape, k, dtypes.int32))
        u = lax.add(u, lax.select(padded_rows, eye_like(u), lax.full(ushape, 0, aval.dtype)))
    la = triangular_solve(l, x, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, lower=False)
    lu_dot = lax.add(matmul(l, tril(lau, -1)), matmul(triu(lau), u))
    return [lu, pivots, perm], [lu_dot, zeros[1], zeros[2]]


lu_p.abstract_eval = _lu_aval
lu_p.jvp = _lu_jvp
lu_p.batch = lambda vals, dims: (lu_p.bind(bdim_at_front(vals[0], dims[0], None)), [0, 0, 0])


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` where
    ``x[..., permutation, :] == L @ U``, L unit lower (below ``lu``'s diagonal) and U upper.

    >>> lu_, pivots, perm = lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> perm
    Array([1, 0], dtype=int32)
    """
    return tuple(lu_p.bind(x))


# ---------------------------------------------------------------------------------------------
# qr: Householder QR (LAPACK's sign convention)


qr_p = primitive("qr", multiple_results=True)


def _qr_aval(x, *, full_matrices):
    _check_matrix("qr", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    k = m if full_matrices else min(m, n)
    return [ShapedArray(batch + (m, k), x.dtype, x.weak_type),
            ShapedArray(batch + (k, n), x.dtype, x.weak_type)]


def _qr_jvp(primals, tangents, *, full_matrices):
    # Townsend, "Differentiating the QR decomposition" (2018)
    (x,), (dx,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    if isinstance(dx, Zero):
        return [q, r], [Zero(tangent_aval(get_aval(q))), Zero(tangent_aval(get_aval(r)))]
    m, n = get_aval(x).shape[-2:]
    if m < n or (full_matrices and m != n):
        raise NotImplementedError("the derivative of qr is defined for m >= n and reduced "
                                  "(full_matrices=False) factors only, as in JAX")
    dx_rinv = triangular_solve(r, dx)     # dx @ r^-1
    qt_dx_rinv = matmul(swap_last(q), dx_rinv)
    lower = tril(qt_dx_rinv, -1)
    do = lax.sub(lower, swap_last(lower))   # skew-symmetric
    dq = lax.add(matmul(q, lax.sub(do, qt_dx_rinv)), dx_rinv)
    dr = matmul(lax.sub(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


qr_p.abstract_eval = _qr_aval
qr_p.jvp = _qr_jvp
qr_p.batch = lambda vals, dims, *, full_matrices: (
    qr_p.bind(bdim_at_front(vals[0], dims[0], None), full_matrices=full_matrices), [0, 0])


def qr(x, full_matrices: bool = True):
    """QR decomposition ``x = q @ r`` (lax.linalg.qr; JAX's default ``full_matrices=True``).

    >>> q, r = qr(jnp.ones((3, 2)), full_matrices=False)
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# ---------------------------------------------------------------------------------------------
# eigh: eigenvectors and ascending eigenvalues of symmetric matrices (only the lower or upper
# triangle is read), in JAX's output order (v, w)


eigh_p = primitive("eigh", multiple_results=True)


def _eigh_aval(x, *, lower):
    _check_matrix("eigh", x, square=True)
    return [ShapedArray(x.shape, x.dtype, x.weak_type),
            ShapedArray(x.shape[:-1], x.dtype, x.weak_type)]


def _reciprocal_off_diagonal(d, eye):
    """``1 / d`` off the diagonal and 0 on it, for ``d`` whose diagonal is 0: eye is added before
    dividing and taken away after, so that diagonal never divides by zero (a zero off the
    diagonal, from repeated eigenvalues or singular values, gives inf, as in JAX)."""
    one = lax.full(get_aval(eye).shape, 1, get_aval(eye).dtype)
    return lax.sub(lax.div(one, lax.add(d, eye)), eye)


def _eigh_jvp(primals, tangents, *, lower):
    # JAX's rule. Differentiating a V = V diag(w) with V^T V = I and S = V^T a_dot V:
    # diag(w_dot) + V^T V_dot diag(w) - diag(w) V^T V_dot = S, so w_dot = diag(S) and, V^T V_dot
    # being skew, (V^T V_dot)_ij = S_ij / (w_j - w_i) off the diagonal and 0 on it
    (x,), (x_dot,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower)
    if isinstance(x_dot, Zero):
        return [v, w], [Zero(tangent_aval(get_aval(v))), Zero(tangent_aval(get_aval(w)))]
    shape = get_aval(v).shape
    eye = eye_like(v)
    gaps = lax.sub(_along_rows(w, shape), _along_cols(w, shape))    # w_j - w_i
    s = matmul(matmul(swap_last(v), x_dot), v)
    v_dot = matmul(v, lax.mul(_reciprocal_off_diagonal(gaps, eye), s))
    return [v, w], [v_dot, _diagonal(s)]


eigh_p.abstract_eval = _eigh_aval
eigh_p.jvp = _eigh_jvp
eigh_p.batch = lambda vals, dims, *, lower: (
    eigh_p.bind(bdim_at_front(vals[0], dims[0], None), lower=lower), [0, 0])


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True):
    """Eigendecomposition of symmetric ``x``: ``(v, w)`` with ``x @ v == v * w``, the eigenvalues
    ``w`` ascending (always, so ``sort_eigenvalues`` changes nothing) and the eigenvectors in the
    columns of ``v``. Only the ``lower`` or upper triangle is read; ``symmetrize_input`` uses
    ``(x + x.T) / 2``, which makes the derivative the symmetric one (lax.linalg.eigh: note the
    order, eigenvectors first).

    >>> v, w = eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    Array([1., 3.], dtype=float32)
    """
    del sort_eigenvalues     # LAPACK's eigenvalues come ascending
    if symmetrize_input:
        x = _symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower))
    return v, w


# ---------------------------------------------------------------------------------------------
# svd: singular values (descending), with U and V^T when compute_uv; outputs [s, u, vh] or [s]


svd_p = primitive("svd", multiple_results=True)


def _svd_aval(x, *, full_matrices, compute_uv):
    _check_matrix("svd", x)
    m, n = x.shape[-2:]
    batch, k = x.shape[:-2], min(m, n)
    s = ShapedArray(batch + (k,), x.dtype, x.weak_type)
    if not compute_uv:
        return [s]
    return [s, ShapedArray(batch + (m, m if full_matrices else k), x.dtype, x.weak_type),
            ShapedArray(batch + (n if full_matrices else k, n), x.dtype, x.weak_type)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    # JAX's rule for real dtypes. With x = U diag(s) V^T (reduced) and S = U^T x_dot V:
    # S = U^T U_dot diag(s) + diag(s_dot) + diag(s) V_dot^T V, both U^T U_dot and V^T V_dot
    # skew, so s_dot = diag(S), and solving for S_ij and S_ji together gives
    # (U^T U_dot)_ij = (S_ij s_j + S_ji s_i) / (s_j^2 - s_i^2) and
    # (V^T V_dot)_ij = (s_i S_ij + s_j S_ji) / (s_j^2 - s_i^2). For m > n (n > m) U (V) is not
    # square: the part of U_dot outside U's span is (I - U U^T) x_dot V diag(1/s)
    (x,), (x_dot,) = primals, tangents
    outs = svd_p.bind(x, full_matrices=full_matrices, compute_uv=compute_uv)
    if isinstance(x_dot, Zero):
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    m, n = get_aval(x).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"the derivative of svd with full_matrices=True is defined for square matrices only "
            f"(as in JAX, which has none for full_matrices=True); got shape {_shp((m, n))}: "
            f"use full_matrices=False")
    # square full factors are the reduced ones; without u and vh they are computed here
    s, u, vh = outs if compute_uv else svd_p.bind(x, full_matrices=False, compute_uv=True)
    v = swap_last(vh)
    ds_mat = matmul(matmul(swap_last(u), x_dot), v)
    s_dot = _diagonal(ds_mat)
    if not compute_uv:
        return outs, [s_dot]
    shape = get_aval(ds_mat).shape
    s_j, s_i = _along_rows(s, shape), _along_cols(s, shape)
    f = _reciprocal_off_diagonal(lax.mul(lax.add(s_j, s_i), lax.sub(s_j, s_i)), eye_like(ds_mat))
    ds_s, s_ds = lax.mul(ds_mat, s_j), lax.mul(s_i, ds_mat)
    # the diagonal of U^T U_dot (imaginary for complex dtypes) is zero for real ones
    u_dot = matmul(u, lax.mul(f, lax.add(ds_s, swap_last(ds_s))))
    v_dot = matmul(v, lax.mul(f, lax.add(s_ds, swap_last(s_ds))))
    if m > n:
        x_dot_v = matmul(x_dot, v)
        outside = lax.sub(x_dot_v, matmul(u, matmul(swap_last(u), x_dot_v)))
        u_dot = lax.add(u_dot, lax.div(outside, _along_rows(s, get_aval(outside).shape)))
    if n > m:
        x_dot_t_u = matmul(swap_last(x_dot), u)
        outside = lax.sub(x_dot_t_u, matmul(v, matmul(vh, x_dot_t_u)))
        v_dot = lax.add(v_dot, lax.div(outside, _along_rows(s, get_aval(outside).shape)))
    return outs, [s_dot, u_dot, swap_last(v_dot)]


def _svd_batch(vals, dims, *, full_matrices, compute_uv):
    outs = svd_p.bind(bdim_at_front(vals[0], dims[0], None), full_matrices=full_matrices,
                      compute_uv=compute_uv)
    return outs, [0] * len(outs)


svd_p.abstract_eval = _svd_aval
svd_p.jvp = _svd_jvp
svd_p.batch = _svd_batch


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition ``x = u @ diag(s) @ vh``, ``s`` descending:
    ``(u, s, vh)``, or ``s`` alone without ``compute_uv`` (lax.linalg.svd). Its derivative
    needs ``full_matrices=False`` unless ``x`` is square, as in JAX.

    >>> u, s, vh = svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), full_matrices=False)
    >>> s
    Array([4., 3.], dtype=float32)
    """
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


__all__ = ["cholesky", "cholesky_p", "eigh", "eigh_p", "lu", "lu_p", "qr", "qr_p", "svd",
           "svd_p", "triangular_solve", "triangular_solve_p", "tril", "triu", "matmul",
           "swap_last", "eye_like"]
