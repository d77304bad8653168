"""The Poisson default's per-feature trial against one length scale per feature from the start.

``SparseGPRegressor(likelihood="poisson")`` fits its default kernel with one length scale,
then tries one per feature and keeps it where the evidence pays the charge
(``skgpsparse/latent/learning/_ep_rounds.py``, ``_per_feature_choice``). On doctorvisits the
trial keeps the per-feature kernel and a per-feature kernel passed from the start reaches the
same deviance at half the CPU (``results/count_mean.md``): the trial's price, and what stands
between the default and issue 47's goal of a fifth of GPflow SVGP's CPU there. This study
asks whether the start should be per-feature for counts: the default against the same
kernel with one length scale per feature (``count_mean.gp_kernel("per_feature")``, no trial)
on

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
from sklearn.metrics import mean_poisson_deviance
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "peers"))
sys.path.insert(0, str(HERE.parent))
from _common.data import load_dataset  # noqa: E402
from count_mean import FINDINGS, gp_kernel  # noqa: E402
from likelihoods import count_split  # noqa: E402

from skgpsparse import SparseGPRegressor  # noqa: E402

RESULTS = HERE / "results"
RECORDS = RESULTS / "count_per_feature_runs.jsonl"
REAL = ("doctorvisits", "nmes1988")
INPUTS = ("kin40k", "pol", "pumadyn32nm", "uci_protein", "pmlb_574_house_16H", "uci_elevators")
N_TEST = 2000


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


def fit(variant, X, y, X_test, y_test, seed):
    kernel = gp_kernel("per_feature" if variant == "per_feature" else "default", X.shape[1])
    model = SparseGPRegressor(likelihood="poisson", kernel=kernel, random_state=seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - start
    length_scale = model.kernel_.k1.k2.length_scale
    return dict(variant=variant, cpu=cpu,
                deviance=float(mean_poisson_deviance(y_test, model.predict(X_test))),
                lpd=float(np.mean(model.log_predictive_density(X_test, y_test))),
                per_feature=bool(np.ndim(length_scale)), kernel=str(model.kernel_))


def run(sets, sizes, seeds):
    RESULTS.mkdir(exist_ok=True)
    for name in sets:
        for n in sizes:
            for seed in seeds:
                load = real_counts if name in REAL else counts_on_inputs
                X, y, X_test, y_test = load(name, n, seed)
                for variant in ("default", "per_feature"):
                    record = dict(data=name, n=int(y.size), seed=seed,
                                  **fit(variant, X, y, X_test, y_test, seed))
                    print(json.dumps(record), flush=True)
                    with RECORDS.open("a") as f:
                        f.write(json.dumps(record) + "\n")


def report():
    records = [json.loads(line) for line in RECORDS.read_text().splitlines()]
    pairs = {}
    for r in records:
        pairs.setdefault((r["data"], r["n"], r["seed"]), {})[r["variant"]] = r
    groups = {}
    for (data, n, _), pair in sorted(pairs.items()):
        if len(pair) == 2:
            groups.setdefault((data, n), []).append((pair["default"], pair["per_feature"]))
    lines = [
        "# The Poisson default's per-feature trial against a per-feature start",
        "",
        "`python benchmarks/studies/count_per_feature.py` (module docstring). Medians over the "
        "seeds; `per split`: the per-feature start's deviance minus the default's; CPU is the "
        "fit's process time on one BLAS thread; `default per feature`: the default's fits that "
        "kept one length scale per feature.",
        "",
        "| data | n train | deviance default / per-feature start | per split | LPD default / "
        "per-feature start | CPU s default / per-feature start | default per feature |",
        "|---|---|---|---|---|---|---|",
    ]
    for (data, n), rows in groups.items():
        a = {k: np.array([d[k] for d, _ in rows], dtype=float) for k in ("deviance", "lpd", "cpu")}
        b = {k: np.array([p[k] for _, p in rows], dtype=float) for k in ("deviance", "lpd", "cpu")}
        kept = sum(d["per_feature"] for d, _ in rows)
        lines.append(
            f"| {data} | {n} | {np.median(a['deviance']):.4f} / {np.median(b['deviance']):.4f} | "
            + " ".join(f"{v:+.4f}" for v in b["deviance"] - a["deviance"])
            + f" | {np.median(a['lpd']):.4f} / {np.median(b['lpd']):.4f} | "
            f"{np.median(a['cpu']):.2f} / {np.median(b['cpu']):.2f} | {kept} of {len(rows)} |")
    out = RESULTS / "count_per_feature.md"
    kept = out.read_text().split("\n" + FINDINGS, 1) if out.exists() else [""]
    findings = "\n" + FINDINGS + kept[1] if len(kept) > 1 else ""
    out.write_text("\n".join(lines) + "\n" + findings)
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(REAL + INPUTS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[300, 2000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--report", action="store_true", help="only write the table")
    args = parser.parse_args(argv)
    if not args.report:
        run(args.sets, args.sizes, args.seeds)
    report()


if __name__ == "__main__":
    main()
