"""Site parameters by moment matching vs NLP optimisation (additive-model paper §5, Figure 2).

On the Raetsch waveform and image sets, each realization is fitted twice with the default
design (adaptive sampling, kappa = 2, NLP hyperparameters), once with ``site_update=
"moment_matching"`` and once with ``"optimize"``. As in the paper's Figure 2 ("as the basis
vectors are added in the inner loop just before termination"), the inner loop is then re-run
with each model's final hyperparameters and its own site update, and the test NLP and error are
recorded as the basis grows. The final models are compared by a paired t-test over realizations.

Usage::

    python benchmarks/papers/site_update.py                # 10 realizations, d_max 80, max_iter 10
    python benchmarks/papers/site_update.py --quick         # 3 realizations, max_iter 3

Writes ``benchmarks/papers/results/site_update.md`` and ``benchmarks/papers/site_update.png``.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common.clf_bench import header, initial_kernel, mean_std, paired, split, test_scores
from _common.clf_bench import timed_fit as fit_timed

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._adf import ADFState
from skgpsparse.kernels import iter_kernel
from skgpsparse.latent._model import _make_selector
from skgpsparse.likelihoods import Probit

RESULTS = Path(__file__).resolve().parent / "results"

UPDATES = ("moment_matching", "optimize")


def predict_scores(state, X, y):
    """Test NLP and error of the ADF model held by ``state`` (validation paper eq. (2.7))."""
    p = state.size
    u = state.basis_indices
    s = np.sqrt(state.site_precision[:p])
    K_uu = state.kernel(state.X[u])
    L = np.linalg.cholesky(np.eye(p) + s[:, None] * K_uu * s[None, :])
    w = s * np.linalg.solve(L.T, np.linalg.solve(L, s * state.site_mean[:p]))
    var = state.kernel.diag(X).astype(float)
    mean = np.empty(X.shape[0])
    for rows, K in iter_kernel(state.kernel, X, state.X[u]):
        mean[rows] = K @ w + state.bias
        V = np.linalg.solve(L, (K * s).T)
        var[rows] -= np.einsum("ij,ij->j", V, V)
    z = np.where(y > 0, 1.0, -1.0) * mean / np.sqrt(1.0 + np.maximum(var, 0.0))
    from scipy.special import log_ndtr

    return float(-np.mean(log_ndtr(z))), float(np.mean(z < 0))


def inner_loop_curve(model, X, y, X_test, y_test, update, sizes, seed):
    """Re-run forward selection with the fitted hyperparameters, scoring at ``sizes``."""
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    state = ADFState(model.kernel_, X, y_pm, model.bias_, max(sizes), site_update=update,
                     likelihood=Probit())
    selector = _make_selector("adaptive", None)
    rng = np.random.RandomState(seed)
    out = []
    while state.size < max(sizes) and state.candidates().size:
        state.add(selector.select(state, rng))
        if state.size in sizes:
            out.append(predict_scores(state, X_test, y_test))
    return out


def run(datasets, realizations, d_max, max_iter, sizes):
    records = []
    for name in datasets:
        for r in range(realizations):
            X, y, X_test, y_test = split(name, r)
            for update in UPDATES:
                model = SparseGPClassifier(
                    initial_kernel(X.shape[1]),
                    max_basis=d_max,
                    site_update=update,
                    max_iter=max_iter,
                    random_state=r,
                )
                model, cpu = fit_timed(model, X, y)
                nlp, err = test_scores(model, X_test, y_test)
                curve = inner_loop_curve(model, X, y, X_test, y_test, update, sizes, r)
                records.append(
                    {"data": name, "r": r, "update": update, "nlp": nlp, "err": err,
                     "cpu": cpu, "curve": curve}
                )
                print(f"{name:9s} r={r} {update:16s} NLP {nlp:.4f} err {err:.4f} "
                      f"cpu {cpu:.1f}s", flush=True)
    return records


def tables(records, datasets, sizes):
    lines = [
        "| data | site update | test NLP x100 | test error % | CPU s (median) |",
        "|---|---|---|---|---|",
    ]
    tests = ["", "| data | quantity | optimize - moment matching (mean) | paired t-test p |",
             "|---|---|---|---|"]
    for name in datasets:
        by = {u: [x for x in records if x["data"] == name and x["update"] == u] for u in UPDATES}
        for u in UPDATES:
            rec = by[u]
            lines.append(
                f"| {name} | {u} | {mean_std([x['nlp'] for x in rec], 100)} | "
                f"{mean_std([x['err'] for x in rec], 100)} | "
                f"{np.median([x['cpu'] for x in rec]):.1f} |"
            )
        for key, scale in (("nlp", 100), ("err", 100)):
            d, pv = paired([x[key] for x in by["optimize"]], [x[key] for x in by["moment_matching"]])
            tests.append(f"| {name} | final test {key} x100 | {d * scale:+.3f} | {pv:.3f} |")
        for i, size in enumerate(sizes):
            a = [x["curve"][i][0] for x in by["optimize"] if len(x["curve"]) > i]
            b = [x["curve"][i][0] for x in by["moment_matching"] if len(x["curve"]) > i]
            if len(a) == len(b) and a:
                d, pv = paired(a, b)
                tests.append(f"| {name} | inner-loop test NLP x100 at {size} basis vectors | "
                             f"{d * 100:+.3f} | {pv:.3f} |")
    return lines + tests


def plot(records, datasets, sizes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(datasets), figsize=(4.5 * len(datasets), 6), squeeze=False)
    for c, name in enumerate(datasets):
        for u, style in zip(UPDATES, ("r-o", "b--s")):
            curves = [x["curve"] for x in records if x["data"] == name and x["update"] == u]
            n = min(len(cv) for cv in curves)
            arr = np.array([cv[:n] for cv in curves])  # realizations x sizes x (nlp, err)
            for row, k in ((0, 1), (1, 0)):
                axes[row, c].errorbar(sizes[:n], arr[:, :, k].mean(0), arr[:, :, k].std(0),
                                      fmt=style, label=u, capsize=3)
        axes[0, c].set_title(f"{name}: test error")
        axes[1, c].set_title(f"{name}: test NLP")
        axes[1, c].set_xlabel("basis vectors (inner loop, final hyperparameters)")
        axes[0, c].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["waveform", "image"])
    parser.add_argument("--realizations", type=int, default=10)
    parser.add_argument("--d-max", type=int, default=80)
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.realizations, args.max_iter = 3, 3
    sizes = [s for s in (5, 10, 20, 40, 60, 80, 120, 160) if s <= args.d_max]
    records = run(args.datasets, args.realizations, args.d_max, args.max_iter, sizes)
    lines = header("Site update: moment matching vs NLP optimisation", sys.argv) + [
        f"Raetsch realizations 1-{args.realizations}, d_max = {args.d_max}, adaptive sampling "
        f"(kappa = 2), NLP hyperparameters, max_iter = {args.max_iter}. Mean +- std over "
        "realizations; paired t-test over realizations.",
        "",
    ] + tables(records, args.datasets, sizes)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "site_update.md").write_text("\n".join(lines) + "\n")
    plot(records, args.datasets, sizes, Path(__file__).resolve().parent / "site_update.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
