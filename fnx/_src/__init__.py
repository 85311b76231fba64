"""The private helpers of JAX's that its own tutorials import (``from jax._src.util import
safe_map`` in "Writing custom Jaxpr interpreters"), so those programs port by their imports."""
