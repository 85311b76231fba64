"""Sphinx configuration for fnx's API reference.

Sphinx with autodoc rather than MkDocs with mkdocstrings: fnx's docstrings are
reStructuredText (``literals``, ``>>>`` doctest blocks, ``::`` code blocks), which Sphinx renders
as written and checks (a broken markup is a warning, so an error here); and autodoc imports the
modules, so a function is documented under the public name users import it by
(``fnx.numpy.sum``), not where it happens to be defined.

The reference pages (api/*.rst) are written at build time from ``public_api``, the same list of
modules and names the doctests cover, so a new public function gets a page entry without an edit
here. Build with warnings as errors: ``sphinx-build -W --keep-going -b html docs docs/_build``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import fnx  # noqa: E402
from api_pages import write_api_pages  # noqa: E402

project = "fnx"
release = version = fnx.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.viewcode"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_theme_options = {"description": "JAX-style function transformations on NumPy and CUDA"}

autodoc_member_order = "bysource"
autodoc_typehints = "signature"     # the docstrings say what the arguments are
autodoc_default_options = {"exclude-members": "__init__, __new__"}
autosummary_generate = False        # the pages are written below, one per module
add_module_names = False

write_api_pages(os.path.join(os.path.dirname(__file__), "api"))
