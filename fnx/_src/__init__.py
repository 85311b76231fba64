"""The few names of JAX's private ``jax._src`` modules that libraries import (tinygp's
``from jax._src import dtypes``), so such code ports by its imports too."""
