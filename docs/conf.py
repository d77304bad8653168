"""Sphinx configuration of the skgpsparse documentation.

Build (from the repository root, with the docs extra installed: ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error. The API pages (``docs/generated/``) and the example
gallery (``docs/auto_examples/``, run from ``examples/``) are generated at build time and are
not committed.
"""

import os
import re
import sys

import matplotlib

matplotlib.use("Agg")

# Document the package from the working tree even when it is not installed.
sys.path.insert(0, os.path.abspath(".."))

import skgpsparse  # noqa: E402

project = "skgpsparse"
author = "the skgpsparse developers"
copyright = "2026, the skgpsparse developers"
version = release = skgpsparse.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md", "**/README.md"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"

# -- API reference ------------------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
# numpydoc renders the docstrings; class members get their own autodoc entries (class
# template), so numpydoc's member tables (which need autosummary stubs) are switched off.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

_TRAILING_UNDERSCORE = re.compile(r"(?<![`\w\\])([A-Za-z]\w*)_(?=[^\w`]|$)")


def _escape_fitted_names_in_types(app, what, name, obj, options, lines):
    """Escape ``name_`` in numpydoc "name : type" lines, e.g. ``shape (n_features_in_,)``.

    reStructuredText reads a bare word ending in an underscore as a hyperlink reference
    (an "Unknown target name" error); scikit-learn-style docstrings use fitted names such as
    ``n_features_in_`` or ``kernel_`` in parameter types. Only the type part is touched.
    """
    for i, line in enumerate(lines):
        head, sep, tail = line.partition(" : ")
        if sep and head.strip() and not head.lstrip().startswith(("..", ":", "-", "*")):
            lines[i] = head + sep + _TRAILING_UNDERSCORE.sub(r"\1\\_", tail)


def _skip_metadata_request_methods(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (metadata routing).

    Their docstrings point into scikit-learn's own documentation (glossary, user guide
    labels), which does not exist here.
    """
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    # Before numpydoc (priority 500) turns the sections into reST.
    app.connect("autodoc-process-docstring", _escape_fitted_names_in_types, priority=100)
    app.connect("autodoc-skip-member", _skip_metadata_request_methods)


# -- Example gallery ----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "write_computation_times": False,
    "image_scrapers": ("matplotlib",),
    "remove_config_comments": True,
}

# -- HTML -----------------------------------------------------------------------------------
html_theme = "alabaster"
html_theme_options = {
    "description": "Sparse Gaussian processes for scikit-learn",
    "fixed_sidebar": True,
}
html_static_path = []
html_show_sourcelink = False
