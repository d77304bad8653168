"""Sphinx configuration of the skgpsparse documentation.

Build (from the repository root, with the docs extra installed: ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error. The API pages (``docs/generated/``) and the example
gallery (``docs/auto_examples/``, run from ``examples/``) are generated at build time and are
not committed.
"""

import os
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
