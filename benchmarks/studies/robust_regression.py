"""Robust regression with the Student-t likelihood (issue 47's robust goal), measured.

A regression set (kin40k, pol, pumadyn32nm), standardised inputs and targets, a random training
subset of ``n`` rows; in the corrupted copy 10 % of the training targets are shifted by 3-10
standard deviations (random sign); the test rows (3,000 others) stay clean. Fitted on the same
rows:

- ``gaussian``: the Gaussian default ``SparseGPRegressor()``;
- ``student_t (default)``: ``SparseGPRegressor(likelihood="student_t")`` as on main (optional,
  ``--latent-default``: the latent model's own selection and learning, scale fixed at the
  targets' robust spread);
- ``robust EP``: the recipe of :func:`robust_fit`: the Gaussian default, its residuals' robust
  scale ``s_r`` (1.4826 MAD), the Gaussian default refitted on the rows within ``3 s_r`` of
  the median residual (a trimmed fit: its basis and kernel are not pulled by the gross errors),
  then EP with ``StudentT(dof=4)`` over every row under the DTC prior of the trimmed fit's
  basis, with the kernel's ``theta``, the bias and the likelihood's scale learned by the EP
  evidence on a subsample of 2,000 rows
  (:func:`skgpsparse.inference._student_t_fit.fit_student_t`; negative site precisions kept,
  :mod:`skgpsparse.inference._ep_signed`).

Scores on the clean test rows: NMSE (mean squared error over the test targets' variance) and
NLPD (minus the mean log predictive density of the test targets: the Gaussian's with its noise,
the Student-t's predictive ``int t(y; f + b, s) N(f; m_*, v_*) df`` with the projected
process's latent variance and with the DTC model's own); fit CPU seconds (process
time). The goal: corrupted NMSE within 15 % of the Gaussian default on the clean targets, clean
NMSE within 5 % of it, CPU at most 3x the Gaussian default's.

Usage::

    python benchmarks/studies/robust_regression.py                     # kin40k and pol, 2,000 and 8,000 rows, 2 seeds
    python benchmarks/studies/robust_regression.py --quick             # kin40k, 2,000 rows, 1 seed

Writes ``benchmarks/studies/results/robust_regression.md``.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.linalg import solve_triangular

from skgpsparse import SparseGPRegressor
from skgpsparse.inference._sparse_prior import basis_cholesky
from skgpsparse.inference._student_t_fit import fit_student_t, robust_scale

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("/work/shared/datasets")
# Rows further than this many robust scales from the median residual leave the trimmed fit.
TRIM = 3.0


def load(name, n_train, seed, n_test=3000):
    """Standardised training and test rows, and the training targets with 10 % gross errors."""
    d = np.load(DATA / f"{name}.npz")
    X, y = d["X"].astype(float), d["y"].astype(float)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(y.size)
    train, test = idx[:n_train], idx[n_train:n_train + n_test]
    mean, sd = X[train].mean(0), X[train].std(0)
    sd[sd == 0] = 1.0
    X = (X - mean) / sd
    y = (y - y[train].mean()) / y[train].std()
    bad = rng.random(n_train) < 0.1
    shift = rng.choice([-1.0, 1.0], n_train) * rng.uniform(3.0, 10.0, n_train)
    return X[train], y[train], y[train] + bad * shift, X[test], y[test]


class RobustEP:
    """The fitted recipe: predictions ``k_*u L^-T mean_w + b`` and the Student-t predictive."""

    def __init__(self, fit, basis):
        self.fit, self.basis = fit, basis
        L = basis_cholesky(fit.kernel, basis)
        post = fit.posterior
        self.L, self.L_B, self.mean_w = L, post.L_B, post.mean_w

    def latent(self, X, projected=True):
        """Latent mean (bias included) and variance: the projected process's
        ``k_** - Q_** + |L_B^-1 v_*|^2`` (GPML eq. (8.27), EP's sites as the noise) or, with
        ``projected=False``, the DTC model's own ``|L_B^-1 v_*|^2`` (``f = V^T w``)."""
        V = solve_triangular(self.L, self.fit.kernel(self.basis, X), lower=True)
        mean = V.T @ self.fit.posterior.mean_w + self.fit.bias
        U = solve_triangular(self.L_B, V, lower=True)
        var = np.sum(U * U, 0)
        if projected:
            var += self.fit.kernel.diag(X) - np.sum(V * V, 0)
        return mean, np.maximum(var, 0.0)

    def predict(self, X):
        return self.latent(X)[0]

    def nlpd(self, X, y, projected=True):
        mean, var = self.latent(X, projected)
        return -float(np.mean(self.fit.likelihood.log_predictive(y, mean, var)))


def robust_fit(X, y, random_state=0):
    """Gaussian default, trimmed Gaussian refit, Student-t EP learned (module docstring)."""
    first = SparseGPRegressor(random_state=random_state).fit(X, y)
    r = y - first.predict(X)
    keep = np.abs(r - np.median(r)) <= TRIM * robust_scale(r)
    trimmed = first if keep.all() else SparseGPRegressor(random_state=random_state).fit(
        X[keep], y[keep])
    fit = fit_student_t(trimmed.kernel_, X, y, trimmed.basis_vectors_,
                        scale=robust_scale(y - trimmed.predict(X)),
                        bias=float(np.mean(y[keep])), random_state=random_state)
    return RobustEP(fit, trimmed.basis_vectors_), int((~keep).sum())


def nmse(prediction, y):
    return float(np.mean((prediction - y) ** 2) / np.var(y))


def timed(fit):
    tic = time.process_time()
    out = fit()
    return out, time.process_time() - tic


def run(datasets, sizes, seeds, latent_default):
    records = []
    for name in datasets:
        for n in sizes:
            for seed in seeds:
                X, y_clean, y_bad, X_test, y_test = load(name, n, seed)
                for targets, y in (("clean", y_clean), ("corrupt", y_bad)):
                    fits = {}
                    g, cpu = timed(lambda: SparseGPRegressor(random_state=seed).fit(X, y))
                    nlpd = -float(np.mean(g.log_predictive_density(X_test, y_test)))
                    fits["gaussian"] = (nmse(g.predict(X_test), y_test), nlpd, nlpd, cpu, "")
                    if latent_default:
                        t, cpu = timed(lambda: SparseGPRegressor(
                            likelihood="student_t", random_state=seed).fit(X, y))
                        nlpd = -float(np.mean(t.log_predictive_density(X_test, y_test)))
                        fits["student_t (default)"] = (nmse(t.predict(X_test), y_test), nlpd,
                                                       nlpd, cpu, "")
                    (model, dropped), cpu = timed(lambda: robust_fit(X, y, seed))
                    f = model.fit
                    fits["robust EP"] = (nmse(model.predict(X_test), y_test),
                                         model.nlpd(X_test, y_test),
                                         model.nlpd(X_test, y_test, projected=False), cpu,
                                         f"trimmed {dropped}, scale {f.likelihood.scale:.3g}, "
                                         f"{f.kernel}, {f.n_evaluations} evaluations, "
                                         f"EP converged {f.converged}")
                    for method, (err, nlpd, nlpd_dtc, cpu, note) in fits.items():
                        records.append(dict(data=name, n=n, seed=seed, targets=targets,
                                            method=method, nmse=err, nlpd=nlpd,
                                            nlpd_dtc=nlpd_dtc, cpu=cpu, note=note))
                        print(f"{name} n={n} seed={seed} {targets:7s} {method:20s} NMSE {err:.4f} "
                              f"NLPD {nlpd:.4f} / {nlpd_dtc:.4f} CPU {cpu:.1f} s {note}",
                              flush=True)
    return records


def report(records, argv):
    lines = [
        "# Robust regression: Student-t EP against the Gaussian default (issue 47)",
        "",
        f"`python benchmarks/studies/robust_regression.py {' '.join(argv)}`. "
        "Standardised inputs and targets; 10 % of the training targets shifted by 3-10 sd in "
        "the corrupted copy; 3,000 clean test rows. NMSE and NLPD on the test rows; CPU is the "
        "fit's process time; `vs clean gaussian` is NMSE over the Gaussian default's NMSE on the "
        "clean targets of the same split (goal: corrupt <= 1.15, clean <= 1.05); `CPU x` is over "
        "the Gaussian default's CPU on the same targets (goal <= 3).",
        "",
        "NLPD: the projected-process latent variance (GPML eq. (8.27), the Gaussian "
        "regressor's convention) / the DTC model's own (`|L_B^-1 v_*|^2`, the model the "
        "Student-t's hyperparameters were learned for; the Gaussian's column repeats its one "
        "NLPD). The DTC evidence learns a large amplitude (k(x, x) = 5-11), whose "
        "`k_** - Q_**` dominates the projected-process variance.",
        "",
        "| data | n | seed | targets | method | NMSE | vs clean gaussian | NLPD (PP) | NLPD (DTC) "
        "| CPU s | CPU x | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = {(r["data"], r["n"], r["seed"]): r["nmse"] for r in records
            if r["method"] == "gaussian" and r["targets"] == "clean"}
    cpu = {(r["data"], r["n"], r["seed"], r["targets"]): r["cpu"] for r in records
           if r["method"] == "gaussian"}
    for r in records:
        key = (r["data"], r["n"], r["seed"])
        lines.append(
            f"| {r['data']} | {r['n']} | {r['seed']} | {r['targets']} | {r['method']} | "
            f"{r['nmse']:.4f} | {r['nmse'] / base[key]:.3f} | {r['nlpd']:.4f} | "
            f"{r['nlpd_dtc']:.4f} | {r['cpu']:.1f} | "
            f"{r['cpu'] / cpu[key + (r['targets'],)]:.2f} | {r['note']} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "robust_regression.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    import sys

    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", default=["kin40k", "pol"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[2000, 8000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--latent-default", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.sizes, args.seeds = ["kin40k"], [2000], [0]
    warnings.simplefilter("ignore")
    report(run(args.datasets, args.sizes, args.seeds, args.latent_default), argv)


if __name__ == "__main__":
    main()
