"""IVM design (entropy selection + evidence) vs NLP design on Raetsch sets.

The papers compare the IVM (entropy selection, hyperparameters by the approximate marginal
likelihood) with NLP-based design (adaptive NLP_a selection, hyperparameters by the validation
NLP eq. (4)). Three designs of :class:`skgpsparse.SparseGPClassifier`, all from
``ConstantKernel(1) * RBF(sqrt(d))`` with d_max = N/5 (as benchmarks/raetsch.py):

- ``ivm``: ``selection="entropy", hyperparameter_objective="evidence"``,
- ``entropy_nlp``: ``selection="entropy"`` with the NLP objective (separates the two changes),
- ``nlp``: the default (adaptive sampling kappa = 2, NLP objective).

Usage::

    python benchmarks/ivm_vs_nlp.py                  # banana, waveform, image, ringnorm; 5 r.
    python benchmarks/ivm_vs_nlp.py --quick          # 2 realizations, max_iter 3

Writes ``benchmarks/results/ivm_vs_nlp.md``.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _clf_bench import RESULTS, header, initial_kernel, mean_std, paired, split, test_scores
from _clf_bench import timed_fit as fit_timed

from skgpsparse import SparseGPClassifier

METHODS = {
    "ivm": {"selection": "entropy", "hyperparameter_objective": "evidence"},
    "entropy_nlp": {"selection": "entropy"},
    "nlp": {},
}


def run(datasets, realizations, max_iter):
    records = []
    for name in datasets:
        for r in range(realizations):
            X, y, X_test, y_test = split(name, r)
            for method, params in METHODS.items():
                model = SparseGPClassifier(
                    initial_kernel(X.shape[1]),
                    max_basis=X.shape[0] // 5,
                    max_iter=max_iter,
                    random_state=r,
                    **params,
                )
                model, cpu = fit_timed(model, X, y)
                nlp, err = test_scores(model, X_test, y_test)
                records.append({"data": name, "r": r, "method": method, "nlp": nlp,
                                "err": err, "cpu": cpu, "kernel": str(model.kernel_),
                                "bias": float(model.bias_)})
                print(f"{name:9s} r={r} {method:12s} NLP {nlp:.4f} err {err:.4f} cpu {cpu:.1f}s "
                      f"b {model.bias_:+.3f} {model.kernel_}", flush=True)
    return records


def tables(records, datasets):
    lines = ["| data | method | test NLP x100 | test error % | vs nlp: NLP diff (p) | "
             "vs nlp: error diff (p) | CPU s (median) |", "|---|---|---|---|---|---|---|"]
    for name in datasets:
        base = sorted([x for x in records if x["data"] == name and x["method"] == "nlp"],
                      key=lambda x: x["r"])
        for method in METHODS:
            rec = sorted([x for x in records if x["data"] == name and x["method"] == method],
                         key=lambda x: x["r"])
            if method == "nlp":
                diff = "- | -"
            else:
                dn, pn = paired([x["nlp"] for x in rec], [x["nlp"] for x in base])
                de, pe = paired([x["err"] for x in rec], [x["err"] for x in base])
                diff = f"{dn * 100:+.2f} ({pn:.3f}) | {de * 100:+.2f} ({pe:.3f})"
            lines.append(f"| {name} | {method} | {mean_std([x['nlp'] for x in rec], 100)} | "
                         f"{mean_std([x['err'] for x in rec], 100)} | {diff} | "
                         f"{np.median([x['cpu'] for x in rec]):.1f} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["banana", "waveform", "image", "ringnorm"])
    parser.add_argument("--realizations", type=int, default=5)
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.realizations, args.max_iter = 2, 3
    records = run(args.datasets, args.realizations, args.max_iter)
    lines = header("IVM (entropy + evidence) vs NLP design", sys.argv) + [
        f"Raetsch realizations 1-{args.realizations}, d_max = N/5, max_iter = {args.max_iter}. "
        "Mean +- std over realizations; differences are means of paired differences to `nlp` "
        "with the paired t-test p-value.",
        "",
    ] + tables(records, args.datasets) + ["", "Fitted kernels (realization 1):", ""]
    lines += [f"- {x['data']} / {x['method']}: {x['kernel']}, b = {x['bias']:+.3f}"
              for x in records if x["r"] == 0]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ivm_vs_nlp.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
