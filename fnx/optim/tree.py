"""fnx.optim.tree: optax.tree, the short names of ``fnx.optim.tree_utils`` (``tree.add`` for
``tree_utils.tree_add``).

>>> from fnx.optim import tree
>>> tree.norm({"a": jnp.array([3.0, 4.0])})
Array(5., dtype=float32)
"""
from . import tree_utils as _tu

globals().update({name[len("tree_"):]: getattr(_tu, name) for name in _tu.__all__
                  if name.startswith("tree_")})
