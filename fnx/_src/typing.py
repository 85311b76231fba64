"""``jax._src.typing``: the annotation names, as fnx.typing has them."""
from ..typing import *  # noqa: F401,F403
from ..typing import Array, ArrayLike, DTypeLike  # noqa: F401
