"""What reverse-mode differentiation keeps for the backward pass: ``saved_residuals`` and
``print_saved_residuals`` (``jax.ad_checkpoint``'s), to see what a ``checkpoint`` policy saves.

>>> from fnx.ad_checkpoint import print_saved_residuals
>>> print_saved_residuals(lambda x: jnp.sin(jnp.sin(x)), jnp.ones(3))
f32[3] output of cos from <doctest ...>:1 (<lambda>)
f32[3] output of cos from <doctest ...>:1 (<lambda>)
"""
from __future__ import annotations

import inspect

from .jaxpr import Literal, dce_jaxpr
from .pytree import keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten


def _argument_names(fun, args, kwargs) -> list[str]:
    """A name for every leaf of ``(args, kwargs)``: the parameter's name, with the leaf's path
    inside it (``params['w']``)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        named = list(bound.arguments.items())
    except (TypeError, ValueError):       # no signature, or one the call does not fit
        named = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    names = []
    for name, value in named:
        names += [name + keystr(path) for path, _ in tree_flatten_with_path(value)[0]]
    return names


def saved_residuals(fun, *args, **kwargs) -> list[tuple]:
    """``(aval, description)`` of every array ``vjp(fun, *args)`` keeps for its backward pass:
    arguments first, then results of operations in the order the program computes them.

    >>> [(aval.str_short(), what) for aval, what in saved_residuals(jnp.exp, jnp.ones(2))]
    [('f32[2]', 'output of exp from ...')]
    """
    from .api import make_jaxpr, vjp

    backward = []

    def residuals(*args, **kwargs):
        out, pullback = vjp(lambda *a: fun(*a, **kwargs), *args)
        leaves, tree = tree_flatten(pullback)
        backward.append((tree, out))
        return leaves
    jaxpr = make_jaxpr(residuals)(*args, **kwargs).jaxpr
    used = _used_by_the_backward_pass(jaxpr, *backward[0])
    names = _argument_names(fun, args, kwargs)
    arg_of = {v: names[i] if i < len(names) else f"argument {i}"
              for i, v in enumerate(jaxpr.invars)}
    outs = list(dict.fromkeys(v for v, u in zip(jaxpr.outvars, used)
                              if u and not isinstance(v, Literal)))
    from_args = sorted((v for v in outs if v in arg_of), key=list(arg_of).index)
    found = [(v.aval, f"from the argument {arg_of[v]}") for v in from_args]
    computed = []
    for v in outs:
        made = _made_by(jaxpr, v)
        if made is not None:
            computed.append((made[1], v.aval, made[0]))
    for _, aval, eqn in sorted(computed, key=lambda c: c[0]):
        where = f" from {eqn.source_info}" if eqn.source_info is not None else ""
        found.append((aval, f"output of {eqn.primitive.name}{where}"))
    return found


def _used_by_the_backward_pass(jaxpr, tree, out) -> list[bool]:
    """Which residuals the pullback reads (a vjp may hold more than its backward pass needs)."""
    from .api import ShapeDtypeStruct, make_jaxpr

    def spec(x):
        aval = getattr(x, "aval", x)
        return ShapeDtypeStruct(aval.shape, aval.dtype)
    leaves = [spec(v.aval) for v in jaxpr.outvars]
    cotangents = tree_map(spec, out)
    pull = make_jaxpr(lambda leaves, ct: tree_unflatten(tree, leaves)(ct))(leaves, cotangents)
    _, reads = dce_jaxpr(pull.jaxpr)
    return reads[:len(leaves)]


def _made_by(jaxpr, v, path=()):
    """``(equation, path)``: the equation that really computes ``v`` (inside a call such as a
    ``checkpoint`` or a nested ``jit``, the one its body computes it with), and its position
    as the indices of the equations leading to it."""
    for i, eqn in enumerate(jaxpr.eqns):
        if v in eqn.outvars:
            body = eqn.params.get("jaxpr")
            body = getattr(body, "jaxpr", body)
            if body is not None and len(getattr(body, "outvars", ())) == len(eqn.outvars):
                inner = _made_by(body, body.outvars[eqn.outvars.index(v)], path + (i,))
                if inner is not None:
                    return inner
            return eqn, path + (i,)
    return None


def print_saved_residuals(fun, *args, **kwargs) -> None:
    """Print what ``saved_residuals`` finds, one array a line.

    >>> print_saved_residuals(lambda w, x: jnp.tanh(w @ x).sum(), jnp.ones((2, 3)), jnp.ones(3))
    f32[2,3] from the argument w
    f32[3] from the argument x
    f32[2] output of sub from <doctest ...>:1 (<lambda>)
    """
    for aval, description in saved_residuals(fun, *args, **kwargs):
        print(aval.str_short(), description)
