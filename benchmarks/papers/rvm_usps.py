"""SSEM against batch EM for RVM classification: one USPS digit against the rest (PCA to 16-d).

The SSEM paper's MNIST experiment in miniature (§5): the paper trains "ones against the rest" on
6742 ones plus as many random other digits, PCA-projected to 16 dimensions, with 800 candidate
basis functions for both SSEM and batch EM, and reports test error, number of basis functions and
CPU time. Here: USPS (../shared/datasets/usps.npz, the standard 7291/2007 split), PCA to 16
dimensions fitted on the training images, for each digit in ``--digits`` all training images of
that digit plus as many random others, ``--n-basis`` (default 800, as in the paper) random training inputs as
candidate basis functions, a Gaussian basis ``RBF(l)`` with ``l`` the median distance between
training points (fixed), probit likelihood, mean-field E-step with adaptive TAP cavity variances
(and the Laplace approximation for comparison). Test error on all 2007 test images (digit vs
rest). BLAS single-threaded; CPU = process time on a shared 2-core machine.

Usage::

    python benchmarks/papers/rvm_usps.py                 # digits 1 and 8, TAP and Laplace
    python benchmarks/papers/rvm_usps.py --quick         # digit 1, TAP only, 200 basis functions

Writes ``benchmarks/papers/results/rvm_usps.md`` and ``benchmarks/papers/rvm_usps.png``.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.gaussian_process.kernels import RBF

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.data import load_dataset
from _common.machine import machine

from skgpsparse import RelevanceVectorClassifier

HERE = Path(__file__).resolve().parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--digits", type=int, nargs="+", default=None)
    parser.add_argument("--n-basis", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None, help="timed fits (median)")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    digits = args.digits or ([1] if args.quick else [1, 8])
    n_basis = args.n_basis or (200 if args.quick else 800)
    cavities = ["tap"] if args.quick else ["tap", "laplace"]

    data = load_dataset("usps")
    X, y = data["X"].astype(np.float64), data["y"].astype(int)
    tr, te = data["train_idx"][0], data["test_idx"][0]
    pca = PCA(n_components=16, random_state=0).fit(X[tr])
    Z_tr, Z_te = pca.transform(X[tr]), pca.transform(X[te])
    rng = np.random.RandomState(0)
    sub = Z_tr[rng.choice(len(Z_tr), 1000, replace=False)]
    d2 = ((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1)
    length = float(np.sqrt(np.median(d2[np.triu_indices(len(sub), 1)])))
    kernel = RBF(length_scale=length, length_scale_bounds="fixed")
    print(f"PCA 16-d, RBF length scale {length:.3f} (median distance)", flush=True)

    rows, curves = [], {}
    for digit in digits:
        pos = np.flatnonzero(y[tr] == digit)
        neg = np.flatnonzero(y[tr] != digit)
        neg = np.random.RandomState(digit).choice(neg, len(pos), replace=False)
        idx = np.concatenate([pos, neg])
        Xd, yd = Z_tr[idx], (y[tr][idx] == digit).astype(int)
        yte = (y[te] == digit).astype(int)
        for cavity in cavities:
            for method in ("ssem", "batch_em"):
                est = RelevanceVectorClassifier(
                    kernel,
                    method=method,
                    cavity_variance=cavity,
                    n_basis_functions=n_basis,
                    max_iter=100,
                    tol=1e-4,
                    random_state=0,
                )
                cpus, walls = [], []
                for _ in range(repeats):  # the fit is deterministic; repeats time it
                    t0, w0 = time.process_time(), time.perf_counter()
                    est.fit(Xd, yd)
                    cpus.append(time.process_time() - t0)
                    walls.append(time.perf_counter() - w0)
                cpu, wall = float(np.median(cpus)), float(np.median(walls))
                err = float(np.mean(est.predict(Z_te) != yte))
                train_err = float(np.mean(est.predict(Xd) != yd))
                b = est.estimators_[0]
                nrv = len(b.relevance_indices_) + int(np.isfinite(b.alpha_bias_))
                row = {
                    "digit": digit,
                    "cavity": cavity,
                    "method": method,
                    "n": len(yd),
                    "cpu": cpu,
                    "wall": wall,
                    "err": err,
                    "train_err": train_err,
                    "nrv": nrv,
                    "ll": b.log_marginal_likelihood_value_,
                    "n_iter": b.n_iter_,
                }
                rows.append(row)
                if digit == digits[0] and cavity == "tap":
                    curves[method] = b
                print(
                    f"digit {digit} {cavity:7s} {method:8s} n={len(yd)} cpu={cpu:7.1f}s "
                    f"test err={100 * err:.2f}% train err={100 * train_err:.2f}% "
                    f"basis functions={nrv} approx log evidence={row['ll']:.2f} "
                    f"batch steps={b.n_iter_}",
                    flush=True,
                )
    write(rows, curves, digits, n_basis, length, args, repeats)


def write(rows, curves, digits, n_basis, length, args, repeats):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# SSEM vs batch EM: RVM classification, one USPS digit against the rest",
        "",
        (
            f"{stamp}; {machine()}; single-threaded BLAS, nice 10, on a machine shared with "
            f"other jobs; CPU = process time, wall = elapsed, medians of {repeats} fits; "
            f"`python benchmarks/papers/rvm_usps.py{' --quick' if args.quick else ''}`."
        ),
        "",
        (
            f"PCA to 16 dimensions; training set: all training images of the digit plus as many "
            f"random others; {n_basis} random candidate basis functions (the paper: 800 on MNIST); "
            f"RBF length scale {length:.3f} (median distance, fixed); probit, mean-field E-step; "
            f"max 100 batch steps, tol 1e-4. Test error on all 2007 USPS test images (digit vs "
            f"rest)."
        ),
        "",
        (
            "| digit | n train | E-step | method | test error | train error | basis functions | "
            "CPU (s) | wall (s) | approx. log evidence | batch steps |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['digit']} | {r['n']} | {r['cavity']} | {r['method']} | "
            f"{100 * r['err']:.2f}% | {100 * r['train_err']:.2f}% | {r['nrv']} | "
            f"{r['cpu']:.1f} | {r['wall']:.1f} | {r['ll']:.2f} | {r['n_iter']} |"
        )
    lines += [
        "",
        "SSEM relative to batch EM:",
        "",
        "| digit | E-step | CPU batch / CPU SSEM | test error SSEM / batch |",
        "|---|---|---|---|",
    ]
    for digit in digits:
        for cavity in ("tap", "laplace"):
            pair = {r["method"]: r for r in rows if r["digit"] == digit and r["cavity"] == cavity}
            if len(pair) == 2:
                s, b = pair["ssem"], pair["batch_em"]
                ratio = s["err"] / b["err"] if b["err"] > 0 else float("nan")
                lines.append(f"| {digit} | {cavity} | {b['cpu'] / s['cpu']:.2f} | {ratio:.2f} |")
    lines += [
        "",
        (
            "The paper (MNIST ones vs rest, 13484 training images, 800 basis functions): "
            "test error 0.74% SSEM vs 0.66% batch EM, 55 vs 186 minutes, 28 vs 31 basis "
            "functions."
        ),
        "",
        (
            "The classifier's SSEM step has always been the paper's full step 4: every EM step "
            "(sweep or batch) applies MacKay's update to every active alpha. Its posterior "
            "precision A + Phi^T Omega Phi changes with the site precisions Omega at every "
            "Newton step of the mean-field E-step (eqs. 16-19), so it is refactorised there, "
            "O(n M^2) per Newton step, and no rank-k update applies; the 2026-11-22 rank-k "
            "change of the regressor does not touch it. The previous run (2026-11-22 02:18 UTC, "
            "same code for the classifier): CPU batch / SSEM 13.55 (digit 1, TAP), 6.00 (1, "
            "Laplace), 1.86 (8, TAP), 2.24 (8, Laplace); test error SSEM / batch 0.64, 0.64, "
            "1.57, 1.49."
        ),
    ]
    out = HERE / "results" / "rvm_usps.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if curves:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for method, b in curves.items():
            label = "SSEM" if method == "ssem" else "batch EM"
            axes[0].plot(b.cpu_time_curve_, b.log_marginal_likelihood_curve_, label=label)
            axes[1].plot(b.cpu_time_curve_, b.n_relevance_curve_, label=label)
        axes[0].set(
            xlabel="CPU time (s)",
            ylabel="approx. log evidence",
            title=f"USPS digit {digits[0]} vs rest (TAP)",
        )
        axes[1].set(
            xlabel="CPU time (s)",
            ylabel="active basis functions",
            title="Number of basis functions vs CPU time",
        )
        for a in axes:
            a.legend()
        fig.tight_layout()
        fig.savefig(HERE / "rvm_usps.png", dpi=120)


if __name__ == "__main__":
    main()
