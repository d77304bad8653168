"""Where twonorm's test NLP gap to scikit-learn's GPC comes from: the model, not the basis.

On the split of ``speed.py`` (2000 training rows, 3000 test rows, seed 0) this fits

1. scikit-learn's ``GaussianProcessClassifier(C(1.0) * RBF(sqrt(d)))`` (logistic
   likelihood, Laplace approximation, evidence maximised): the reference NLP;
2. ``SparseGPClassifier(max_basis=200)`` with the default kernel and with ``C(1.0) *
   RBF(3.0)``, hyperparameters learned (all-rows EP evidence);
3. the same two fitted kernels with every training row in the basis (``max_basis`` =
   ``n``, ``optimizer=None``): the full GP's EP with the probit likelihood, no sparsity;
4. a few kernels along the evidence's ridge, at ``max_basis=200`` and fixed: their log
   evidence next to their test NLP;
5. with ``--full-learned``, the full-basis model with its hyperparameters learned as well
   (slow: each EP sweep is O(n^3)).

If (3) equals (2), no choice of basis closes the gap; if (4) shows the test NLP improving
while the evidence falls, the gap is what the probit EP evidence prefers on this set.

Usage::

    python benchmarks/studies/twonorm_gap.py [--full-learned]

Writes ``benchmarks/studies/results/twonorm_gap.md``.
"""

import argparse
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))  # speed.py

from _common.machine import machine
from speed import split, timed_fits

RESULTS = Path(__file__).resolve().parent / "results"

# (amplitude, length scale) along the ridge of the EP evidence, and below it
RIDGE = [(100, 14.4), (303, 22.3), (1000, 40), (1616, 29.8), (100, 20), (100, 30), (30, 20)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-learned", action="store_true")
    args = parser.parse_args(argv)

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C
    from threadpoolctl import threadpool_limits

    from skgpsparse import SparseGPClassifier

    X, y, X_test, y_test = split(2000, 3000, 0)
    n, d = X.shape
    rows = []

    def fit(label, model):
        """Fit once (``speed.py``'s timing and scores) and add the model's row."""
        res = timed_fits(lambda r: model, X, y, X_test, y_test, 1)
        rows.append(
            f"| {label} | {res['nlp']:.4f} | {res['error']:.2f} | "
            f"{model.log_marginal_likelihood_value_:.2f} | {model.kernel_} | {res['cpu']:.1f} |"
        )
        print(rows[-1], flush=True)

    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        gpc = GaussianProcessClassifier(C(1.0) * RBF(np.sqrt(d)), random_state=0)
        fit("GaussianProcessClassifier (logistic, Laplace), learned", gpc)
        learned = {}
        for name, kernel in [("default kernel", None), ("C(1.0) * RBF(3.0)", C(1.0) * RBF(3.0))]:
            model = SparseGPClassifier(kernel, max_basis=200, random_state=0)
            fit(f"ours, max_basis=200, {name}, learned", model)
            learned[name] = model.kernel_
        for name, kernel in learned.items():
            full = SparseGPClassifier(kernel, max_basis=n, optimizer=None, random_state=0)
            fit(f"ours, every row in the basis, {name}'s fitted kernel", full)
        for amplitude, length_scale in RIDGE:
            kernel = C(amplitude, "fixed") * RBF(length_scale, "fixed")
            model = SparseGPClassifier(kernel, max_basis=200, optimizer=None, random_state=0)
            fit(f"ours, max_basis=200, fixed {amplitude} * RBF({length_scale})", model)
        if args.full_learned:
            model = SparseGPClassifier(C(1.0) * RBF(3.0), max_basis=n, random_state=0)
            fit("ours, every row in the basis, C(1.0) * RBF(3.0), learned", model)

    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# twonorm: the test NLP gap to scikit-learn's GPC, sparse basis against every row",
        "",
        (
            f"Machine: {machine()}; {date}; one BLAS thread. The split of `speed.py` ({n} "
            f"training rows, {X_test.shape[0]} test rows, seed 0). Log evidence: each model's "
            "own (ours: all-rows EP with the probit likelihood; scikit-learn's: Laplace with "
            "the logistic one), not comparable across the two."
        ),
        "",
        "| model | test NLP | test error (%) | log evidence | kernel | fit CPU (s) |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "twonorm_gap.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
