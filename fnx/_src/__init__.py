"""The few names of JAX's private ``jax._src`` modules that its tutorials and libraries import
(``from jax._src.util import safe_map`` in "Writing custom Jaxpr interpreters", tinygp's
``from jax._src import dtypes``), so such code ports by its imports too."""
