"""Products: dot, matmul (batched, broadcasting), einsum, tensordot, outer, inner, vdot."""
from __future__ import annotations

import string

import numpy as np

from ..core import dtypes, lax
from ..core.convolution import conv_general_dilated
from ..core.errors import ShapeError
from ._core import (asarray, broadcast_shapes, broadcast_to, canonicalize_axis, promote_dtypes,
                    promote_dtypes_inexact)


def matmul(a, b, precision=None, preferred_element_type=None, out_sharding=None):
    """``a @ b`` with NumPy's rules: 1-D operands are vectors, leading dims broadcast.

    >>> jnp.matmul(jnp.ones((2, 3)), jnp.ones((3, 4))).shape
    (2, 4)
    """
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must not be scalars (shapes {a.shape} and {b.shape})")
    if preferred_element_type is None:      # as JAX: the product's dtype is asked for by name
        preferred_element_type = a.dtype
    k_b = b.ndim - 2 if b.ndim > 1 else 0
    if a.shape[-1] != b.shape[k_b]:
        raise ShapeError(f"matmul: contracting dimensions differ: {a.shape} @ {b.shape} "
                         f"({a.shape[-1]} != {b.shape[k_b]})")
    if a.ndim == 1 or b.ndim == 1:
        # a vector contracts as it is, with no reshape to a 1-row matrix (as in JAX): under
        # vmap the batch axis is then a row of a 2-D product
        return lax.dot_general(a, b, (((a.ndim - 1,), (k_b,)), ((), ())), precision,
                               preferred_element_type)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], op="matmul")
    nb = len(batch)
    # A leading dimension both operands have (same size, not 1) is a batch dimension of the
    # product; one only one operand has is a free dimension of that operand, so that
    # (B, T, D) @ (D, F) is one product over B*T rows and its weight gradient contracts B and T
    # at once, with no broadcast weight and no per-example products summed afterwards (JAX
    # does the same).
    a_lead = (None,) * (nb - (a.ndim - 2)) + tuple(range(a.ndim - 2))
    b_lead = (None,) * (nb - (b.ndim - 2)) + tuple(range(b.ndim - 2))
    a_drop, b_drop, a_batch, b_batch, a_free, b_free, order = [], [], [], [], [], [], []
    for i, (ai, bi) in enumerate(zip(a_lead, b_lead)):
        a_size = a.shape[ai] if ai is not None else 1
        b_size = b.shape[bi] if bi is not None else 1
        if ai is not None and bi is not None and a_size == b_size != 1:
            a_batch.append(ai), b_batch.append(bi), order.append(("batch", len(a_batch) - 1))
            continue
        if ai is not None and a_size == 1 and (b_size != 1 or bi is not None):
            a_drop.append(ai)
            ai = None
        if bi is not None and b_size == 1 and ai is not None:
            b_drop.append(bi)
            bi = None
        if ai is not None:
            a_free.append(ai), order.append(("a", len(a_free) - 1))
        elif bi is not None:
            b_free.append(bi), order.append(("b", len(b_free) - 1))
        else:
            order.append(("one", None))
    a3 = lax.squeeze(a, tuple(a_drop)) if a_drop else a
    b3 = lax.squeeze(b, tuple(b_drop)) if b_drop else b
    a_pos = {ax: k for k, ax in enumerate(d for d in range(a.ndim) if d not in a_drop)}
    b_pos = {ax: k for k, ax in enumerate(d for d in range(b.ndim) if d not in b_drop)}
    out = lax.dot_general(
        a3, b3, (((a3.ndim - 1,), (b3.ndim - 2,)),
                 (tuple(a_pos[d] for d in a_batch), tuple(b_pos[d] for d in b_batch))),
        precision, preferred_element_type)
    # dot_general's result: batch dims, a's free (its leading ones, then m), b's (then n)
    nbatch, na = len(a_batch), len(a_free)
    place = {"batch": lambda k: k, "a": lambda k: nbatch + k,
             "b": lambda k: nbatch + na + 1 + k}
    perm = [place[kind](k) for kind, k in order if kind != "one"]
    perm += [nbatch + na, out.ndim - 1]
    if perm != list(range(out.ndim)):
        out = lax.transpose(out, tuple(perm))
    if len(perm) < nb + 2:          # leading dims of size 1 in both operands
        out = lax.reshape(out, batch + out.shape[-2:])
    return out


def dot(a, b, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's dot: scalar product, matrix product, or sum over the last axis of ``a`` and the
    second-to-last of ``b``.

    >>> jnp.dot(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
    Array(11., dtype=float32)
    """
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_both(a, b))
    if b.ndim == 1 or a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, precision, preferred_element_type)
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())), precision,
                           a.dtype if preferred_element_type is None else preferred_element_type)


def broadcast_both(a, b):
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(a, shape), broadcast_to(b, shape)


def vdot(a, b, precision=None, preferred_element_type=None):
    """The dot product of ``a`` and ``b`` flattened, conjugating ``a`` when complex.

    >>> jnp.vdot(jnp.array([1j, 2.0]), jnp.array([1j, 3.0]))
    Array(7.+0.j, dtype=complex64)
    """
    a, b = promote_dtypes(a, b)
    if dtypes.kind(a.dtype) == "c":
        a = lax.conj(a)
    return dot(lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,)), precision,
               preferred_element_type)


def inner(a, b):
    """The inner product over the last axes of ``a`` and ``b``.

    >>> jnp.inner(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
    Array(11., dtype=float32)
    """
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_both(a, b))
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())))


def outer(a, b):
    """The outer product of the flattened ``a`` and ``b``.

    >>> jnp.outer(jnp.array([1, 2]), jnp.array([1, 10]))
    Array([[ 1, 10],
           [ 2, 20]], dtype=int32)
    """
    a, b = promote_dtypes(a, b)
    a, b = lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,))
    return lax.dot_general(lax.reshape(a, (a.size, 1)), lax.reshape(b, (1, b.size)),
                           (((1,), (0,)), ((), ())))


def tensordot(a, b, axes=2, precision=None):
    """The sum of products of ``a`` and ``b`` over ``axes``: the last ``axes`` axes of ``a``
    with the first of ``b``, or the two given lists of axes.

    >>> jnp.tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    a, b = promote_dtypes(a, b)
    if isinstance(axes, (int, np.integer)):
        ca = tuple(range(a.ndim - axes, a.ndim))
        cb = tuple(range(axes))
    else:
        ca, cb = axes
        ca = (ca,) if isinstance(ca, int) else tuple(ca)
        cb = (cb,) if isinstance(cb, int) else tuple(cb)
    ca = tuple(x % a.ndim for x in ca)
    cb = tuple(x % b.ndim for x in cb)
    return lax.dot_general(a, b, ((ca, cb), ((), ())), precision)


def _sublists_to_subscripts(*args):
    """NumPy's interleaved form ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` as a subscripts string
    and its operands (integers label axes; ``Ellipsis`` stands for ``...``)."""
    out = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if len(args) % 2 else args
    operands, sublists = list(pairs[0::2]), list(pairs[1::2])
    letters = string.ascii_letters

    def term(sublist):
        return "".join("..." if i is Ellipsis else letters[int(i)] for i in sublist)
    subscripts = ",".join(term(s) for s in sublists)
    if out is not None:
        subscripts += "->" + term(out)
    return subscripts, operands


def einsum(subscripts: str, *operands, precision=None, optimize=None, out_sharding=None,
           preferred_element_type=None):
    """Einstein summation, contracted pairwise left to right with dot_general. NumPy's
    interleaved form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, works too. ``out_sharding``
    (JAX's explicit placement of the result) leaves the values as they are;
    ``preferred_element_type`` is the dtype the products accumulate in and the result has.

    >>> a, b = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.ones((2, 1))
    >>> jnp.einsum("ij,jk->ik", a, b)   # a @ b
    Array([[3.],
           [7.]], dtype=float32)
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists_to_subscripts(subscripts, *operands)
    ops = promote_dtypes(*operands)
    if preferred_element_type is not None:
        # widening the operands first accumulates in that dtype, as dot_general would
        ops = [lax.convert_element_type(o, dtypes.canonicalize(preferred_element_type,
                                                               "einsum")) for o in ops]
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
    else:
        lhs = subscripts
        letters = [c for c in lhs.replace(",", "").replace(".", "")]
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(ops)} operands")
    terms, out = _expand_ellipsis(terms, out, ops)
    for t, o in zip(terms, ops):
        if len(t) != o.ndim:
            raise ShapeError(f"einsum: subscripts {t!r} do not match operand of shape {o.shape}")
    # take diagonals for repeated labels within one operand, then sum labels used nowhere else
    ops = list(ops)
    for i, (t, o) in enumerate(zip(terms, ops)):
        terms[i], ops[i] = _diagonalize(t, o)
    # a label of size 1 in one operand broadcasts against the same label elsewhere (ellipsis
    # dimensions broadcast as in matmul)
    sizes: dict = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, o.shape):
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    for i, (t, o) in enumerate(zip(terms, ops)):
        want = tuple(sizes[c] if n == 1 else n for c, n in zip(t, o.shape))
        if want != o.shape:
            ops[i] = broadcast_to(o, want)
    cur_t, cur = terms[0], ops[0]
    for k in range(1, len(ops)):
        later = set(out) | set("".join(terms[k + 1:]))
        cur_t, cur = _sum_unused(cur_t, cur, later | set(terms[k]))
        t2, o2 = _sum_unused(terms[k], ops[k], later | set(cur_t))
        cur_t, cur = _contract_pair(cur_t, cur, t2, o2, later)
    cur_t, cur = _sum_unused(cur_t, cur, set(out))
    if sorted(cur_t) != sorted(out):
        raise ValueError(f"einsum: output subscripts {out!r} are not all in the inputs")
    return lax.transpose(cur, tuple(cur_t.index(c) for c in out))


def _expand_ellipsis(terms, out, ops):
    if not any("..." in t for t in terms):
        return terms, out
    used = set("".join(terms) + out)
    free = [c for c in string.ascii_letters if c not in used]
    nell = max(o.ndim - (len(t) - 3) for t, o in zip(terms, ops) if "..." in t)
    ell = "".join(free[:nell])
    new_terms = []
    for t, o in zip(terms, ops):
        if "..." in t:
            k = o.ndim - (len(t) - 3)
            t = t.replace("...", ell[nell - k:])
        new_terms.append(t)
    if "..." in out:
        out = out.replace("...", ell)
    elif "->" not in out:
        out = ell + out
    return new_terms, out


def _diagonalize(t, o):
    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        i = t.index(c)
        j = t.index(c, i + 1)
        from .shapes import diagonal
        o = diagonal(o, 0, i, j)
        t = "".join(x for k, x in enumerate(t) if k not in (i, j)) + c
    return t, o


def _sum_unused(t, o, keep):
    axes = tuple(i for i, c in enumerate(t) if c not in keep)
    if not axes:
        return t, o
    return "".join(c for c in t if c in keep), lax.reduce_sum(o, axes)


def _contract_pair(ta, a, tb, b, later):
    contract = [c for c in ta if c in tb and c not in later]
    batch = [c for c in ta if c in tb and c in later]
    dn = ((tuple(ta.index(c) for c in contract), tuple(tb.index(c) for c in contract)),
          (tuple(ta.index(c) for c in batch), tuple(tb.index(c) for c in batch)))
    out = lax.dot_general(a, b, dn, preferred_element_type=a.dtype)
    t_out = "".join(batch) + "".join(c for c in ta if c not in tb) + \
        "".join(c for c in tb if c not in ta)
    return t_out, out


def kron(a, b):
    """The Kronecker product of ``a`` and ``b``.

    >>> jnp.kron(jnp.eye(2), jnp.array([[1.0, 2.0]]))
    Array([[1., 2., 0., 0.],
           [0., 0., 1., 2.]], dtype=float32)
    """
    a, b = promote_dtypes(a, b)
    o = lax.mul(*broadcast_both(lax.reshape(a, a.shape + (1,) * b.ndim),
                                lax.reshape(b, (1,) * a.ndim + b.shape)))
    nd = a.ndim
    perm = [x for i in range(nd) for x in (i, nd + i)]
    o = lax.transpose(o, perm)
    return lax.reshape(o, tuple(x * y for x, y in zip(a.shape, b.shape)))





def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot products of the vectors along ``axis``, broadcasting the other dimensions.

    >>> jnp.vecdot(jnp.asarray([[1.0, 2.0], [3.0, 4.0]]), jnp.asarray([1.0, 1.0]))
    Array([3., 7.], dtype=float32)
    """
    x1, x2 = promote_dtypes(x1, x2)
    a1 = canonicalize_axis(axis, x1.ndim, "vecdot")
    a2 = canonicalize_axis(axis, x2.ndim, "vecdot")
    if x1.shape[a1] != x2.shape[a2]:
        raise ShapeError(f"vecdot: vector sizes differ along axis {axis}: shapes {x1.shape} and "
                         f"{x2.shape}")
    from .shapes import moveaxis
    x1, x2 = moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)
    if dtypes.kind(x1.dtype) == "c":    # the Array API's vecdot conjugates its first argument
        x1 = lax.conj(x1)
    # (..., 1, n) @ (..., n, 1): matmul broadcasts the batch dimensions
    out = matmul(lax.expand_dims(x1, (x1.ndim - 1,)), lax.expand_dims(x2, (x2.ndim,)),
                 precision, preferred_element_type)
    return lax.squeeze(out, (out.ndim - 2, out.ndim - 1))


def matvec(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Matrix-vector products over broadcast batch dimensions: ``(..., m, n) x (..., n)``.

    >>> jnp.matvec(jnp.eye(2) * 2, jnp.array([1.0, 3.0]))
    Array([2., 6.], dtype=float32)
    """
    x1, x2 = promote_dtypes(x1, x2)
    if x1.ndim < 2 or x2.ndim < 1:
        raise ShapeError(f"matvec: need a matrix and a vector, got shapes {x1.shape} and "
                         f"{x2.shape}")
    out = matmul(x1, lax.expand_dims(x2, (x2.ndim,)), precision, preferred_element_type)
    return lax.squeeze(out, (out.ndim - 1,))


def vecmat(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Vector-matrix products over broadcast batch dimensions: ``(..., n) x (..., n, m)``.

    >>> jnp.vecmat(jnp.array([1.0, 3.0]), jnp.eye(2) * 2)
    Array([2., 6.], dtype=float32)
    """
    x1, x2 = promote_dtypes(x1, x2)
    if x1.ndim < 1 or x2.ndim < 2:
        raise ShapeError(f"vecmat: need a vector and a matrix, got shapes {x1.shape} and "
                         f"{x2.shape}")
    out = matmul(lax.expand_dims(x1, (x1.ndim - 1,)), x2, precision, preferred_element_type)
    return lax.squeeze(out, (out.ndim - 2,))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross products of 3-vectors (or 2-vectors, taken with zero third component) along the
    given axes; two 2-vectors give the scalar z component.

    >>> jnp.cross(jnp.asarray([1.0, 0.0, 0.0]), jnp.asarray([0.0, 1.0, 0.0]))
    Array([0., 0., 1.], dtype=float32)
    """
    from .shapes import moveaxis
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"cross: operands must be vectors, got shapes {a.shape} and {b.shape}")
    a = moveaxis(a, canonicalize_axis(axisa, a.ndim, "cross"), -1)
    b = moveaxis(b, canonicalize_axis(axisb, b.ndim, "cross"), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ShapeError(f"cross: incompatible dimensions for cross product (dimension must be "
                         f"2 or 3), got shapes {a.shape} and {b.shape} along the vector axes")
    batch = broadcast_shapes(a.shape[:-1], b.shape[:-1], op="cross")

    def comps(x):
        cs = [broadcast_to(lax.squeeze(lax.slice_in_dim(x, i, i + 1, 1, x.ndim - 1),
                                       (x.ndim - 1,)), batch) for i in range(x.shape[-1])]
        return cs + [None] * (3 - len(cs))
    a0, a1, a2 = comps(a)
    b0, b1, b2 = comps(b)
    z = lax.sub(lax.mul(a0, b1), lax.mul(a1, b0))
    if a2 is None and b2 is None:
        return z
    mul = (lambda u, v: None if u is None or v is None else lax.mul(u, v))
    sub = (lambda p, q: p if q is None else (lax.neg(q) if p is None else lax.sub(p, q)))
    x = sub(mul(a1, b2), mul(a2, b1))
    y = sub(mul(a2, b0), mul(a0, b2))
    out = lax.concatenate([lax.expand_dims(c, (len(batch),)) for c in (x, y, z)], len(batch))
    return moveaxis(out, -1, canonicalize_axis(axisc, out.ndim, "cross"))


def _conv1d(a, v, mode, flip_v, name, precision=None, preferred_element_type=None):
    """``full``/``same``/``valid`` 1-D convolution (``flip_v``) or correlation (of ``a`` with
    conjugated ``v``) as one ``conv_general_dilated``, as JAX computes them; integer inputs
    give floats unless ``preferred_element_type`` says otherwise (NumPy's rule)."""
    a, v = (promote_dtypes(a, v) if preferred_element_type is not None
            else promote_dtypes_inexact(a, v))
    if a.ndim != 1 or v.ndim != 1:
        raise ShapeError(f"{name}: only 1-D inputs are supported, got shapes {a.shape} and "
                         f"{v.shape}")
    n, m = a.shape[0], v.shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if not flip_v and dtypes.kind(v.dtype) == "c":
        v = lax.conj(v)
    swapped = m > n
    if swapped:   # slide the shorter sequence over the longer one
        a, v, n, m = v, a, m, n
    if flip_v:
        v = lax.rev(v, (0,))
    pads = {"full": (m - 1, m - 1), "same": (m // 2, m - m // 2 - 1), "valid": (0, 0)}[mode]
    out = conv_general_dilated(lax.reshape(a, (1, 1, n)), lax.reshape(v, (1, 1, m)), (1,),
                               [pads], precision=precision,
                               preferred_element_type=preferred_element_type)
    out = lax.reshape(out, out.shape[2:])
    if swapped and not flip_v:
        out = lax.rev(out, (0,))   # correlate(a, v) is reversed correlate(v, a)
    return out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of 1-D ``a`` and ``v`` (modes full, same, valid).

    >>> jnp.convolve(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    """
    return _conv1d(a, v, mode, True, "convolve", precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of 1-D ``a`` and ``v``: ``out[k] = sum_n a[n + k] * v[n]`` (modes
    valid (default), same, full).

    >>> jnp.correlate(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.0, 1.0, 0.5]))
    Array([3.5], dtype=float32)
    """
    return _conv1d(a, v, mode, False, "correlate", precision, preferred_element_type)


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's rule.

    >>> jnp.polyval(jnp.asarray([1.0, 0.0, -1.0]), jnp.asarray([2.0, 3.0]))
    Array([3., 8.], dtype=float32)
    """
    p, x = promote_dtypes(p, x)
    if p.ndim == 0:
        raise ShapeError("polyval: p must have a leading axis of coefficients, got shape ()")
    # coefficients run along p's first axis; the rest broadcast with x (as JAX and NumPy)
    shape = broadcast_shapes(p.shape[1:], x.shape)
    x = broadcast_to(x, shape)
    y = lax.full(shape, 0, x.dtype)
    for i in range(p.shape[0]):
        c = broadcast_to(lax.reshape(lax.slice_in_dim(p, i, i + 1), p.shape[1:]), shape)
        y = lax.add(lax.mul(y, x), c)
    return y


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D ``x``: columns are powers of ``x`` (decreasing unless
    ``increasing``).

    >>> jnp.vander(jnp.asarray([2.0, 3.0]), 3)
    Array([[4., 2., 1.],
           [9., 3., 1.]], dtype=float32)
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-D, got shape {x.shape}")
    n = x.shape[0]
    N = n if N is None else int(N)
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if N == 0:
        return lax.full((n, 0), 0, x.dtype)
    # a running product, not pow: exact for integers and no 0 * inf in gradients at x == 0
    cols = [lax.full((n, 1), 1, x.dtype)] + [lax.reshape(x, (n, 1))] * (N - 1)
    out = lax.cumprod(lax.concatenate(cols, 1), 1)
    return out if increasing else lax.rev(out, (1,))
