"""Writes one reStructuredText page per public module: its docstring, a summary table, then an
entry per public name (autodoc reads the docstrings)."""
import importlib
import inspect
import os

import numpy as np

from public_api import MODULES, public_names


def _entry(module_name, name, obj, indexed):
    target = f"{module_name}.{name}"
    if not (getattr(obj, "__module__", None) or "").startswith("fnx") and not _is_data(obj):
        # NumPy's own objects (jnp.floating, jnp.iinfo): their docstrings are NumPy's
        kind = "class" if inspect.isclass(obj) else "function"
        origin = f"{getattr(obj, '__module__', 'numpy')}.{getattr(obj, '__qualname__', name)}"
        return [f".. py:{kind}:: {target}", *([] if indexed else ["   :no-index:"]), "",
                f"   NumPy's ``{origin}``, as in JAX.", ""]
    if type(obj).__name__ == "SimpleNamespace":      # scipy.stats' distributions
        methods = ", ".join(f"``{name}.{m}``" for m in vars(obj))
        lines = [f".. py:data:: {target}", "", f"   The distribution's functions, with SciPy's "
                 f"arguments: {methods}.", ""]
    elif _is_constant(obj):                         # jnp.pi, jnp.newaxis
        lines = [f".. py:data:: {target}", f"   :value: {obj!r}"]
    elif _is_data(obj):
        lines = [f".. autodata:: {target}"]
    elif inspect.isclass(obj):
        lines = [f".. autoclass:: {target}", "   :members:"]
    else:
        lines = [f".. autofunction:: {target}"]
    if not indexed:
        lines.insert(1, "   :no-index:")
    return lines + [""]


def _is_constant(obj):
    """Plain values (jnp.pi) and dtype instances (fnx.dtypes.float0), shown by their repr:
    NumPy's own docstring of a dtype is not fnx's and does not build."""
    return not callable(obj) and (type(obj).__module__ == "builtins"
                                  or isinstance(obj, np.dtype))


def _is_data(obj):
    return not callable(obj) or type(obj).__name__ == "SimpleNamespace"


def _page(module_name, seen):
    module = importlib.import_module(module_name)
    names = public_names(module_name)
    title = f"``{module_name}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {module_name}", "   :no-members:", ""]
    if names:
        lines += [".. autosummary::", "   :nosignatures:", ""]
        # a constant's docstring is its type's (float's): the table would show that
        lines += [f"   {n}" for n in names if not _is_constant(getattr(module, n))] + [""]
    for name in names:
        obj = getattr(module, name)
        key = id(obj) if callable(obj) else (module_name, name)
        lines += _entry(module_name, name, obj, indexed=key not in seen)
        seen.add(key)
    return "\n".join(lines)


def write_api_pages(directory):
    """Write ``<module>.rst`` for every public module and ``index.rst`` listing them."""
    os.makedirs(directory, exist_ok=True)
    seen = set()
    for module_name in MODULES:
        text = _page(module_name, seen)
        path = os.path.join(directory, f"{module_name}.rst")
        if not os.path.exists(path) or open(path).read() != text:     # keep Sphinx's cache
            with open(path, "w") as f:
                f.write(text)
    index = ["API reference", "=============", "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {m}" for m in MODULES]
    with open(os.path.join(directory, "index.rst"), "w") as f:
        f.write("\n".join(index) + "\n")
