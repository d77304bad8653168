"""Student-t regression by EM on the Gaussian scale mixture, on the Gaussian regressor (issue 47).

The Student-t noise written as a scale mixture (Tipping & Lawrence 2005):
``y_i ~ N(f_i, s2 / lambda_i)``, ``lambda_i ~ Gamma(nu / 2, nu / 2)``, ``nu = 4`` fixed. EM
alternates

- E-step: with the current model's latent mean ``m_i`` and variance ``v_i`` at each training row
  (``predict(X, return_std=True)``: the latent standard deviation, no noise in it),
  ``r2_i = (y_i - m_i)^2 + v_i`` and ``E[lambda_i] = (nu + 1) / (nu + r2_i / s2)`` (the
  Gamma posterior ``Gamma((nu + 1) / 2, (nu + r2_i / s2) / 2)``'s mean);
- M-step: the Gaussian regressor refitted with per-row noise ``a_i = 1 / E[lambda_i]``.

Started from the Gaussian default ``SparseGPRegressor()``. Variants of the M-step:

- ``em_full``: every M-step a full fit ``SparseGPRegressor(noise_variance=a)`` (kernel, common
  noise scale ``s2`` and basis learned again; with a noise array there is no basis refinement and
  no leave-one-out calibration, see the estimator's docstring);
- ``em_fix1``: the first M-step as ``em_full``; later ones keep its ``kernel_``
  (``optimizer=None``, the basis selected again) and update ``s2`` in closed form,
  ``s2 = mean(E[lambda_i] r2_i)`` (the M-step of the scale), noise ``s2 a_i`` fixed;
- ``em_basis``: every M-step keeps the Gaussian default's kernel and its refined basis (the
  basis vectors appended as rows of no weight and ``warm_start=True``, ``optimizer=None``:
  :func:`with_basis_rows`), ``s2`` in closed form: only the weights on the basis move;
- ``em_warm``: every M-step warm-started from the previous one (``warm_start=True``): the
  refined basis kept as in ``em_basis``, the kernel and ``s2`` learned again from the
  previous values;
- ``em_trim``: the Gaussian default refitted on the rows within ``TRIM`` (3) robust scales of
  its fit (the trimmed fit of ``robust_regression.py``: refinement and calibration included,
  its kernel and basis not pulled by the gross errors; iteration 0 in the table), then
  ``em_basis`` on every row from that fit's kernel, basis and noise variance.

- ``em_rows``: as ``em_full`` (every M-step a full fit with the noise array), started from the
  squared robust scale; measured after a noise array got the scalar default's basis
  refinement and leave-one-out calibration of its common scale (issue 47, per-row noise);
- ``em_rows_warm``: the first M-step as ``em_rows``, later ones warm-started from the previous
  fit (``warm_start=True``: its kernel and noise scale the start, no subset start);
- ``em_rows_mad``: the M-steps of ``em_rows``, but every E-step's scale is the squared robust
  scale of the current fit's training residuals instead of the learned ``s2`` (iteratively
  reweighted least squares with Student-t weights and a robust scale: the sparse model's
  approximation error, which the learned noise leaves out, is then not taken for outliers);
  its records' ``s`` and Student-t NLPD are at that robust scale.

The control ``rows_ones`` is ``rows_noise`` after that change (the M-step's model with every
weight 1, now the scalar default's model).

``em_full`` and ``em_fix1`` start (the first E-step) from the Gaussian default's noise
variance, which gross errors inflate; the others from the squared robust scale of its
training residuals (1.4826 times their median absolute deviation). The row
``rows_noise`` is the M-step's model with every weight 1 (``noise_variance=np.ones(n)``): the
Gaussian regressor without the refinement and the calibration that a noise array turns off.

The weights have settled when the mean absolute change of the ``E[lambda_i]`` (they lie in
``(0, (nu + 1) / nu]``) in an iteration is at most ``SETTLE`` (the largest single change is
recorded too), at most ``MAX_ITER`` M-steps. The splits, the corruption (10 % of the
training targets shifted by 3-10 standard deviations) and NMSE are those of
``robust_default.py`` (imported). NLPD on the clean test rows is the Student-t predictive
``int t_nu(y; f, s) N(f; m_*, v_*) df`` (Gauss-Hermite, 40 nodes) with the learned ``s2``; the
Gaussian default's is its own (``log_predictive_density``). CPU is the process time of the
whole fit, the first Gaussian fit and every E- and M-step included, over the Gaussian
default's on the same targets.

Usage::

    python benchmarks/studies/robust_em.py --datasets kin40k pol --n 8000 --seeds 0 1
    python benchmarks/studies/robust_em.py --variants em_trim     # one variant (and the Gaussian)
    python benchmarks/studies/robust_em.py --variants rows_ones em_rows em_rows_warm --max-iter 3
    python benchmarks/studies/robust_em.py --report     # the table from the records

Records go to ``results/robust_em.jsonl``; the table to ``results/robust_em.md``.
"""

import argparse
import copy
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.report import write_keeping_findings
from robust_default import nmse
from robust_regression import TRIM, load

from skgpsparse import SparseGPRegressor

RESULTS = Path(__file__).resolve().parent / "results"
RECORDS = RESULTS / "robust_em.jsonl"
NU = 4.0
MAX_ITER = 5
SETTLE = 0.01
VARIANTS = ("em_full", "em_fix1", "em_basis", "em_warm", "em_trim", "em_rows", "em_rows_warm",
            "em_rows_mad")
CONTROLS = ("rows_noise", "rows_ones")
PAD = 1e8  # the noise of the appended basis rows (with_basis_rows)


def noise_scale(model):
    """The common scale ``s2`` of a fit's noise (the scalar noise, or the array's scale)."""
    if np.ndim(model.noise_variance_) == 0:
        return float(model.noise_variance_)
    return float(model._noise_scale)


def e_step(model, X, y, s2):
    """``E[lambda_i]`` and ``r2_i`` under the model's latent marginals at the training rows."""
    m, sd = model.predict(X, return_std=True)
    r2 = (y - m) ** 2 + sd**2
    return (NU + 1.0) / (NU + r2 / s2), r2


def gaussian_nlpd(model, X, y, s2):
    """Minus the mean log of ``N(y; m, v + s2)`` (a fit with a noise array has no query noise)."""
    m, sd = model.predict(X, return_std=True)
    var = sd**2 + s2
    return float(np.mean(0.5 * (np.log(2.0 * np.pi * var) + (y - m) ** 2 / var)))


def student_t_nlpd(model, X, y, s2, n_nodes=40):
    """Minus the mean log of ``int t_nu(y; f, sqrt(s2)) N(f; m, v) df`` (Gauss-Hermite)."""
    m, sd = model.predict(X, return_std=True)
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)  # weight exp(-x^2 / 2)
    f = m[:, None] + sd[:, None] * x[None, :]
    logp = stats.t.logpdf(y[:, None], NU, loc=f, scale=np.sqrt(s2))
    log_w = np.log(w / np.sqrt(2.0 * np.pi))
    return -float(np.mean(np.logaddexp.reduce(logp + log_w[None, :], axis=1)))


def with_basis_rows(g, X, y):
    """``X`` and ``y`` with the Gaussian default's (refined) basis vectors appended as rows of
    noise ``PAD`` (no weight in the fit): a warm-started fit on them finds its basis among
    the rows and keeps it (``warm_start`` seeds the selection with previous basis vectors
    that are rows of ``X``), where a fit with per-row noise would not refine one."""
    Z = g.basis_vectors_
    return np.vstack([X, Z]), np.concatenate([y, g.predict(Z)]), np.full(Z.shape[0], PAD)


def m_step(variant, it, data, lam, r2, previous, seed, kernels):
    """One M-step's model and its common noise scale ``s2``."""
    X, y, X_aug, y_aug, pad = data
    if variant in ("em_full", "em_rows", "em_rows_mad") or (
            variant in ("em_fix1", "em_rows_warm") and it == 1):
        model = SparseGPRegressor(noise_variance=1.0 / lam, random_state=seed).fit(X, y)
        return model, noise_scale(model)
    if variant == "em_fix1":  # the first M-step's kernel, a new greedy basis
        s2 = float(np.mean(lam * r2))  # closed-form M-step of the scale
        model = SparseGPRegressor(kernel=kernels["first"], optimizer=None,
                                  noise_variance=s2 / lam, noise_variance_bounds="fixed",
                                  random_state=seed).fit(X, y)
        return model, s2
    model = copy.deepcopy(previous)
    if variant == "em_rows_warm":  # from the previous fit's kernel and noise scale
        model.set_params(warm_start=True, noise_variance=1.0 / lam)
        return model.fit(X, y), noise_scale(model)
    if variant in ("em_basis", "em_trim"):  # the start's kernel and basis: only the weights move
        s2 = float(np.mean(lam * r2))
        model.set_params(warm_start=True, optimizer=None, noise_variance_bounds="fixed",
                         noise_variance=np.concatenate([s2 / lam, pad]))
        return model.fit(X_aug, y_aug), s2
    # em_warm: the basis kept, the kernel and the scale learned from the previous fit's
    model.set_params(warm_start=True, noise_variance=np.concatenate([1.0 / lam, pad]))
    model.fit(X_aug, y_aug)
    return model, noise_scale(model)


def trimmed_start(X, y, lam, r2, s2, seed):
    """``em_trim``'s start: the Gaussian default refitted (refinement and calibration
    included) on the rows within ``TRIM`` robust scales of the first fit (residual
    ``|y_i - m_i| <= TRIM s``, ``s2`` the robust noise), then the E-step of every row under it
    with its own noise variance. Returns the model, ``s2``, ``E[lambda]``, ``r2`` and the
    M-step's data (its basis appended as rows of no weight), and the share of rows left out."""
    residual2 = r2  # r2 includes v_i, small beside a gross error
    keep = residual2 <= TRIM**2 * s2
    t = SparseGPRegressor(random_state=seed).fit(X[keep], y[keep])
    s2_t = noise_scale(t)
    lam, r2 = e_step(t, X, y, s2_t)
    X_aug, y_aug, pad = with_basis_rows(t, X, y)
    return t, s2_t, lam, r2, (X, y, X_aug, y_aug, pad), float(np.mean(~keep))


def robust_noise(g, X, y):
    """The squared robust scale (1.4826 MAD) of the Gaussian default's training residuals."""
    residual = y - g.predict(X)
    return (1.4826 * np.median(np.abs(residual - np.median(residual)))) ** 2


def run(datasets, n, seeds, variants, max_iter=MAX_ITER):
    RESULTS.mkdir(exist_ok=True)
    for name in datasets:
        for seed in seeds:
            X, y_clean, y_bad, X_test, y_test = load(name, n, seed)
            for targets, y in (("clean", y_clean), ("corrupt", y_bad)):
                base = {"data": name, "n": n, "seed": seed, "targets": targets}
                tic = time.process_time()
                g = SparseGPRegressor(random_state=seed).fit(X, y)
                cpu_g = time.process_time() - tic
                s2_g = noise_scale(g)
                write(dict(base, method="gaussian", it=0, settled=True,
                           nmse=nmse(g.predict(X_test), y_test),
                           nlpd=-float(np.mean(g.log_predictive_density(X_test, y_test))),
                           cpu=cpu_g, cpu_g=cpu_g, s2=s2_g, kernel=str(g.kernel_)))
                for control in [c for c in CONTROLS if c in variants]:
                    # the M-step's model with every weight 1 (rows_noise: run before the
                    # noise array had the refinement and the calibration)
                    tic = time.process_time()
                    ones = SparseGPRegressor(noise_variance=np.ones(n),
                                             random_state=seed).fit(X, y)
                    cpu = time.process_time() - tic
                    write(dict(base, method=control, it=0, settled=True,
                               nmse=nmse(ones.predict(X_test), y_test),
                               nlpd=gaussian_nlpd(ones, X_test, y_test, noise_scale(ones)),
                               cpu=cpu, cpu_g=cpu_g, s2=noise_scale(ones),
                               kernel=str(ones.kernel_)))
                tic = time.process_time()
                X_aug, y_aug, pad = with_basis_rows(g, X, y)
                data = (X, y, X_aug, y_aug, pad)
                cpu_aug = time.process_time() - tic
                kernels = {}
                shared = {}  # em_fix1's first M-step is em_full's, em_rows_warm's em_rows's
                for variant in [v for v in VARIANTS if v in variants]:
                    tic = time.process_time()
                    s2 = s2_g if variant in ("em_full", "em_fix1") else robust_noise(g, X, y)
                    lam, r2 = e_step(g, X, y, s2)
                    model, run_data = g, data
                    if variant == "em_trim":
                        model, s2, lam, r2, run_data, trimmed = trimmed_start(X, y, lam, r2,
                                                                              s2, seed)
                    cpu = cpu_g + cpu_aug + time.process_time() - tic
                    if variant == "em_trim":
                        write(dict(base, method=variant, it=0, settled=False,
                                   nmse=nmse(model.predict(X_test), y_test),
                                   nlpd=-float(np.mean(model.log_predictive_density(X_test,
                                                                                    y_test))),
                                   cpu=cpu, cpu_g=cpu_g, s2=s2, trimmed=trimmed,
                                   low_weight=float(np.mean(lam < 0.5)),
                                   kernel=str(model.kernel_)))
                    for it in range(1, max_iter + 1):
                        first = {"em_fix1": "em_full", "em_rows_warm": "em_rows",
                                 "em_rows_mad": "em_rows"}
                        if it == 1 and first.get(variant) in shared:
                            model, s2, cpu_m = shared[first[variant]]
                        else:
                            tic = time.process_time()
                            model, s2 = m_step(variant, it, run_data, lam, r2, model, seed,
                                               kernels)
                            cpu_m = time.process_time() - tic
                            if variant in ("em_full", "em_rows") and it == 1:
                                shared[variant] = (model, s2, cpu_m)
                            if variant == "em_full" and it == 1:
                                kernels["first"] = model.kernel_
                        tic = time.process_time()
                        if variant == "em_rows_mad":  # the residuals' robust scale, not s2
                            s2 = robust_noise(model, X, y)
                        new_lam, r2 = e_step(model, X, y, s2)
                        cpu += cpu_m + time.process_time() - tic
                        change = np.abs(new_lam - lam)
                        moved, moved_mean = float(np.max(change)), float(np.mean(change))
                        lam = new_lam
                        settled = moved_mean <= SETTLE
                        write(dict(base, method=variant, it=it, settled=settled, moved=moved,
                                   moved_mean=moved_mean,
                                   nmse=nmse(model.predict(X_test), y_test),
                                   nlpd=student_t_nlpd(model, X_test, y_test, s2),
                                   cpu=cpu, cpu_g=cpu_g, s2=s2,
                                   low_weight=float(np.mean(lam < 0.5)),
                                   kernel=str(model.kernel_)))
                        if settled:
                            break


def write(record):
    print(json.dumps(record), flush=True)
    with RECORDS.open("a") as out:
        out.write(json.dumps(record) + "\n")


def report():
    records = {}
    for line in RECORDS.read_text().splitlines():
        r = json.loads(line)
        records[(r["data"], r["n"], r["seed"], r["targets"], r["method"], r["it"])] = r
    rows = list(records.values())
    rows.sort(key=lambda r: (r["data"], r["n"], r["seed"], r["targets"],
                             (("gaussian",) + CONTROLS + VARIANTS).index(r["method"]),
                             r["it"]))
    base = {(r["data"], r["n"], r["seed"]): r["nmse"] for r in rows
            if r["method"] == "gaussian" and r["targets"] == "clean"}
    lines = [
        "# Student-t by EM on the Gaussian regressor's per-row noise (issue 47)",
        "",
        ("`python benchmarks/studies/robust_em.py` (module docstring: the variants, the E- and "
        "M-steps). NMSE and NLPD on 3,000 clean test rows (NLPD: the Student-t predictive, "
        "nu = 4, scale the learned `s`, for the EM rows; the Gaussian's own for `gaussian`, "
        "`rows_noise`, `rows_ones` and `em_trim`'s iteration 0, the trimmed Gaussian fit; "
        "`rows_ones` and `em_rows*` were run after a noise array got the basis refinement and "
        "the leave-one-out calibration, the other rows before); "
        "`vs clean gaussian` is NMSE over the Gaussian default's on the clean targets of the "
        "same split (goals: corrupt <= 1.15, clean <= 1.05); `CPU x` is the whole fit's "
        "process time (first Gaussian fit and every E- and M-step up to this iteration) over "
        "the Gaussian default's on the same targets (goal <= 3); `moved` is the mean / largest "
        "change of the weights E[lambda_i] in the iteration (settled at mean <= 0.01); "
        "`low w` the share of training rows with E[lambda_i] < 0.5 (for `em_trim`'s trimmed "
        "fit also the share of rows it left out); `s` the noise scale sqrt(s2) in "
        "standardised target units. BLAS on one thread (OMP/OPENBLAS_NUM_THREADS=1); two "
        "runs side by side on a machine shared with other jobs; each row's `CPU x` is over "
        "the Gaussian default's CPU measured in the same run (the `gaussian` rows show the "
        "last run's)."),
        "",
        ("| data | seed | targets | method | iter | NMSE | vs clean gaussian | NLPD | CPU s | "
        "CPU x | moved | low w | s | kernel |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        key = (r["data"], r["n"], r["seed"])
        ratio = r["nmse"] / base[key] if key in base else float("nan")
        moved = f"{r['moved_mean']:.4f} / {r['moved']:.3f}" if "moved" in r else ""
        low = f"{r['low_weight']:.3f}" if "low_weight" in r else ""
        low += f" (trimmed {r['trimmed']:.3f})" if "trimmed" in r else ""
        lines.append(
            f"| {r['data']} | {r['seed']} | {r['targets']} | {r['method']} | {r['it']} | "
            f"{r['nmse']:.4f} | {ratio:.3f} | {r['nlpd']:.4f} | {r['cpu']:.1f} | "
            f"{r['cpu'] / r['cpu_g']:.2f} | {moved} | {low} | {np.sqrt(r['s2']):.3g} | "
            f"{r['kernel']} |"
        )
    # per split: each variant's first and last iteration (settled or MAX_ITER), and
    # em_trim's trimmed fit (iteration 0)
    stages = {}
    for r in rows:
        key = (r["data"], r["n"], r["seed"], r["targets"], r["method"])
        stages.setdefault(key, {})[r["it"]] = r
    summary = []
    for method in VARIANTS:
        for stage in ("trimmed fit", "first", "last"):
            if stage == "trimmed fit" and method != "em_trim":
                continue
            for targets in ("clean", "corrupt"):
                t = []
                for key, its in stages.items():
                    if key[4] != method or key[3] != targets or key[:3] not in base:
                        continue
                    done = [i for i in its if i > 0]
                    if stage == "trimmed fit" and 0 in its:
                        t.append(its[0])
                    elif stage == "first" and done:
                        t.append(its[min(done)])
                    elif stage == "last" and done:
                        t.append(its[max(done)])
                if not t:
                    continue
                ratios = [r["nmse"] / base[(r["data"], r["n"], r["seed"])] for r in t]
                cpus = [r["cpu"] / r["cpu_g"] for r in t]
                its = [r["it"] for r in t]
                n_settled = sum(r["settled"] for r in t)
                settled = (f"; iterations {min(its)}-{max(its)} ({n_settled} of {len(t)} "
                           "settled)" if stage == "last" else "")
                summary.append(
                    f"- {method}, {stage}, {targets}: NMSE over the clean Gaussian's, median "
                    f"{np.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); "
                    f"CPU over the Gaussian's, median {np.median(cpus):.2f} (range "
                    f"{min(cpus):.2f}-{max(cpus):.2f}){settled}; {len(t)} splits.")
    lines += ["", "## Summary (medians over the splits)", ""]
    lines += summary
    write_keeping_findings(RESULTS / "robust_em.md", "\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["kin40k", "pol"])
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--variants", nargs="+", default=CONTROLS + VARIANTS,
                        help="the controls (rows_noise, rows_ones) and the EM variants to run")
    parser.add_argument("--max-iter", type=int, default=MAX_ITER,
                        help="largest number of M-steps of each variant")
    parser.add_argument("--report", action="store_true", help="only write the table")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if not args.report:
        run(args.datasets, args.n, args.seeds, args.variants, args.max_iter)
    report()


if __name__ == "__main__":
    main()
