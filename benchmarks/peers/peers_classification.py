"""SparseGPClassifier against GPflow's SVGP in one run: test NLP, error, cost, seed spread.

Every model is fitted on the same splits, on one thread (BLAS and TensorFlow), and scored by
the same code (``_peers.classification_metrics``). skgpsparse's configurations are the
default constructor, ``selection="nlp"``, the kernel a scikit-learn user writes,
``ConstantKernel(1.0) * RBF(1.0)``, an ARD kernel ``ConstantKernel(1.0) * RBF(np.ones(d))``
and the papers' posterior (``posterior="basis"``); records are keyed by every constructor
parameter, so a changed default is measured afresh; the peer is GPflow's SVGP (Bernoulli/probit likelihood,
whitened, the same number of inducing points started at a random subset of training rows
and optimised, full-batch L-BFGS).

Data (``../shared/datasets``): the 8 Raetsch sets (realizations 1-10, ``M = N / 5``), pmlb
twonorm (2,000 training rows drawn with a seeded generator, the rest test), MAGIC and adult
(10,000 standardised training rows, 10,000 test rows, ``M = 500``). ``--seed-spread`` fits
realization 1 of banana, heart, breast cancer and ringnorm with ``random_state`` 0-9 (SVGP:
its inducing subset drawn with the same seeds) and reports the mean over test rows of the
standard deviation of ``P(y = 1)``, the largest single-row swing and the test-NLP range.
Records are cached in ``results/peers_classification_runs.json`` (the seed spread's, with the
test probabilities, in ``results/peers_classification_spread_runs.json``).

Usage::

    python benchmarks/peers/peers_classification.py --datasets banana ringnorm --realizations 3
    python benchmarks/peers/peers_classification.py --seed-spread
"""

import argparse
import hashlib
import json
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.data import load_dataset  # noqa: E402
from _common.machine import machine  # noqa: E402
from _common.peers import classification_metrics, fit_svgp, standardise  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CACHE = RESULTS / "peers_classification_runs.json"
SPREAD_CACHE = RESULTS / "peers_classification_spread_runs.json"
RAETSCH = ("banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic",
           "waveform")
LARGE = {"twonorm": ("pmlb_twonorm_subst_twonorm", 2000, None),
         "magic": ("pmlb_magic", 10_000, 500), "adult": ("pmlb_adult", 10_000, 500)}
SPREAD_SETS = ("banana", "heart", "breast_cancer", "ringnorm")


def _user_kernel():
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return ConstantKernel(1.0) * RBF(1.0)


# skgpsparse's configurations: label -> a function of nothing giving constructor keywords
# (besides max_basis and random_state); a keyword the installed estimator does not take is
# reported as skipped.
OURS = {
    "default": dict,
    "nlp": lambda: {"selection": "nlp"},
    "user_kernel": lambda: {"kernel": _user_kernel()},
    "ard_kernel": lambda: {"kernel": "ard"},  # C(1.0) * RBF(np.ones(d)), d from the data
    # the papers' posterior (the basis rows' likelihoods only), the default before all_rows
    "basis": lambda: {"posterior": "basis"},
    # the all-rows posterior with the additive-model paper's selection (the default before
    # selection="auto" chose the entropy criterion for it)
    "adaptive": lambda: {"selection": "adaptive"},
    "nlp_user_kernel": lambda: {"selection": "nlp", "kernel": _user_kernel()},
    # the papers' baseline basis under the all-rows posterior (random inducing rows)
    "random": lambda: {"selection": "random"},
}


def _constructor(kwargs, n_features):
    """``kwargs`` with the ARD kernel placeholder made for ``n_features`` inputs."""
    if kwargs.get("kernel") == "ard":
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel

        return dict(kwargs, kernel=ConstantKernel(1.0) * RBF(np.ones(n_features)))
    return kwargs


def _config(kwargs):
    """The cache's record of a configuration: every constructor parameter but the seed and
    basis size, defaults included, so that a changed default is a new configuration."""
    from skgpsparse import SparseGPClassifier

    params = SparseGPClassifier(**{k: v for k, v in kwargs.items() if k != "kernel"}).get_params()
    params.pop("random_state"), params.pop("max_basis")
    params["kernel"] = repr(kwargs.get("kernel"))
    return repr(sorted(params.items()))


def split(name, realization, seed=0):
    """``(X_train, y01_train, X_test, y01_test, M)`` with labels in {0, 1}."""
    if name in RAETSCH:
        d = load_dataset(f"raetsch_{name}")
        tr, te = d["train_idx"][realization], d["test_idx"][realization]
        X, y = d["X"].astype(float), d["y"]
        return X[tr], (y[tr] > 0).astype(int), X[te], (y[te] > 0).astype(int), len(tr) // 5
    file, n_train, M = LARGE[name]
    d = load_dataset(file)
    X, y = d["X"].astype(float), d["y"]
    labels = np.unique(y)
    y01 = (y == labels[-1]).astype(int)
    perm = np.random.RandomState(seed + realization).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train : n_train + 10_000]
    X_train, X_test = standardise(X[tr], X[te])
    return X_train, y01[tr], X_test, y01[te], (M or n_train // 5)


def fit_ours(kwargs, X, y01, X_test, y01_test, M, seed):
    """One SparseGPClassifier fit on one thread: metrics, times and test probabilities."""
    from skgpsparse import SparseGPClassifier

    kwargs = _constructor(kwargs, X.shape[1])
    model = SparseGPClassifier(max_basis=M, random_state=seed, **kwargs)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu, wall = time.process_time(), time.perf_counter()
        model.fit(X, y01)
        fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - wall
        tic = time.perf_counter()
        p1 = model.predict_proba(X_test)[:, 1]
        predict_wall = time.perf_counter() - tic
    rec = classification_metrics(y01_test, p1)
    rec.update(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_wall=predict_wall, p1=p1.tolist(),
               kernel=str(model.kernel_))
    return rec


def _accepts(kwargs):
    from skgpsparse import SparseGPClassifier

    return set(kwargs) <= set(SparseGPClassifier().get_params())


def _key(*parts):
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def records(names, realizations, models, seeds, svgp_maxiter, fresh, keep_p1=False,
            cache_file=CACHE):
    """Fit (or read from the cache) every (data, realization, model, seed); yield records.

    The test probabilities ``p1`` are kept in the cache only with ``keep_p1`` (the seed
    spread needs them; the summary does not, and they would make the cache megabytes).
    """
    cache = json.loads(cache_file.read_text()) if cache_file.exists() and not fresh else {}
    for name in names:
        for r in realizations:
            X, y, X_test, y_test, M = split(name, r)
            for label in models:
                if label != "svgp":
                    kwargs = OURS[label]()
                    if not _accepts(kwargs):
                        print(f"{name} {label}: skipped (the estimator has no {sorted(kwargs)})")
                        continue
                for seed in seeds:
                    config = {"maxiter": svgp_maxiter} if label == "svgp" else _config(kwargs)
                    k = _key(name, r, label, config, M, seed)
                    if k not in cache:
                        print(f"{name} r{r + 1} {label} seed {seed} ...", flush=True)
                        if label == "svgp":
                            rec = fit_svgp(X, y, X_test, y_test, M, seed=seed,
                                           maxiter=svgp_maxiter)
                        else:
                            rec = fit_ours(kwargs, X, y, X_test, y_test, M, seed)
                        rec.update(dataset=name, realization=r + 1, model=label, seed=seed,
                                   n_basis=M, date=f"{datetime.now(UTC):%Y-%m-%d %H:%M}")
                        if not keep_p1:
                            rec.pop("p1")
                        cache[k] = rec
                        RESULTS.mkdir(exist_ok=True)
                        cache_file.write_text(json.dumps(cache))
                    yield cache[k]


def summary_table(recs, names, models):
    """Mean +- standard error over realizations of NLP x 1e-2 and error %, median CPU s."""
    lines = ["| data | model | realizations | test NLP x 1e-2 | error % | fit CPU s (median) "
             "| predict_proba s (median) |", "|---|---|---|---|---|---|---|"]
    for name in names:
        for label in models:
            rs = [r for r in recs if r["dataset"] == name and r["model"] == label]
            if not rs:
                continue
            nlp = 100 * np.array([r["nlp"] for r in rs])
            err = 100 * np.array([r["error"] for r in rs])
            se = (lambda v: v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0)
            lines.append(
                f"| {name} | {label} | {len(rs)} | {nlp.mean():.2f} +- {se(nlp):.2f} | "
                f"{err.mean():.2f} +- {se(err):.2f} | "
                f"{np.median([r['fit_cpu'] for r in rs]):.2f} | "
                f"{np.median([r['predict_wall'] for r in rs]):.3f} |"
            )
    return lines


def spread_table(recs, names, models):
    """Seed spread on realization 1: mean std of P(y = 1), largest swing, test-NLP range."""
    lines = ["| data | model | seeds | mean std of P(y=1) | largest swing | test NLP range |",
             "|---|---|---|---|---|---|"]
    for name in names:
        for label in models:
            rs = [r for r in recs if r["dataset"] == name and r["model"] == label]
            if len(rs) < 2:
                continue
            P = np.array([r["p1"] for r in rs])
            nlp = np.array([r["nlp"] for r in rs])
            lines.append(
                f"| {name} | {label} | {len(rs)} | {P.std(axis=0).mean():.4f} | "
                f"{np.max(P.max(axis=0) - P.min(axis=0)):.3f} | "
                f"{nlp.min():.3f}-{nlp.max():.3f} ({nlp.max() - nlp.min():.3f}) |"
            )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=RAETSCH + tuple(LARGE),
                        default=list(RAETSCH) + list(LARGE))
    parser.add_argument("--realizations", type=int, default=10)
    parser.add_argument("--models", default="default,nlp,user_kernel,svgp")
    parser.add_argument("--svgp-maxiter", type=int, default=2000)
    parser.add_argument("--seed-spread", action="store_true",
                        help="realization 1 of banana, heart, breast cancer, ringnorm, seeds 0-9")
    parser.add_argument("--fresh", action="store_true", help="ignore cached records")
    parser.add_argument("--cache", type=Path, default=None,
                        help="record cache (default results/peers_classification_runs.json; "
                             "another file lets two runs go in parallel, then merge them)")
    args = parser.parse_args(argv)
    models = args.models.split(",")
    unknown = set(models) - set(OURS) - {"svgp"}
    if unknown:
        raise SystemExit(f"unknown models {sorted(unknown)}; known: {list(OURS) + ['svgp']}")
    argline = f"`python benchmarks/peers/peers_classification.py {' '.join(argv or sys.argv[1:])}`"
    head = [f"{machine()}; one thread for every model; CPU = process time. {argline}", ""]
    if args.seed_spread:
        names = [n for n in SPREAD_SETS if n in args.datasets] or list(SPREAD_SETS)
        recs = list(records(names, [0], models, range(10), args.svgp_maxiter, args.fresh,
                            keep_p1=True, cache_file=SPREAD_CACHE))
        lines = ["# Seed spread: SparseGPClassifier against GPflow's SVGP", "", *head,
                 *spread_table(recs, names, models)]
        out = RESULTS / "peers_classification_spread.md"
    else:
        recs = list(records(args.datasets, range(args.realizations), models, [0],
                            args.svgp_maxiter, args.fresh, cache_file=args.cache or CACHE))
        lines = ["# SparseGPClassifier against GPflow's SVGP", "", *head,
                 *summary_table(recs, args.datasets, models)]
        out = RESULTS / "peers_classification.md"
    print("\n".join(lines))
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
