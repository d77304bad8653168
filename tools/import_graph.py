"""The package's internal import graph: print it, and check its layers.

Usage (from the repository root)::

    python tools/import_graph.py            # the graph, then the checks
    python tools/import_graph.py --quiet    # the checks only

Every ``import`` and ``from ... import`` of a ``skgpsparse`` module is an edge, those inside
functions included. A package's ``__init__`` re-exporting its own submodules is not counted
as a dependency of those submodules on the package. The checks:

- no import cycle;
- the core (``linalg``, ``kernels``, ``selection``, ``_optimize``, ``_validation``) imports no
  estimator family;
- no family (``classification``, ``regression``, ``rvm``) imports another family's modules;
- no module is over 500 lines.

Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "skgpsparse"
CORE = ("linalg", "kernels", "likelihoods", "inference", "rows", "selection", "_optimize",
        "_fitted_state", "_progress", "_validation", "_scaling")
FAMILIES = ("classification", "regression", "rvm")
MAX_LINES = 500


def modules(root=PACKAGE):
    """``{dotted name: path}`` of every module of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def edges(mods):
    """``{module: set of modules it imports}`` within the package."""
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                # the deepest module the name resolves to
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if not target or target == mod:
                    continue
                if mod.startswith(target + ".") or (
                    path.name == "__init__.py" and target.startswith(mod + ".")
                ):
                    continue  # a parent package, or a package re-exporting its own submodule
                graph[mod].add(target)
    return graph


def cycles(graph):
    """Every elementary cycle found by a depth-first search, as lists of modules."""
    found, state, stack = [], {}, []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == "open":
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u)
    return found


def _layer(mod):
    """``("core" | "family" | "top", name)`` of a module below ``skgpsparse``."""
    parts = mod.split(".")
    first = parts[1] if len(parts) > 1 else ""
    if first in CORE:
        return "core", first
    if first in FAMILIES:
        return "family", first
    return "top", first


def layer_violations(graph):
    """Edges that go from the core up to a family, or from one family into another."""
    bad = []
    for u, targets in graph.items():
        lu, nu = _layer(u)
        for v in targets:
            lv, nv = _layer(v)
            if lu == "core" and lv in ("family", "top"):
                bad.append((u, v, "the core imports an estimator family or the top level"))
            elif lu == "family" and lv == "family" and nu != nv:
                bad.append((u, v, "one family imports another family's module"))
    return bad


def long_modules(mods):
    """``(module, lines)`` of the modules over ``MAX_LINES`` lines."""
    out = []
    for mod, path in mods.items():
        n = sum(1 for _ in path.open())
        if n > MAX_LINES:
            out.append((mod, n))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print only the checks")
    args = parser.parse_args(argv)
    mods = modules()
    graph = edges(mods)
    if not args.quiet:
        for mod in sorted(graph):
            targets = ", ".join(t.removeprefix("skgpsparse.") for t in sorted(graph[mod]))
            print(f"{mod.removeprefix('skgpsparse.') or 'skgpsparse'} -> {targets or '-'}")
        print()
    problems = [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    problems += [f"{u} imports {v}: {why}" for u, v, why in layer_violations(graph)]
    problems += [f"{m} has {n} lines (over {MAX_LINES})" for m, n in long_modules(mods)]
    for line in problems:
        print(line)
    print(f"{len(mods)} modules, {sum(map(len, graph.values()))} imports: "
          f"{'no cycle, layers respected' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
