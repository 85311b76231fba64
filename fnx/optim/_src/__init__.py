"""The modules of optax's private ``optax._src`` that programs import
(``from optax._src import base``, ``optax._src.numerics.safe_norm``), each holding the
fnx.optim names optax's module of that name holds, so such a program ports by its imports.

>>> from fnx.optim._src import base, transform
>>> base.GradientTransformation is fnx.optim.GradientTransformation
True
>>> transform.ScaleByAdamState is fnx.optim.ScaleByAdamState
True
"""
