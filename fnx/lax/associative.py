"""``associative_scan``: all prefix combinations of an associative function in O(log n) rounds
of whole-array calls, built from strided slices (so grad, vmap, jit and both backends follow).

>>> import fnx.lax as lax, fnx.numpy as jnp
>>> lax.associative_scan(jnp.add, jnp.arange(5.0))     # [0, 1, 3, 6, 10]
"""
from __future__ import annotations

from ..core import lax
from ..core.core import get_aval
from ..core.errors import ShapeError
from ..core.pytree import tree_flatten, tree_unflatten


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """The inclusive scan of ``elems`` (a pytree of arrays of one length along ``axis``) under
    ``fn``, which must be associative; ``out[i]`` is ``fn(fn(elems[0], elems[1]), ...)`` up to
    ``elems[i]`` (from the other end with ``reverse``). ``fn`` takes and returns pytrees like
    ``elems`` and is applied to whole slices at once, as in JAX.

    >>> decays, inputs = jnp.full(4, 0.5), jnp.ones(4)   # h[t] = 0.5 * h[t-1] + 1
    >>> lax.associative_scan(lambda a, b: (a[0] * b[0], b[0] * a[1] + b[1]), (decays, inputs))[1]
    Array([1.   , 1.5  , 1.75 , 1.875], dtype=float32)
    """
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    shapes = [get_aval(x).shape for x in leaves]
    axis = axis % len(shapes[0]) if shapes[0] else 0
    lengths = {s[axis] if len(s) > axis else None for s in shapes}
    if len(lengths) != 1 or None in lengths:
        raise ShapeError(f"associative_scan needs arrays of one length along axis {axis}, got "
                         f"shapes {', '.join(map(str, shapes))}")

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        flat, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan's fn must return the structure of its inputs, "
                            f"{tree}; got {out_tree}")
        return flat

    def piece(xs, start, stop, stride=1):
        return [lax.slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def len_of(xs):
        return get_aval(xs[0]).shape[axis]

    def scan(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        # combine neighbouring pairs, scan those (half as many), then fill in the others
        odd = scan(combine(piece(xs, 0, n - 1, 2), piece(xs, 1, n, 2)))
        if n % 2 == 0:
            even = combine(piece(odd, 0, len_of(odd) - 1), piece(xs, 2, n, 2))
        else:
            even = combine(odd, piece(xs, 2, n, 2))
        even = [lax.concatenate([first, rest], axis) for first, rest in
                zip(piece(xs, 0, 1), even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    def interleave(even, odd):
        """even[0], odd[0], even[1], odd[1], ... (even has as many entries as odd, or one
        more)."""
        n_even, n_odd = get_aval(even).shape[axis], get_aval(odd).shape[axis]
        paired = lax.slice_in_dim(even, 0, n_odd, 1, axis)
        both = lax.concatenate([lax.expand_dims(paired, (axis + 1,)),
                                lax.expand_dims(odd, (axis + 1,))], axis + 1)
        shape = get_aval(both).shape
        merged = lax.reshape(both, shape[:axis] + (2 * n_odd,) + shape[axis + 2:])
        if n_even == n_odd:
            return merged
        return lax.concatenate([merged, lax.slice_in_dim(even, n_odd, n_even, 1, axis)], axis)

    if reverse:     # as JAX: the reversed arrays are scanned with fn's arguments as they are
        leaves = [lax.rev(x, (axis,)) for x in leaves]
    out = scan(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


__all__ = ["associative_scan"]
