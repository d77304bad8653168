"""Does backward-deletion exchange help the sparse GP classifier? (``n_exchange``).

On the Raetsch banana, waveform and ringnorm sets (N = 400 training points), the default design
(adaptive sampling, kappa = 2, NLP hyperparameters) is fitted with d_max = N/10 and N/5 basis
vectors and 0, N/20 and N/10 exchange steps after each forward selection (each step deletes the
basis vector whose deletion raises NLP_a least, then re-selects one). Test NLP and error are
compared with no exchange by a paired t-test over realizations (same seeds, so the same first
forward selection).

Usage::

    python benchmarks/studies/classifier_exchange.py               # 10 realizations, max_iter 5
    python benchmarks/studies/classifier_exchange.py --quick       # 3 realizations, max_iter 2

Writes ``benchmarks/studies/results/classifier_exchange.md`` and
``benchmarks/studies/classifier_exchange.png``.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common.clf_bench import header, initial_kernel, mean_std, paired, split, test_scores
from _common.clf_bench import timed_fit as fit_timed

from skgpsparse import SparseGPClassifier

RESULTS = Path(__file__).resolve().parent / "results"


def run(datasets, realizations, max_iter):
    records = []
    for name in datasets:
        for r in range(realizations):
            X, y, X_test, y_test = split(name, r)
            n = X.shape[0]
            for d_max in (n // 10, n // 5):
                for n_exchange in (0, n // 20, n // 10):
                    model = SparseGPClassifier(
                        initial_kernel(X.shape[1]),
                        max_basis=d_max,
                        n_exchange=n_exchange,
                        max_iter=max_iter,
                        random_state=r,
                    )
                    model, cpu = fit_timed(model, X, y)
                    nlp, err = test_scores(model, X_test, y_test)
                    curve = model.exchange_loss_curve_
                    records.append(
                        {"data": name, "r": r, "d_max": d_max, "n_exchange": n_exchange,
                         "nlp": nlp, "err": err, "cpu": cpu, "train_nlp_a": curve}
                    )
                    print(f"{name:9s} r={r} d_max={d_max:3d} exch={n_exchange:3d} NLP {nlp:.4f} "
                          f"err {err:.4f} NLP_a {curve[0]:.4f}->{curve[-1]:.4f} cpu {cpu:.1f}s",
                          flush=True)
    return records


def tables(records, datasets):
    lines = [
        "| data | d_max | exchange steps | test NLP x100 | test error % | train NLP_a x100 "
        "before -> after exchange (kept model) | NLP diff vs 0 (p) | error diff vs 0 (p) "
        "| CPU s (median) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in datasets:
        for d_max in sorted({x["d_max"] for x in records if x["data"] == name}):
            sel = [x for x in records if x["data"] == name and x["d_max"] == d_max]
            base = sorted([x for x in sel if x["n_exchange"] == 0], key=lambda x: x["r"])
            for n_ex in sorted({x["n_exchange"] for x in sel}):
                rec = sorted([x for x in sel if x["n_exchange"] == n_ex], key=lambda x: x["r"])
                before = np.mean([x["train_nlp_a"][0] for x in rec]) * 100
                after = np.mean([x["train_nlp_a"][-1] for x in rec]) * 100
                if n_ex:
                    dn, pn = paired([x["nlp"] for x in rec], [x["nlp"] for x in base])
                    de, pe = paired([x["err"] for x in rec], [x["err"] for x in base])
                    diff = f"{dn * 100:+.2f} ({pn:.3f}) | {de * 100:+.2f} ({pe:.3f})"
                else:
                    diff = "- | -"
                lines.append(
                    f"| {name} | {d_max} | {n_ex} | {mean_std([x['nlp'] for x in rec], 100)} | "
                    f"{mean_std([x['err'] for x in rec], 100)} | {before:.2f} -> {after:.2f} | "
                    f"{diff} | {np.median([x['cpu'] for x in rec]):.1f} |"
                )
    return lines


def plot(records, datasets, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(datasets), figsize=(4.5 * len(datasets), 6), squeeze=False)
    for c, name in enumerate(datasets):
        for d_max, style in zip(sorted({x["d_max"] for x in records if x["data"] == name}),
                                ("b-o", "r--s")):
            sel = [x for x in records if x["data"] == name and x["d_max"] == d_max]
            steps = sorted({x["n_exchange"] for x in sel})
            for row, key in ((0, "nlp"), (1, "err")):
                vals = [[x[key] * 100 for x in sel if x["n_exchange"] == s] for s in steps]
                axes[row, c].errorbar(steps, [np.mean(v) for v in vals],
                                      [np.std(v) for v in vals], fmt=style, capsize=3,
                                      label=f"d_max={d_max}")
        axes[0, c].set_title(f"{name}: test NLP x100")
        axes[1, c].set_title(f"{name}: test error %")
        axes[1, c].set_xlabel("exchange steps per forward selection")
        axes[0, c].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["banana", "waveform", "ringnorm"])
    parser.add_argument("--realizations", type=int, default=10)
    parser.add_argument("--max-iter", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.realizations, args.max_iter = 3, 2
    records = run(args.datasets, args.realizations, args.max_iter)
    lines = header("Exchange steps for the sparse GP classifier", sys.argv) + [
        f"Raetsch realizations 1-{args.realizations} (N = 400 training points), adaptive "
        f"sampling (kappa = 2), NLP hyperparameters, max_iter = {args.max_iter}; the exchange "
        "steps run after every forward selection. Mean +- std over realizations; differences "
        "are means of paired differences to 0 exchange steps with the paired t-test p-value.",
        "",
    ] + tables(records, args.datasets)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "classifier_exchange.md").write_text("\n".join(lines) + "\n")
    plot(records, args.datasets, Path(__file__).resolve().parent / "classifier_exchange.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
