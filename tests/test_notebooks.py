"""Every notebook in notebooks/ runs top to bottom without an error, and is stored with the
outputs of such a run.

The notebooks assert their own results (accuracies, decreasing losses, agreement with closed
forms and scikit-learn), so a failed check shows up here as a cell error. They run as
``tools/refresh_notebooks.py`` runs them (the function is shared): in a fresh ``python3`` kernel
whose working directory is notebooks/ and whose ``PYTHONPATH`` starts with the repository root.
Needs the ``test`` extra (nbclient, nbformat, ipykernel, matplotlib, scikit-learn): without it
the tests fail, they do not skip.
"""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from refresh_notebooks import NOTEBOOK_DIR, execute, notebook_paths  # noqa: E402

NOTEBOOKS = notebook_paths()


def _require(module):
    try:
        return __import__(module)
    except ImportError as e:
        pytest.fail(f"running the notebooks needs {module!r} ({e}); install the test extra: "
                    "pip install -e '.[test]'", pytrace=False)


def _errors(nb):
    return [out for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_stored_with_its_outputs(path):
    # a reader on GitHub sees the results without running anything
    nbformat = _require("nbformat")
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{os.path.basename(path)} is not stored as run top to bottom (execution counts "
        f"{counts}): run python tools/refresh_notebooks.py")
    assert not _errors(nb)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path):
    nbclient = _require("nbclient")
    for module in ("nbformat", "ipykernel", "matplotlib", "sklearn"):
        _require(module)
    try:
        nb = execute(path)
    except nbclient.exceptions.CellExecutionError as e:
        message = re.sub(r"\x1b\[[0-9;]*m", "", str(e))    # drop the traceback's colours
        pytest.fail(f"{os.path.basename(path)} failed:\n{message}", pytrace=False)
    assert not _errors(nb)
