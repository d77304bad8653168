"""The Poisson default's per-feature trial against one length scale per feature from the start.

``SparseGPRegressor(likelihood="poisson")`` fits its default kernel with one length scale,
then tries one per feature and keeps it where the evidence pays the charge
(``skgpsparse/latent/learning/_ep_rounds.py``, ``_per_feature_choice``). On doctorvisits the
trial keeps the per-feature kernel and a per-feature kernel passed from the start reaches the
same deviance at half the CPU (``results/count_mean.md``): the trial's price, and what stands
between the default and issue 47's goal of a fifth of GPflow SVGP's CPU there. This study
asks whether the start should be per-feature for counts: the default against the same
kernel with one length scale per feature (``count_mean.gp_kernel("per_feature")``, no trial)
and against the trial in reverse (``reversed``: :func:`reversed_trial`, a prototype that
replaces the engine's ``_learn_rounds`` for the fit: the rounds per feature first, then one
learn with one length scale on their basis, and the one-scale rounds from there when the
per-feature kernel does not pay the default's charge) on

- the real count sets doctorvisits and nmes1988: ``n`` random training rows of the peers'
  benchmark's 75 / 25 split (``benchmarks/peers/likelihoods.py``'s ``count_split``; ``n``
  at most the split's training rows), tested on its test rows;
- counts on real inputs: kin40k, pol, pumadyn32nm, uci_protein, pmlb 574_house_16H and
  uci_elevators, ``n`` random training rows and 2,000 test rows, features standardised on
  the training rows (a feature constant there is left unscaled), counts drawn as
  ``Poisson(exp(0.5 + 0.7 z))`` with ``z`` the set's standardised target (clipped at +-4):
  a log rate that depends on the features as the set's target does.

Scores: mean Poisson deviance and mean log predictive density of the test counts, CPU of the
fit (process time, one BLAS thread), whether the default kept one length scale per feature.

Usage::

    python benchmarks/studies/count_per_feature.py --sizes 300 2000
    python benchmarks/studies/count_per_feature.py --report

Records append to ``results/count_per_feature_runs.jsonl``; ``--report`` (and every run)
writes ``results/count_per_feature.md``, keeping its hand-written findings.
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.metrics import mean_poisson_deviance
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "peers"))
sys.path.insert(0, str(HERE.parent))
from _common.data import load_dataset  # noqa: E402
from _common.report import write_keeping_findings  # noqa: E402
from count_mean import gp_kernel  # noqa: E402
from likelihoods import count_split  # noqa: E402

from skgpsparse import SparseGPRegressor  # noqa: E402
from skgpsparse._row_weights import total_weight  # noqa: E402
from skgpsparse.kernels._scales import bic_charge, per_feature_length_scales  # noqa: E402
from skgpsparse.latent.learning import _ep_rounds  # noqa: E402

RESULTS = HERE / "results"
RECORDS = RESULTS / "count_per_feature_runs.jsonl"
REAL = ("doctorvisits", "nmes1988")
INPUTS = ("kin40k", "pol", "pumadyn32nm", "uci_protein", "pmlb_574_house_16H", "uci_elevators")
N_TEST = 2000
VARIANTS = ("default", "per_feature", "reversed")


def counts_on_inputs(name, n, seed):
    """``n`` training and ``N_TEST`` test rows of a regression set with Poisson counts whose
    log rate is ``0.5 + 0.7 z`` (``z`` the standardised target, clipped at +-4)."""
    d = load_dataset(name)
    X, y = d["X"].astype(float), d["y"].astype(float)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(y.size)
    train, test = idx[:n], idx[n:n + N_TEST]
    sd = X[train].std(0)
    sd[sd < 1e-12 * (1.0 + np.abs(X[train]).max(0))] = 1.0  # constant on the training rows
    X = (X - X[train].mean(0)) / sd
    z = np.clip((y - y[train].mean()) / y[train].std(), -4.0, 4.0)
    counts = rng.poisson(np.exp(0.5 + 0.7 * z)).astype(float)
    return X[train], counts[train], X[test], counts[test]


def real_counts(name, n, seed):
    """``n`` random training rows of the peers' split of a count set, and its test rows."""
    X, y, X_test, y_test = count_split(name, seed)
    rows = np.random.default_rng(seed).permutation(y.size)[:n]
    return X[rows], y[rows], X_test, y_test


def reversed_trial(model, X, y, rng, subsample=False):
    """The ``reversed`` variant's rounds (a prototype in place of ``_ep_rounds._learn_rounds``
    for the default kernel): the rounds with one length scale per feature first; then one
    learn of the one-scale kernel (the scales' geometric mean) on the kept basis; if the
    per-feature round does not beat it by the trial's charge, the one-scale rounds go on from
    that learn and the better of them is kept."""
    kernel = clone(model.kernel)
    if model.optimizer is not None and model.warm is None:
        kernel = _ep_rounds._better_start(model, kernel, X, y, rng)
    ard = per_feature_length_scales(kernel, X.shape[1])
    model.loss_curve_ = []
    bias = model._initial_bias(ard, X, y) + model.bias_offset
    best, n_iter = _ep_rounds._rounds(model, ard, bias, (None, None), X, y, rng, model.max_iter)
    loss, per_feature, bias, basis, sites, curve, likelihood = best
    n = total_weight(y.size, model._row_weights)
    charge = _ep_rounds.CHARGE_FACTOR * bic_charge(per_feature.n_dims - kernel.n_dims, n)
    scales = {name: float(np.exp(np.mean(np.log(value))))
              for name, value in per_feature.get_params().items()
              if name.endswith("length_scale") and np.ndim(value) == 1}
    model.likelihood = likelihood
    one = _ep_rounds._learn(model, clone(per_feature).set_params(**scales), bias, sites, X, y,
                            basis)
    n_iter += 1
    if n * (one[0] - loss) <= charge:  # the per-feature scales do not pay: one scale
        start = (one[0], one[1], one[2], basis, one[3], curve, model.likelihood)
        more, rounds = _ep_rounds._rounds(model, one[1], one[2], one[3], X, y, rng,
                                          max(model.max_iter - n_iter, 1), previous=one[0])
        best, n_iter = (more if more[0] < start[0] else start), n_iter + rounds
    if model.optimizer == "fmin_l_bfgs_b" and not subsample and not model.refine_basis:
        best = _ep_rounds._converged(best, X, y, model._row_weights)  # as the default's
    model.likelihood = best[6]
    return best, n_iter


def fit(variant, X, y, X_test, y_test, seed):
    kernel = gp_kernel("per_feature" if variant == "per_feature" else "default", X.shape[1])
    model = SparseGPRegressor(likelihood="poisson", kernel=kernel, random_state=seed)
    learn_rounds = _ep_rounds._learn_rounds
    if variant == "reversed":
        _ep_rounds._learn_rounds = reversed_trial
    try:
        with threadpool_limits(limits=1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.process_time()
            model.fit(X, y)
            cpu = time.process_time() - start
    finally:
        _ep_rounds._learn_rounds = learn_rounds
    length_scale = model.kernel_.k1.k2.length_scale
    return dict(variant=variant, cpu=cpu,
                deviance=float(mean_poisson_deviance(y_test, model.predict(X_test))),
                lpd=float(np.mean(model.log_predictive_density(X_test, y_test))),
                per_feature=bool(np.ndim(length_scale)), kernel=str(model.kernel_))


def run(sets, sizes, seeds, variants=VARIANTS):
    RESULTS.mkdir(exist_ok=True)
    for name in sets:
        for n in sizes:
            for seed in seeds:
                load = real_counts if name in REAL else counts_on_inputs
                X, y, X_test, y_test = load(name, n, seed)
                for variant in variants:
                    record = dict(data=name, n=int(y.size), seed=seed,
                                  **fit(variant, X, y, X_test, y_test, seed))
                    print(json.dumps(record), flush=True)
                    with RECORDS.open("a") as f:
                        f.write(json.dumps(record) + "\n")


def report():
    records = [json.loads(line) for line in RECORDS.read_text().splitlines()]
    fits = {}
    for r in records:  # the last record of a fit counts
        fits.setdefault((r["data"], r["n"], r["seed"]), {})[r["variant"]] = r
    groups = {}
    for (data, n, _), by_variant in sorted(fits.items()):
        if set(VARIANTS) <= set(by_variant):
            groups.setdefault((data, n), []).append(by_variant)
    lines = [
        "# The Poisson default's per-feature trial against a per-feature start",
        "",
        "`python benchmarks/studies/count_per_feature.py` (module docstring). Medians over the "
        "seeds of the default (`def.`), the per-feature start (`start`) and the reversed trial "
        "(`rev.`); `per split`: their deviance minus the default's; CPU is the fit's process "
        "time on one BLAS thread; `per feature`: the fits that kept one length scale per "
        "feature (default, reversed).",
        "",
        "| data | n train | deviance def. / start / rev. | start - def. per split | "
        "rev. - def. per split | LPD def. / start / rev. | CPU s def. / start / rev. | "
        "per feature |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def column(rows, variant, key):
        return np.array([row[variant][key] for row in rows], dtype=float)

    def medians(rows, key, fmt):
        return " / ".join(format(np.median(column(rows, v, key)), fmt) for v in VARIANTS)

    def diffs(rows, variant):
        gaps = column(rows, variant, "deviance") - column(rows, "default", "deviance")
        return " ".join(f"{v:+.4f}" for v in gaps)

    for (data, n), rows in groups.items():
        kept = [int(sum(row[v]["per_feature"] for row in rows)) for v in ("default", "reversed")]
        lines.append(
            f"| {data} | {n} | {medians(rows, 'deviance', '.4f')} | "
            f"{diffs(rows, 'per_feature')} | {diffs(rows, 'reversed')} | "
            f"{medians(rows, 'lpd', '.4f')} | {medians(rows, 'cpu', '.2f')} | "
            f"{kept[0]}, {kept[1]} of {len(rows)} |")
    write_keeping_findings(RESULTS / "count_per_feature.md", "\n".join(lines))
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(REAL + INPUTS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[300, 2000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--report", action="store_true", help="only write the table")
    args = parser.parse_args(argv)
    if not args.report:
        run(args.sets, args.sizes, args.seeds, args.variants)
    report()


if __name__ == "__main__":
    main()
