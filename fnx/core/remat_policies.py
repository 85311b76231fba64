"""Which intermediates a ``checkpoint`` keeps for the backward pass: JAX's
``checkpoint_policies`` and ``checkpoint_name``.

A policy is a predicate ``policy(prim, *avals, **params) -> bool`` asked about each equation of
the checkpointed function whose inputs are all known in the forward pass; True saves its outputs
as residuals, False recomputes them in the backward pass. ``checkpoint_name`` tags a value with
a ``name`` primitive (the identity) that the name-based policies look for.

>>> import fnx, fnx.numpy as jnp
>>> def block(w, x):
...     h = checkpoint_name(jnp.tanh(x @ w), "hidden")
...     return jnp.sum(jnp.tanh(h @ w))
>>> policy = checkpoint_policies.save_only_these_names("hidden")
>>> fnx.grad(fnx.checkpoint(block, policy=policy))(jnp.eye(3), jnp.ones((2, 3))).shape
(3, 3)
"""
from __future__ import annotations

from . import lax as _lax
from .convolution import conv_general_dilated_p

name_p = _lax.primitive("name")
name_p.abstract_eval = lambda aval, *, name: aval
name_p.impl = lambda x, *, name: x
# the tangent is not named: a policy decides about primal values only, as in JAX
name_p.jvp = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.batch = lambda vals, dims, *, name: (name_p.bind(vals[0], name=name), dims[0])


def checkpoint_name(x, name: str):
    """``x`` itself, tagged ``name`` for ``checkpoint_policies.save_only_these_names`` and its
    relatives (``jax.ad_checkpoint.checkpoint_name``).

    >>> checkpoint_name(jnp.ones(2), "activations")
    Array([1., 1.], dtype=float32)
    """
    from .pytree import tree_map
    return tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


def _is_dot(prim) -> bool:
    return prim is _lax.dot_general_p or prim is conv_general_dilated_p    # as JAX's


def _has_no_batch_dims(params) -> bool:
    (_, _), (lhs_batch, _) = params["dimension_numbers"]
    return not lhs_batch


class checkpoint_policies:
    """Policies for ``checkpoint(policy=...)``, by JAX's names.

    >>> f = fnx.checkpoint(lambda x: jnp.sin(x @ x), policy=checkpoint_policies.dots_saveable)
    >>> fnx.grad(lambda x: f(x).sum())(jnp.eye(2))
    Array([[1.0806046, 2.       ],
           [2.       , 1.0806046]], dtype=float32)
    """

    @staticmethod
    def everything_saveable(prim, *avals, **params):
        return True

    @staticmethod
    def nothing_saveable(prim, *avals, **params):
        return False

    @staticmethod
    def dots_saveable(prim, *avals, **params):
        return _is_dot(prim)

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *avals, **params):
        return prim is _lax.dot_general_p and _has_no_batch_dims(params)

    checkpoint_dots = dots_saveable
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable
    dot_with_no_batch_dims_saveable = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names):
        """Save the values tagged with one of ``names`` by ``checkpoint_name``; recompute the
        rest."""
        names = frozenset(names)
        return lambda prim, *_, **params: prim is name_p and params["name"] in names

    @staticmethod
    def save_any_names_but_these(*names):
        """Save every named value except those tagged with one of ``names``."""
        names = frozenset(names)
        return lambda prim, *_, **params: prim is name_p and params["name"] not in names

    @staticmethod
    def save_anything_except_these_names(*names):
        """Save everything (named or not) except the values tagged with one of ``names``."""
        names = frozenset(names)
        return lambda prim, *_, **params: prim is not name_p or params["name"] not in names

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        """Save what either policy saves."""
        return lambda prim, *avals, **params: (policy_1(prim, *avals, **params)
                                               or policy_2(prim, *avals, **params))

    # fnx has no host memory space to offload to: offloading policies save on the device
    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src="device", offload_dst="pinned_host"):
        """As ``dots_with_no_batch_dims_saveable`` (the residuals stay on the device)."""
        return checkpoint_policies.dots_with_no_batch_dims_saveable

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved=(),
                                          names_which_can_be_offloaded=(),
                                          offload_src="device", offload_dst="pinned_host"):
        """As ``save_only_these_names`` of both lists (offloaded names stay on the device)."""
        return checkpoint_policies.save_only_these_names(*names_which_can_be_saved,
                                                         *names_which_can_be_offloaded)
