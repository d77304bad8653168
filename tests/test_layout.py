"""The package layout: no import cycle, the core below the families, no family in another's."""

import importlib.util
from pathlib import Path

import pytest

_TOOL = Path(__file__).resolve().parents[1] / "tools" / "import_graph.py"


@pytest.fixture(scope="module")
def import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", _TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_package_has_no_cycle_and_respects_its_layers(import_graph):
    mods = import_graph.modules()
    graph = import_graph.edges(mods)
    assert "skgpsparse.inference._adf" in graph
    assert "skgpsparse.linalg" in graph["skgpsparse.inference._adf"]
    assert import_graph.cycles(graph) == []
    assert import_graph.layer_violations(graph) == []
    assert import_graph.long_modules(mods) == []


def test_the_checks_find_a_cycle_and_a_family_crossing(import_graph, tmp_path):
    # a toy package with a lazy (function-level) cycle and a family importing another's module
    root = tmp_path / "skgpsparse"
    for folder in ("classification", "regression", "linalg"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "classification" / "_a.py").write_text("from ._b import f\n")
    (root / "classification" / "_b.py").write_text("def f():\n    from ._a import g\n")
    (root / "regression" / "_c.py").write_text("from ..classification._a import f\n")
    (root / "linalg" / "_d.py").write_text("from ..regression import _c\n")
    graph = import_graph.edges(import_graph.modules(root))
    cycles = import_graph.cycles(graph)
    assert [set(c) for c in cycles] == [
        {"skgpsparse.classification._a", "skgpsparse.classification._b"}
    ]
    bad = {(u, v) for u, v, _ in import_graph.layer_violations(graph)}
    assert bad == {
        ("skgpsparse.regression._c", "skgpsparse.classification._a"),
        ("skgpsparse.linalg._d", "skgpsparse.regression._c"),
        ("skgpsparse.linalg._d", "skgpsparse.regression"),  # its __init__ runs too
    }
