"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan`` and
``map``, as JAX's, on three higher-order primitives holding jaxprs: ``cond``, ``while``, ``scan``.

A branch or loop body is traced once into a jaxpr without constvars: the values it closes over
become explicit leading operands (``num_consts``, ``cond_nconsts``, ``body_nconsts``), so every
transformation sees them. Each primitive's rules transform its jaxprs:

* jvp: the jaxprs' JVPs. Which loop carries get a nonzero tangent is found by a fixed point.
* batch: the jaxprs vmapped; carries that become batched are found by a fixed point. A batched
  cond predicate evaluates every branch and selects; a batched while predicate runs the loop
  while any example's predicate holds and keeps finished examples' carries with a select.
* partial_eval (grad's linearize, which is JVP over the partial evaluator): the jaxprs are split
  by ``partial_eval_jaxpr_nounits`` into a known part, run now (or staged into an outer jit),
  that also returns residuals, and an unknown part, staged into the linear jaxpr, that reads
  them. A scan's known part stacks its per-iteration residuals as extra outputs; residuals that
  depend only on loop-invariant operands are computed once, outside the loop.
* transpose: a linear scan becomes a scan in the other direction over the transposed body, a
  linear cond a cond over the transposed branches. A while loop has no transpose: its trip count
  is not known ahead, so reverse mode raises ReverseModeWhileLoopError (use ``scan``, or
  ``fori_loop`` with static bounds, which is a scan).

Eagerly (and in CPU executables) a branch or body runs compiled by the backend once per jaxpr
on the CPU, and interpreted equation by equation elsewhere.
"""
from .common import ControlFlowTypeError, ControlFlowValueError, ReverseModeWhileLoopError
from .conditionals import cond, cond_p, switch
from .loops import fori_loop, map, scan, scan_p, while_loop, while_p

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "cond_p", "while_p",
           "scan_p", "ControlFlowTypeError", "ControlFlowValueError", "ReverseModeWhileLoopError"]
