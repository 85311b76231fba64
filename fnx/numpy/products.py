"""Products: dot, matmul (batched, broadcasting), einsum, tensordot, outer, inner, vdot."""
from __future__ import annotations

import string

import numpy as np

from ..core import lax
from ..core.errors import ShapeError
from ._core import broadcast_shapes, broadcast_to, promote_dtypes


def matmul(a, b, precision=None, preferred_element_type=None):
    """``a @ b`` with NumPy's rules: 1-D operands are vectors, leading dims broadcast."""
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must not be scalars (shapes {a.shape} and {b.shape})")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a2 = lax.reshape(a, (1,) + a.shape) if a_vec else a
    b2 = lax.reshape(b, b.shape + (1,)) if b_vec else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ShapeError(f"matmul: contracting dimensions differ: {a.shape} @ {b.shape} "
                         f"({a2.shape[-1]} != {b2.shape[-2]})")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
    nb = len(batch)
    a3 = broadcast_to(a2, batch + a2.shape[-2:]) if a2.ndim > 2 or nb else a2
    b3 = broadcast_to(b2, batch + b2.shape[-2:]) if b2.ndim > 2 or nb else b2
    bd = tuple(range(nb))
    out = lax.dot_general(a3, b3, (((nb + 1,), (nb,)), (bd, bd)), precision,
                          preferred_element_type)
    if a_vec:
        out = lax.squeeze(out, (nb,))
    if b_vec:
        out = lax.squeeze(out, (out.ndim - 1,))
    return out


def dot(a, b, precision=None, preferred_element_type=None):
    """NumPy's dot: scalar product, matrix product, or sum over the last axis of ``a`` and the
    second-to-last of ``b``."""
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_both(a, b))
    if b.ndim == 1 or a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, precision, preferred_element_type)
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())), precision,
                           preferred_element_type)


def broadcast_both(a, b):
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(a, shape), broadcast_to(b, shape)


def vdot(a, b):
    a, b = promote_dtypes(a, b)
    return dot(lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,)))


def inner(a, b):
    a, b = promote_dtypes(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return lax.mul(*broadcast_both(a, b))
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())))


def outer(a, b):
    a, b = promote_dtypes(a, b)
    a, b = lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,))
    return lax.dot_general(lax.reshape(a, (a.size, 1)), lax.reshape(b, (1, b.size)),
                           (((1,), (0,)), ((), ())))


def tensordot(a, b, axes=2, precision=None):
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


def einsum(subscripts: str, *operands, precision=None, optimize=None):
    """Einstein summation, contracted pairwise left to right with dot_general.

    >>> einsum("ij,jk->ik", a, b)   # == a @ b
    """
    ops = promote_dtypes(*operands)
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
    out = lax.dot_general(a, b, dn)
    t_out = "".join(batch) + "".join(c for c in ta if c not in tb) + \
        "".join(c for c in tb if c not in ta)
    return t_out, out


def kron(a, b):
    a, b = promote_dtypes(a, b)
    o = lax.mul(*broadcast_both(lax.reshape(a, a.shape + (1,) * b.ndim),
                                lax.reshape(b, (1,) * a.ndim + b.shape)))
    nd = a.ndim
    perm = [x for i in range(nd) for x in (i, nd + i)]
    o = lax.transpose(o, perm)
    return lax.reshape(o, tuple(x * y for x, y in zip(a.shape, b.shape)))



