"""Every notebook in notebooks/ runs top to bottom without an error.

The notebooks assert their own results (accuracies, decreasing losses, agreement with closed
forms and scikit-learn), so a failed check shows up here as a cell error. They run in a fresh
``python3`` kernel whose working directory is notebooks/ and whose ``PYTHONPATH`` starts with the
repository root, so the kernel imports this checkout's fnx. Needs the ``test`` extra
(nbclient, nbformat, ipykernel, matplotlib, scikit-learn): without it the tests fail, they do not
skip.
"""
import glob
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")
NOTEBOOKS = sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))
CELL_TIMEOUT_S = 120


def _require(module):
    try:
        return __import__(module)
    except ImportError as e:
        pytest.fail(f"running the notebooks needs {module!r} ({e}); install the test extra: "
                    "pip install -e '.[test]'", pytrace=False)


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, monkeypatch):
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    for module in ("ipykernel", "matplotlib", "sklearn"):
        _require(module)

    # the kernel is a child process: it inherits this environment
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", ROOT + (os.pathsep + pythonpath if pythonpath else ""))

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": NOTEBOOK_DIR}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        message = re.sub(r"\x1b\[[0-9;]*m", "", str(e))    # drop the traceback's colours
        pytest.fail(f"{os.path.basename(path)} failed:\n{message}", pytrace=False)

    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, errors
