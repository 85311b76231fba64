from .core.pytree import *  # noqa
