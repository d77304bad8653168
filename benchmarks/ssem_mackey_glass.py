"""Subspace EM against batch EM for RVM regression on the Mackey-Glass series (SSEM paper §5).

The Mackey-Glass delay differential equation ``dz/dt = 0.2 z(t-17) / (1 + z(t-17)^10) - 0.1 z(t)``
is integrated (Heun, step 0.1, after a transient of 1000 time units) and sampled at unit times.
Inputs are 16 lags spaced 6 apart, ``x_k = [z(k-6), z(k-12), ..., z(k-96)]``, the target is
``t_k = z(k)`` (six steps ahead). Basis functions are Gaussians of fixed variance 10
(``RBF(sqrt(10))``), as in the paper. For each training size (100 to 2400) and each repetition a
random partition gives the training set and 5804 test cases from the remaining points.

Reported, as in the paper's Figure 3 (left): test error, number of relevance vectors and CPU
time of SSEM relative to batch EM (means over repetitions), plus the absolute numbers; and, as
in Figure 2, the log marginal likelihood and number of relevance vectors against CPU time for
400 training points. BLAS runs single-threaded (CPU times are process times on a shared
2-core machine). Batch EM starts from all N basis functions (O(N^3) per step at first) and is
capped at ``max_iter`` = 200 batch steps, like SSEM's final phase; both stop when one step
raises the log likelihood by less than ``tol`` = 1e-5 relative.

Usage::

    python benchmarks/ssem_mackey_glass.py            # sizes 100..2400, 3 repetitions
    python benchmarks/ssem_mackey_glass.py --quick    # sizes 100..800, 1 repetition

Writes ``benchmarks/results/ssem_mackey_glass.md``, ``benchmarks/ssem_mackey_glass.png`` and
``benchmarks/ssem_mackey_glass_curves.png``.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine

from skgpsparse import RelevanceVectorRegressor

HERE = Path(__file__).resolve().parent
N_TEST = 5804
N_LAGS, SPACING, HORIZON = 16, 6, 6


def mackey_glass(n, *, tau=17.0, a=0.2, b=0.1, dt=0.1, z0=1.2, transient=1000):
    """``n`` unit-time samples of the Mackey-Glass series (Heun's method, step ``dt``)."""
    per_unit = round(1.0 / dt)
    lag = round(tau / dt)
    total = (n + transient) * per_unit
    z = np.empty(total + lag + 1)
    z[: lag + 1] = z0

    def f(zt, zl):
        return a * zl / (1.0 + zl**10) - b * zt

    for i in range(lag, lag + total):
        k1 = f(z[i], z[i - lag])
        k2 = f(z[i] + dt * k1, z[i - lag + 1])
        z[i + 1] = z[i] + 0.5 * dt * (k1 + k2)
    return z[lag::per_unit][transient : transient + n]


def embed(z):
    """Inputs ``[z(k-6), ..., z(k-96)]`` and targets ``z(k)`` (six steps ahead)."""
    start = N_LAGS * SPACING
    X = np.stack(
        [z[start - SPACING * (j + 1) : len(z) - SPACING * (j + 1)] for j in range(N_LAGS)], axis=1
    )
    return X, z[start:]


def run_one(method, X, y, Xte, yte, seed):
    est = RelevanceVectorRegressor(method=method, max_iter=200, tol=1e-5, random_state=seed)
    t0, w0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the noise floor on noise-free data
        est.fit(X, y)
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    mse = float(np.mean((est.predict(Xte) - yte) ** 2))
    ll = est.log_marginal_likelihood_curve_
    rel = np.diff(ll) / np.abs(ll[:-1])
    return {
        "mse": mse,
        "nrv": int(len(est.relevance_indices_) + np.isfinite(est.alpha_bias_)),
        "cpu": cpu,
        "wall": wall,
        "factor": est._factor_counts,
        "ll": est.log_marginal_likelihood_value_,
        "n_iter": est.n_iter_,
        "n_decrease": int(np.sum(rel < -1e-9)),
        "worst": float(rel.min()) if len(rel) else 0,
        "fallbacks": est.n_em_fallbacks_,
        "est": est,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--replot", action="store_true", help="rewrite the table and plots from the saved JSON"
    )
    args = parser.parse_args()
    raw = HERE / "results" / "ssem_mackey_glass.json"
    if args.replot:
        saved = json.loads(raw.read_text())
        rows = [(n, res) for n, res in saved["rows"]]
        args.quick, args.repeats = saved["quick"], saved["repeats_arg"]
        write(rows, saved["curves"], saved["repeats"], saved["var_y"], args, saved["stamp"])
        return
    sizes = [100, 200, 400, 800] if args.quick else [100, 200, 400, 800, 1200, 1600, 2400]
    repeats = args.repeats or (1 if args.quick else 3)
    z = mackey_glass(max(sizes) + N_TEST + N_LAGS * SPACING)
    X, y = embed(z)
    var_y = float(np.var(y))
    rows, curves = [], None
    for n in sizes:
        res = {"ssem": [], "batch_em": []}
        for r in range(repeats):
            perm = np.random.RandomState(1000 * n + r).permutation(len(y))
            tr, te = perm[:n], perm[n : n + N_TEST]
            for method in ("ssem", "batch_em"):
                out = run_one(method, X[tr], y[tr], X[te], y[te], seed=r)
                if n == 400 and r == 0:
                    curves = curves or {}
                    est = out["est"]
                    curves[method] = {
                        "cpu": est.cpu_time_curve_.tolist(),
                        "ll": est.log_marginal_likelihood_curve_.tolist(),
                        "nrv": est.n_relevance_curve_.tolist(),
                    }
                del out["est"]
                res[method].append(out)
                print(
                    f"n={n:5d} rep={r} {method:8s} cpu={out['cpu']:8.2f}s "
                    f"nrv={out['nrv']:4d} test mse={out['mse']:.3g} ll={out['ll']:.2f} "
                    f"batch steps={out['n_iter']} decreases={out['n_decrease']} "
                    f"(worst {out['worst']:.1e}) EM fallbacks={out['fallbacks']}",
                    flush=True,
                )
        rows.append((n, res))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    raw.parent.mkdir(exist_ok=True)
    raw.write_text(
        json.dumps(
            {
                "rows": rows,
                "curves": curves,
                "repeats": repeats,
                "var_y": var_y,
                "quick": args.quick,
                "repeats_arg": args.repeats,
                "stamp": stamp,
            },
            default=float,
        )
    )
    write(rows, curves, repeats, var_y, args, stamp)


NOTES = [
    (
        "Notes. The series is noise-free: the learned noise variance falls to ~3e-5 (var(t) = "
        "0.05) and the wide basis (variance 10 on inputs in [0.4, 1.3]^16) makes the basis "
        "functions nearly collinear, so the evidence favours weights of +-100s that cancel. "
        "The M-step keeps alpha_j >= 1e-12 * G_jj / s2 (skgpsparse.rvm._subspace_em.ALPHA_FLOOR) so that "
        "the E-step stays accurate; from N = 1200 this floor binds for many basis functions "
        "and the models keep hundreds of them (batch EM ~1700 of 2400). cond(D Sigma^-1 D) "
        "(D = A^-1/2) reaches ~3e13 from N = 1200 (measured on partition 0)."
    ),
    "",
    (
        "Before / after (2026-11-22). Before (02:24 UTC run): each SSEM step applied only the "
        "<= 4 largest alpha changes above 10% as rank-one updates (a partial M-step, "
        "MAX_RANK_ONE / ALPHA_RTOL). CPU SSEM / batch 4.63, 3.95, 2.30, 1.29, 0.77, 0.55, 0.65 "
        "at N = 100 ... 2400 (10.9 s vs 16.8 s CPU at 2400); E_te ratio 1.48, 1.43, 2.60, "
        "1.22, 1.96, 1.83, 1.25; RVs SSEM 9, 16, 27, 40, 67, 137, 623; log-lik SSEM 93.5, "
        "284.2, 944.3, 2412.2, 3724.1, 5172.3, 8257.6. After (the table above): every SSEM "
        "step is the paper's full step 4, every active alpha takes MacKay's value, applied as "
        "one rank-k update and one rank-k downdate; E_te ratio 1.45, 1.12, 1.20, 1.09, 1.87, "
        "1.30, 1.17 and a higher log likelihood at 6 of 7 sizes (closer to batch EM's), but "
        "CPU SSEM / batch 5.41, 4.97, 4.08, 2.43, 1.39, 1.26, 2.26: SSEM is now slower than "
        "batch EM at every size (40 s vs 21 s CPU at N = 2400, per-partition ratios 1.54, "
        "3.10, 2.26). For scale, the first implementation (00:52 UTC: full M-step and one "
        "LAPACK refactorisation per SSEM step) took 36.2 s vs 20.2 s at N = 2400. This run had "
        "a load of ~4 on the 2 cores (batch EM at 2400: 17.7-22.0 s here, 16.8 s before)."
    ),
    "",
    (
        "Where the time goes (cProfile of partition 1 at N = 2400, 59.6 s CPU unprofiled, M "
        "up to ~1050): 64% in the rank-k updates/downdates (4891 calls; on average ~16 alphas "
        "change per call, spread over the factor, the first changed row at a median 22% of M, "
        "so a call runs ~330 Python-level row steps of ~20 us each: numpy call overhead plus "
        "the O((M - j) k) matrix-vector and outer product; the blocked BLAS-3 path, used "
        "from 192 rows and 32 columns, ran in 97 calls), 22% in the E-step's diag(Sigma) "
        "(triangular inverse, O(M^3 / 3), the paper's E-step cost), 6% in posterior means. "
        "On one factor of size 600, a LAPACK refactorisation takes ~4 ms, a change of all 600 "
        "diagonal entries by the rank-k route ~30 ms (blocked) and ~115 ms (row loop): in "
        "CPython the rank-k route is the slower one, and its merit is the issue's 'no "
        "refactorisation per step'. SSEM's one refactorisation is the noise re-estimate "
        "(53 at N = 2400); a noise refactorisation puts the alphas held at their floor first, "
        "which moved the first changed row down and saved ~12% at N = 2400."
    ),
    "",
    (
        "Test error. SSEM's test error is 1.1-1.9 times batch EM's with half or fewer "
        "relevance vectors and a lower log likelihood. The full M-step closed part of the gap "
        "(N = 400: 2.60 -> 1.20, N = 2400: 1.25 -> 1.17) but not at N = 1200 (1.96 -> 1.87). "
        "What remains is SSEM itself: a basis function pruned in the sweep is never revisited "
        "(eq. 13), and the noise estimate lags during the sweep. Earlier trials with the old "
        "partial M-step (2% instead of 10% for the noise re-estimate: E_te ratios 1.22-1.96) "
        "gave no clear gain either. Log-likelihood decreases (above) appear from N = 800, "
        "all below 1e-5 relative, as batch EM's do (up to -2.3e-5 in this run): round-off at "
        "this conditioning. The incremental factor stays within ~1e-8 (relative, rows scaled "
        "by D) of a fresh Cholesky factor through the sweep (N = 1200, partition 0)."
    ),
]


def _median(res, key):
    return float(np.median([o[key] for o in res]))


def _ratio(s, b, key):
    """Median over partitions of the per-partition ratio SSEM / batch (same run, same data)."""
    return float(np.median([x[key] / y[key] for x, y in zip(s, b)]))


def write(rows, curves, repeats, var_y, args, stamp):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = [
        "# SSEM vs batch EM: RVM regression on Mackey-Glass (SSEM paper Figure 3, left)",
        "",
        (
            f"{stamp}; {machine()}; single-threaded BLAS (OPENBLAS_NUM_THREADS=1), nice 10, "
            "on a machine shared with other jobs; CPU = process time, wall = elapsed; "
            f"`python benchmarks/ssem_mackey_glass.py{' --quick' if args.quick else ''}"
            f"{f' --repeats {args.repeats}' if args.repeats else ''}`."
        ),
        "",
        (
            f"16 lags spaced 6, six steps ahead, Gaussian basis of variance 10, {N_TEST} test "
            f"cases, {repeats} random partitions per size (the paper: 10). Medians over "
            f"partitions. Test error is the mean squared error (target variance {var_y:.4f}). "
            "Both methods use MacKay's update (eq. 12) with the EM fallback, max 200 batch steps, "
            "tol 1e-5. SSEM and batch EM run one after the other on the same partition."
        ),
        "",
        (
            "| N train | test MSE SSEM | test MSE batch | RVs SSEM | RVs batch | CPU SSEM (s) | "
            "CPU batch (s) | wall SSEM (s) | wall batch (s) | E_te ratio | N_RV ratio | "
            "CPU ratio | log-lik SSEM | log-lik batch |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for n, res in rows:
        s, b = res["ssem"], res["batch_em"]
        re, rn, rt = _ratio(s, b, "mse"), _ratio(s, b, "nrv"), _ratio(s, b, "cpu")
        ratios.append((n, re, rn, rt))
        lines.append(
            f"| {n} | {_median(s, 'mse'):.3g} | {_median(b, 'mse'):.3g} | "
            f"{_median(s, 'nrv'):.0f} | {_median(b, 'nrv'):.0f} | {_median(s, 'cpu'):.2f} | "
            f"{_median(b, 'cpu'):.2f} | {_median(s, 'wall'):.2f} | {_median(b, 'wall'):.2f} | "
            f"{re:.2f} | {rn:.2f} | {rt:.2f} | {_median(s, 'll'):.1f} | {_median(b, 'll'):.1f} |"
        )
    lines += [
        "",
        (
            "Ratios are SSEM / batch EM (the paper's E_te^growth / E_te^batch etc.), the median "
            "of the per-partition ratios."
        ),
        "",
        (
            "How the factor of Sigma^-1 changed per fit (medians): SSEM appends one row per "
            "basis function; each sweep step applies the M-step's changes of every active alpha "
            "(Figure 1, step 4) as one rank-k update (the increases) and one rank-k downdate "
            "(the decreases) of the factor (skgpsparse.linalg.cholesky_update_rank_k / "
            "cholesky_downdate_rank_k), a decrease that would cancel its pivot as a delete + "
            "re-append, and prunes by Givens deletion; it refactorises only to re-estimate the "
            "noise (when eq. 12 moves it by more than 10% and the visited set has grown by 10% "
            "since the last time) and once per batch EM step after the sweep (twice when "
            "MacKay's step is redone with the EM update). Batch EM refactorises once per step."
        ),
        "",
        (
            "| N train | SSEM appends | alpha changes (rank-k columns) | rank-k calls | "
            "deletions | delete + append | SSEM refactorisations | SSEM batch steps | "
            "batch EM refactorisations | batch EM steps |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, res in rows:
        s, b = res["ssem"], res["batch_em"]

        def fc(rs, key):
            return int(np.median([o["factor"][key] for o in rs]))

        lines.append(
            f"| {n} | {fc(s, 'append')} | {fc(s, 'rank_one')} | {fc(s, 'rank_k')} | "
            f"{fc(s, 'delete')} | "
            f"{fc(s, 'move')} | {fc(s, 'refactor')} | {_median(s, 'n_iter'):.0f} | "
            f"{fc(b, 'refactor')} | {_median(b, 'n_iter'):.0f} |"
        )
    dec = [
        (
            n,
            sum(o["n_decrease"] for o in res["ssem"]),
            min(o["worst"] for o in res["ssem"]),
            sum(o["fallbacks"] for o in res["ssem"]),
        )
        for n, res in rows
    ]
    lines += [
        "",
        (
            "Monotonicity of SSEM's log marginal likelihood (EM steps with a relative decrease "
            "below -1e-9, summed over partitions; worst relative change; MacKay steps redone "
            "with the EM update):"
        ),
        "",
        "| N train | decreasing steps | worst relative change | EM fallbacks |",
        "|---|---|---|---|",
    ] + [f"| {n} | {k} | {w:.1e} | {f} |" for n, k, w, f in dec]
    lines += ["", *NOTES]
    out = HERE / "results" / "ssem_mackey_glass.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    r = np.array(ratios)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(r[:, 0], r[:, 1], "o-", label="E_te growth / E_te batch")
    ax.plot(r[:, 0], r[:, 3], "s-", label="T_cpu growth / T_cpu batch")
    ax.plot(r[:, 0], r[:, 2], "^-", label="N_RV growth / N_RV batch")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("Number of training examples")
    ax.set_title("Mackey-Glass: SSEM relative to batch EM")
    ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "ssem_mackey_glass.png", dpi=120)
    if curves:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for method, c in curves.items():
            label = "SSEM" if method == "ssem" else "standard (batch) EM"
            axes[0].plot(c["cpu"], c["ll"], label=label)
            axes[1].plot(c["cpu"], c["nrv"], label=label)
        axes[0].set_ylim(bottom=min(0.0, min(curves["ssem"]["ll"])))
        axes[0].set(
            xlabel="CPU time (s)",
            ylabel="log marginal likelihood",
            title="Likelihood vs CPU time (N = 400)",
        )
        axes[1].set(
            xlabel="CPU time (s)",
            ylabel="number of RVs",
            title="Number of RVs vs CPU time (N = 400)",
        )
        for a in axes:
            a.legend()
        fig.tight_layout()
        fig.savefig(HERE / "ssem_mackey_glass_curves.png", dpi=120)


if __name__ == "__main__":
    main()
