"""A hard-trimmed Gaussian refit by leave-one-out residuals, with zero sample weights (issue 47).

The Gaussian default ``SparseGPRegressor()`` is fitted; each training row's leave-one-out
(LOO) residual under that fit is standardised by the residuals' robust scale (1.4826 times
their median absolute deviation, about their median); rows beyond ``c`` robust scales are
flagged and the model refitted with ``sample_weight`` 0 on them (a weight of zero removes the
row; the refit keeps the basis refinement and the LOO noise calibration, which zero weights
turned off before the per-row noise work). Variants, for each threshold ``c`` in 3, 4, 5:

- ``trim{c}``: the refit from scratch (the default's start, the exact GP on a random subset);
- ``trim{c}_warm``: the refit warm-started from the first fit (``warm_start=True``: its kernel
  and noise the start, no subset start);
- ``trim{c}_2``: one more pass after ``trim{c}``: the LOO residuals of every row under the
  refit (a flagged row is not in it, its residual is the plain one), flagged again with
  their robust scale and ``c``, and the default refitted from scratch with the new zero
  weights (the first refit kept when the flags do not change).

The LOO residuals are the projected-process model's, ``y ~ N(0, Q_ff + s2 I)`` (GPML eqs.
(5.10)-(5.12), as ``skgpsparse/regression/_noise_loo.py`` uses them for the noise
calibration): with ``V = L^-1 K_uf`` (``L`` the factor of the fit's jittered ``K_uu``), ``R``
the factor of ``V V^T + s2 I`` and ``W = R^-1 V``, ``C^-1 = (I - W^T W) / s2``, so

    r_i = y_i - mu_-i = [C^-1 y]_i / [C^-1]_ii = (y_i - m_i) / (1 - |w_i|^2),

``m_i`` the fitted posterior mean at row ``i`` and ``|w_i|^2`` its leverage. They are read from
the fitted model's ``L``, ``R`` and ``V y`` (the statistics ``partial_fit`` updates): one kernel
block ``K(X, X_u)`` and two triangular solves, O(n p^2), no refit per row.
:func:`check_loo` holds them to a dense ``C^-1`` on a small fit.

The splits, the corruption (10 % of the training targets shifted by 3-10 standard deviations,
random sign) and NMSE are ``robust_regression.py``'s (imported, as ``robust_em.py`` does).
Recorded per fit: NMSE and NLPD (the Gaussian's own ``log_predictive_density``) on the 3,000
clean test rows; the whole fit's CPU (process time: the first fit, the LOO residuals, every
refit) over the Gaussian default's on the same targets; the share of training rows flagged
and, on corrupted targets, the recall (corrupted rows flagged over corrupted rows) and the
precision (corrupted rows among those flagged).

Usage (BLAS on one thread: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``)::

    python benchmarks/studies/robust_trim.py --datasets kin40k pol --n 8000 --seeds 0 1
    python benchmarks/studies/robust_trim.py --datasets pumadyn32nm --seeds 0 --c 4
    python benchmarks/studies/robust_trim.py --check     # the LOO residuals against dense
    python benchmarks/studies/robust_trim.py --report    # the table from the records

Records go to ``results/robust_trim.jsonl``; the table to ``results/robust_trim.md``.
"""

import argparse
import copy
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.linalg import solve_triangular

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robust_default import nmse
from robust_regression import load

from skgpsparse import SparseGPRegressor

RESULTS = Path(__file__).resolve().parent / "results"
RECORDS = RESULTS / "robust_trim.jsonl"
THRESHOLDS = (3.0, 4.0, 5.0)
# The gate of the derived rows gate{c} (report only): refit when more than this share of the
# rows is flagged, else keep the first fit. Chosen after the kin40k and pol runs (clean
# targets flag 0.5-2.3 % at c = 5, 10 % corrupted ones 10-11 %), checked on a third set.
GATE = 0.05
MAD_SCALE = 1.4826  # the normal's standard deviation over its median absolute deviation


def loo_residuals(model, X, y, weight=None):
    """Each training row's leave-one-out residual ``y_i - mu_-i`` under a fitted Gaussian
    default (module docstring). ``weight`` the fit's sample weights (0 or 1): a row of weight
    0 is not in the fit, its residual is the plain ``y_i - m_i``."""
    stats = model._stream  # L (K_uu + jitter), R (V V^T + s2 I), V y of the fitted rows
    K_uf = model.kernel_(model.basis_vectors_, X)
    V = solve_triangular(stats.L, K_uf, lower=True, check_finite=False)
    W = solve_triangular(stats.R, V, lower=True, check_finite=False)
    beta = solve_triangular(stats.R, stats.Vy, lower=True, check_finite=False)
    y_fit = (y - model._y_train_mean) / model._y_train_std
    mean = W.T @ beta  # m_i = V_i^T (V V^T + s2 I)^-1 V y
    leverage = np.sum(W * W, axis=0)  # |w_i|^2 = 1 - s2 [C^-1]_ii
    if weight is not None:
        leverage = np.where(weight > 0, leverage, 0.0)
    return (y_fit - mean) / np.maximum(1.0 - leverage, 1e-12) * model._y_train_std


def noise_scale(model):
    """The fit's noise variance ``s2`` (with sample weights, a unit weight's)."""
    return float(getattr(model, "_noise_scale", model.noise_variance_))


def flag(residuals, c):
    """Rows whose residual lies more than ``c`` robust scales (1.4826 MAD) from the median."""
    centred = residuals - np.median(residuals)
    scale = MAD_SCALE * np.median(np.abs(centred))
    return np.abs(centred) > c * scale


def check_loo(n=300, seed=0):
    """The LOO residuals against a dense ``C = Q_ff + s2 I`` (with and without zero weights):
    the largest absolute difference."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(n)
    y[:15] += 5.0
    out = []
    for weight in (None, (np.arange(n) >= 15).astype(float)):
        model = SparseGPRegressor(max_basis=30, random_state=0).fit(X, y, sample_weight=weight)
        kept = np.ones(n, bool) if weight is None else weight > 0
        stats = model._stream
        V = solve_triangular(stats.L, model.kernel_(model.basis_vectors_, X), lower=True)
        s2 = noise_scale(model)
        Vk = V[:, kept]
        C_inv = np.linalg.inv(Vk.T @ Vk + s2 * np.eye(kept.sum()))  # dense, kept rows
        dense = np.empty(n)
        dense[kept] = (C_inv @ y[kept]) / np.diag(C_inv)
        # a row outside the fit: y_i minus the posterior mean, V_i^T (Vk Vk^T + s2 I)^-1 Vk y
        A = Vk @ Vk.T + s2 * np.eye(V.shape[0])
        dense[~kept] = y[~kept] - V[:, ~kept].T @ np.linalg.solve(A, Vk @ y[kept])
        out.append(float(np.max(np.abs(loo_residuals(model, X, y, weight) - dense))))
        # and the LOO residual of a row at leverage 0 is the model's own residual
        plain = y[~kept] - model.predict(X[~kept]) if weight is not None else None
        if plain is not None:
            out.append(float(np.max(np.abs(plain - dense[~kept]))))
    return out


def run(datasets, n, seeds, thresholds):
    RESULTS.mkdir(exist_ok=True)
    for name in datasets:
        for seed in seeds:
            X, y_clean, y_bad, X_test, y_test = load(name, n, seed)
            bad = y_bad != y_clean
            for targets, y in (("clean", y_clean), ("corrupt", y_bad)):
                base = {"data": name, "n": n, "seed": seed, "targets": targets}
                split = {"base": base, "X_test": X_test, "y_test": y_test, "bad": bad}
                tic = time.process_time()
                g = SparseGPRegressor(random_state=seed).fit(X, y)
                cpu_g = time.process_time() - tic
                write(scores(split, "gaussian", g, cpu_g, s2=noise_scale(g), cpu_g=cpu_g))
                tic = time.process_time()
                r_g = loo_residuals(g, X, y)
                cpu_loo = time.process_time() - tic
                for c in thresholds:
                    flagged = flag(r_g, c)
                    weight = (~flagged).astype(float)
                    tic = time.process_time()
                    cold = SparseGPRegressor(random_state=seed).fit(X, y, sample_weight=weight)
                    cpu_cold = cpu_g + cpu_loo + time.process_time() - tic
                    write(scores(split, f"trim{c:g}", cold, cpu_cold, flagged,
                                 s2=noise_scale(cold), cpu_g=cpu_g, cpu_loo=cpu_loo))
                    tic = time.process_time()
                    warm = copy.deepcopy(g).set_params(warm_start=True)
                    warm.fit(X, y, sample_weight=weight)
                    cpu_warm = cpu_g + cpu_loo + time.process_time() - tic
                    write(scores(split, f"trim{c:g}_warm", warm, cpu_warm, flagged,
                                 s2=noise_scale(warm), cpu_g=cpu_g))
                    # a second pass: flags from the refit's LOO residuals, refit from scratch
                    tic = time.process_time()
                    flagged2 = flag(loo_residuals(cold, X, y, weight), c)
                    second = cold
                    if np.any(flagged2 != flagged):
                        second = SparseGPRegressor(random_state=seed).fit(
                            X, y, sample_weight=(~flagged2).astype(float))
                    cpu_2 = cpu_cold + time.process_time() - tic
                    write(scores(split, f"trim{c:g}_2", second, cpu_2, flagged2,
                                 s2=noise_scale(second), cpu_g=cpu_g,
                                 changed=int(np.sum(flagged2 != flagged))))


def scores(split, method, model, cpu, flagged=None, **extra):
    """A fit's record: test NMSE and NLPD, CPU, and the rows flagged (share, recall and
    precision of the corrupted rows when the targets are corrupted)."""
    X_test, y_test, bad = split["X_test"], split["y_test"], split["bad"]
    r = dict(split["base"], method=method, cpu=cpu, nmse=nmse(model.predict(X_test), y_test),
             nlpd=-float(np.mean(model.log_predictive_density(X_test, y_test))),
             kernel=str(model.kernel_), **extra)
    if flagged is not None:
        r["flagged"] = float(np.mean(flagged))
        if split["base"]["targets"] == "corrupt":
            r["recall"] = float(np.mean(flagged[bad]))
            r["precision"] = float(np.mean(bad[flagged])) if flagged.any() else float("nan")
    return r


def write(record):
    print(json.dumps(record), flush=True)
    with RECORDS.open("a") as out:
        out.write(json.dumps(record) + "\n")


def _method_order(method):
    if method == "gaussian":
        return (0.0, 0)
    if method.startswith("gate"):
        return (float(method[4:]), 4)
    c, _, kind = method[4:].partition("_")
    return (float(c), {"": 1, "warm": 2, "2": 3}[kind])


def gated(records):
    """The derived rows ``gate{c}``: ``trim{c}`` where it flags more than ``GATE`` of the rows,
    else the first fit (its CPU then the first fit's plus the LOO pass, ``cpu_loo``)."""
    out = []
    for (data, n, seed, targets, method), r in records.items():
        if not method.startswith("trim") or "_" in method:
            continue
        g = records.get((data, n, seed, targets, "gaussian"))
        if g is None:
            continue
        if r["flagged"] > GATE:
            kept = dict(r, method="gate" + method[4:], refit=True)
        else:
            kept = dict(g, method="gate" + method[4:], refit=False, flagged=r["flagged"],
                        cpu=g["cpu"] + r.get("cpu_loo", 0.0))
            kept.update({k: r[k] for k in ("recall", "precision") if k in r})
        out.append(kept)
    return out


def report():
    records = {}
    for line in RECORDS.read_text().splitlines():
        r = json.loads(line)
        records[(r["data"], r["n"], r["seed"], r["targets"], r["method"])] = r
    rows = sorted(list(records.values()) + gated(records), key=lambda r: (r["data"], r["n"], r["seed"], r["targets"],
                                                   _method_order(r["method"])))
    base = {(r["data"], r["n"], r["seed"]): r["nmse"] for r in rows
            if r["method"] == "gaussian" and r["targets"] == "clean"}
    lines = [
        "# Hard-trimmed Gaussian refit by leave-one-out residuals (issue 47)",
        "",
        ("`python benchmarks/studies/robust_trim.py` (module docstring: the variants and the "
         "LOO residuals). NMSE and NLPD (the Gaussian's own) on 3,000 clean test rows; `vs "
         "clean` is NMSE over the Gaussian default's on the clean targets of the same split "
         "(goals: corrupt <= 1.15, clean <= 1.05); `CPU x` the whole fit's process time "
         "(first fit, LOO residuals, every refit) over the Gaussian default's on the same "
         "targets in the same run (goal <= 3); `flagged` the share of training rows given "
         "weight 0, `recall` / `precision` of the corrupted rows among them; `s` the noise "
         "scale sqrt(s2) in standardised target units. `gate{c}` rows are derived, not fitted: "
         f"`trim{{c}}` where it flags more than {GATE:.0%} of the rows, else the first fit "
         "(its CPU then without the LOO pass, which the records before `cpu_loo` lack; "
         "results/robust_em.md, last section). BLAS on one thread."),
        "",
        ("| data | seed | targets | method | NMSE | vs clean | NLPD | CPU s | CPU x | "
         "flagged | recall | precision | s | kernel |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def fmt(r, key, spec=".3f"):
        return format(r[key], spec) if key in r else ""

    for r in rows:
        key = (r["data"], r["n"], r["seed"])
        ratio = r["nmse"] / base[key] if key in base else float("nan")
        lines.append(
            f"| {r['data']} | {r['seed']} | {r['targets']} | {r['method']} | {r['nmse']:.4f} "
            f"| {ratio:.3f} | {r['nlpd']:.4f} | {r['cpu']:.1f} | {r['cpu'] / r['cpu_g']:.2f} "
            f"| {fmt(r, 'flagged')} | {fmt(r, 'recall')} | {fmt(r, 'precision')} | "
            f"{np.sqrt(r['s2']):.3g} | {r['kernel']} |")
    lines += ["", "## Summary (medians over the splits, range in brackets)", "",
              ("| method | splits | clean NMSE x | corrupt NMSE x | CPU x clean | CPU x "
               "corrupt | flagged clean | recall corrupt | all goals met |"),
              "|---|---|---|---|---|---|---|---|---|"]
    methods = sorted({r["method"] for r in rows}, key=_method_order)

    def stat(values, spec):
        if not values:
            return ""
        return (f"{np.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})")

    for method in methods:
        got = {t: [r for r in rows if r["method"] == method and r["targets"] == t
                   and (r["data"], r["n"], r["seed"]) in base] for t in ("clean", "corrupt")}
        ratio = {t: [r["nmse"] / base[(r["data"], r["n"], r["seed"])] for r in got[t]]
                 for t in got}
        cpu = {t: [r["cpu"] / r["cpu_g"] for r in got[t]] for t in got}
        met = sum(1 for rc in got["clean"] for rb in got["corrupt"]
                  if rc["data"] == rb["data"] and rc["seed"] == rb["seed"]
                  and rc["nmse"] / base[(rc["data"], rc["n"], rc["seed"])] <= 1.05
                  and rb["nmse"] / base[(rb["data"], rb["n"], rb["seed"])] <= 1.15
                  and rc["cpu"] / rc["cpu_g"] <= 3 and rb["cpu"] / rb["cpu_g"] <= 3)
        splits = sorted({f"{r['data']}/{r['seed']}" for r in got["clean"] + got["corrupt"]})
        lines.append(
            f"| {method} | {len(splits)} | {stat(ratio['clean'], '.3f')} | "
            f"{stat(ratio['corrupt'], '.3f')} | {stat(cpu['clean'], '.2f')} | "
            f"{stat(cpu['corrupt'], '.2f')} | "
            f"{stat([r['flagged'] for r in got['clean'] if 'flagged' in r], '.3f')} | "
            f"{stat([r['recall'] for r in got['corrupt'] if 'recall' in r], '.3f')} | "
            f"{met} of {len(splits)} |")
    (RESULTS / "robust_trim.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["kin40k", "pol"])
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--c", nargs="+", type=float, default=list(THRESHOLDS),
                        help="thresholds, in robust scales of the LOO residuals")
    parser.add_argument("--check", action="store_true",
                        help="the LOO residuals against a dense computation, then stop")
    parser.add_argument("--report", action="store_true", help="only write the table")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.check:
        print("largest |LOO residual - dense| (no weights, zero weights):", check_loo())
        return
    if not args.report:
        run(args.datasets, args.n, args.seeds, args.c)
    report()


if __name__ == "__main__":
    main()
