"""``safe_map``, ``safe_zip`` and ``unzip2``: ``map``/``zip`` that refuse arguments of
different lengths, as JAX's ``jax._src.util`` has them."""
from __future__ import annotations

__all__ = ["safe_map", "safe_zip", "unzip2"]


def safe_map(f, *args):
    """``list(map(f, *args))``, all of ``args`` of one length.

    >>> safe_map(lambda a, b: a + b, [1, 2], [10, 20])
    [11, 22]
    """
    args = list(map(list, args))
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch: {[len(a) for a in args]}")
    return list(map(f, *args))


def safe_zip(*args):
    """``list(zip(*args))``, all of ``args`` of one length.

    >>> safe_zip([1, 2], "ab")
    [(1, 'a'), (2, 'b')]
    """
    args = list(map(list, args))
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_zip: length mismatch: {[len(a) for a in args]}")
    return list(zip(*args))


def unzip2(pairs):
    """A sequence of pairs as a pair of tuples.

    >>> unzip2([(1, "a"), (2, "b")])
    ((1, 2), ('a', 'b'))
    """
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)
