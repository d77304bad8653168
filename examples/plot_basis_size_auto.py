"""
==========================================================
How many basis vectors: ``max_basis="auto"`` on real sets
==========================================================

``max_basis`` trades accuracy for time: the fit's cost grows as :math:`n\\,d_{max}^2`. With
``max_basis="auto"`` (the classifier's default) the estimator grows its basis in doublings
and stops at the first doubling that does not pay: for the classifier, after the fit at 100
vectors, when EP's log evidence gains less than 0.001 nats per row; for the regressor, when
Titsias' bound (profiled) gains less than its threshold.

This example draws what the repository's benchmarks measured on real sets (fitting them here
would take an hour): the test NLP (classifier, pmlb MAGIC and letter) and NLPD (regressor,
kin40k and uci_protein) and the fit's CPU seconds against fixed sizes 50-800, with the size
``"auto"`` chose marked by a star. It reads the records
``benchmarks/studies/results/basis_size_classifier_runs.jsonl`` and
``basis_size_runs.jsonl`` (``benchmarks/studies/basis_size_classifier.py`` and
``basis_size.py`` write them; one seed, one BLAS thread).

What to look for:

- MAGIC gains 0.006 test NLP from 100 to 200 vectors and little after: ``"auto"`` stops at 200,
  at an eighth of the CPU of 800;
- letter's 26 classes each choose their own size (100-400; the star is at the median);
- kin40k and protein still improve at 800, the cap: there ``"auto"`` costs what 800 costs.
  An int ``max_basis`` is the way to a latency or time budget.
"""

import json
from pathlib import Path

import matplotlib.pyplot as plt

try:  # sphinx-gallery runs the example from its folder
    HERE = Path(__file__).resolve().parent
except NameError:
    HERE = Path.cwd()
RESULTS = HERE.parent / "benchmarks" / "studies" / "results"


def records(name):
    """The JSON lines of one records file."""
    with open(RESULTS / name) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def panel(ax_score, ax_cpu, rows, score, title):
    """Score and CPU against the fixed sizes, ``"auto"`` (the last record) starred."""
    fixed = {r["max_basis"]: r for r in rows if isinstance(r["max_basis"], int)}
    sizes = sorted(fixed)
    auto = [r for r in rows if r["max_basis"] == "auto"][-1]
    size = auto["n_basis"] if isinstance(auto["n_basis"], int) else auto["n_basis"][1]
    for ax, key, label in ((ax_score, score, score.upper()), (ax_cpu, "cpu", "fit CPU (s)")):
        ax.plot(sizes, [fixed[p][key] for p in sizes], "o-", label="fixed max_basis")
        ax.plot([size], [auto[key]], "*", color="C3", markersize=14, label='"auto"')
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(p) for p in sizes])
        ax.set_ylabel(label)
    ax_score.set_title(title)
    ax_cpu.set_xlabel("max_basis")


classifier = records("basis_size_classifier_runs.jsonl")
regressor = [r for r in records("basis_size_runs.jsonl") if r.get("kind") == "fit"]
rule = "after the fit at 100"  # the classifier's rule since it became the default
sets = [
    ([r for r in classifier if r["set"] == "magic" and r.get("rule") in (None, rule)],
     "nlp", "classifier: MAGIC"),
    ([r for r in classifier if r["set"] == "letter" and r.get("rule") in (None, rule)],
     "nlp", "classifier: letter (26 classes)"),
    ([r for r in regressor if r["set"] == "kin40k"], "nlpd", "regressor: kin40k"),
    ([r for r in regressor if r["set"] == "uci_protein"], "nlpd", "regressor: protein"),
]
fig, axes = plt.subplots(2, len(sets), figsize=(3.3 * len(sets), 5.6))
for col, (rows, score, title) in enumerate(sets):
    panel(axes[0, col], axes[1, col], rows, score, title)
axes[0, 0].legend(fontsize=8)
fig.tight_layout()
plt.show()

for rows, score, title in sets:
    auto = [r for r in rows if r["max_basis"] == "auto"][-1]
    print(f"{title}: auto kept {auto['n_basis']}, test {score.upper()} {auto[score]:.4f}, "
          f"{auto['cpu']:.0f} s CPU")
