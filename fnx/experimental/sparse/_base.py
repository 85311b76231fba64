"""What every sparse format shares: the array-like surface (shape, ndim, size, ``.T``) and the
errors and warnings of sparse code."""
from __future__ import annotations

import math

from ...core.core import Tracer
from ...core.errors import FnxError


class SparseEfficiencyError(FnxError, ValueError):
    """An operation would store many explicit zeros (a layout with larger batch or dense
    dimensions); ``on_inefficient="warn"`` or ``None`` lets it through.

    >>> from fnx.experimental import sparse
    >>> try:
    ...     sparse.BCOO.fromdense(jnp.eye(3)).update_layout(n_batch=1)
    ... except sparse.SparseEfficiencyError as e:
    ...     print(type(e).__name__)
    SparseEfficiencyError
    """


class SparseEfficiencyWarning(UserWarning):
    """An operation on sparse arrays stores many explicit zeros or makes an operand dense
    (``sparsify`` of a primitive with no sparse rule).

    >>> import warnings
    >>> from fnx.experimental import sparse
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = sparse.sparsify(jnp.exp)(sparse.eye(2))
    >>> caught[0].category.__name__
    'SparseEfficiencyWarning'
    """


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """JAX's warning for cuSPARSE fallbacks; fnx never emits it but programs may filter it.

    >>> issubclass(CuSparseEfficiencyWarning, SparseEfficiencyWarning)
    True
    """


class JAXSparse:
    """Base class of fnx's sparse arrays (JAX's name): the shape, the number of stored
    elements ``nse`` and the array-like attributes they share.

    >>> from fnx.experimental import sparse
    >>> isinstance(sparse.BCOO.fromdense(jnp.eye(2)), sparse.JAXSparse)
    True
    """
    __array_priority__ = 2000       # above fnx.Array's: ``x @ sparse`` reaches __rmatmul__
    __hash__ = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self):
        return self.shape[0]

    @property
    def T(self):
        return self.transpose()

    def block_until_ready(self):
        for leaf in self.tree_flatten()[0]:
            leaf.block_until_ready()
        return self

    def __repr__(self):
        try:
            extra = f", nse={self.nse}"
            for name in ("n_batch", "n_dense"):
                if getattr(self, name, 0):
                    extra += f", {name}={getattr(self, name)}"
            text = f"{type(self).__name__}({self.dtype}{list(self.shape)}{extra})"
        except Exception:                # leaves that are not arrays (a tree of placeholders)
            return f"{type(self).__name__}(<invalid>)"
        if isinstance(self.data, Tracer):
            text = f"{type(self.data).__name__}[{text}]"
        return text
