"""What a stopping rule for the classifier's basis size sees: EP evidence, EP leave-one-out
log loss and the test NLP, along one forward selection.

For each binary set the default ``SparseGPClassifier(max_basis="auto")`` runs its first round
at 100 basis vectors (learning ``(theta, b)``); at those hyperparameters the basis is grown
afresh by the entropy criterion in doublings ``50, 100, ..., cap`` (as ``max_basis="auto"``
does, but past its stopping point, to the cap), and after each doubling EP over every training
row gives three numbers per row: the EP log evidence (the rule ``"auto"`` runs), the EP
leave-one-out log loss (each row's cavity predictive, no refit) and the test rows' NLP of that
same posterior (what the rule should track). The fit stops after the curve. One BLAS thread,
CPU seconds of each doubling.

Sets (features standardised on the training rows): ``synthetic`` (``paired_refs.py``'s law,
10,000 training and 20,000 test rows, the median threshold), pmlb magic and twonorm, the
Raetsch banana, ringnorm, image and waveform sets and pmlb adult (10,000 / 10,000), one seed.

Usage::

    python benchmarks/studies/basis_size_loo.py --sets banana twonorm
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.linalg import solve_triangular
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from basis_size_classifier import split_file  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = RESULTS / "basis_size_loo_runs.jsonl"
SETS = {"synthetic": (None, 10000, 20000), "magic": ("pmlb_magic", 5000, 5000),
        "twonorm": ("pmlb_twonorm_subst_twonorm", 5000, 2400),
        "banana": ("raetsch_banana", 2650, 2650), "ringnorm": ("raetsch_ringnorm", 3700, 3700),
        "image": ("raetsch_image", 1155, 1155), "waveform": ("raetsch_waveform", 2500, 2500),
        "adult": ("pmlb_adult", 10000, 10000)}


def split(name, seed=0):
    """Standardised training and test rows of one set (module docstring)."""
    file, n_train, n_test = SETS[name]
    if file is None:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n_train + n_test, 20))
        f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
        noisy = f + 0.3 * rng.standard_normal(f.size)
        y = (noisy > np.median(f[:n_train])).astype(int)
        return X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    return split_file(file, n_train, n_test, seed)


class _Done(Exception):
    pass


def curve_of(name, seed=0, after="round"):
    """The three curves of one set (module docstring); ``after``: "round" (at the ``(theta,
    b)`` of the first round at 100, as ``"auto"``) or "fit" (at those of the whole
    ``max_basis=100`` fit, the choice of one length scale per feature included)."""
    from skgpsparse import SparseGPClassifier
    from skgpsparse._auto_basis import FIRST_SIZE, doubling_sizes, row_cap
    from skgpsparse.inference._adf import ADFState
    from skgpsparse.inference._ep import marginals, weight_posterior_of
    from skgpsparse.inference._ep_passes import cavities
    from skgpsparse.inference._sparse_prior import SparsePrior
    from skgpsparse.latent.learning import _basis_size, _ep_rounds
    from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective, joint_theta

    X, y, X_test, y_test = split(name, seed)
    classes = np.unique(y)
    t_test = np.where(y_test == classes[1], 1.0, -1.0)
    rows = []

    def choose(model, kernel, X, y, bias, rng, cap, sites=(None, None)):
        cap = min(cap, row_cap(y.size))
        state = ADFState(kernel, X, y, bias, cap, likelihood=model.likelihood,
                         site_update=model.site_update, n_threads=model.n_threads)
        model._twins_of(X)
        z = joint_theta(kernel, model.likelihood, bias)
        tic = time.process_time()
        for size in doubling_sizes(FIRST_SIZE, cap):
            while state.size < size and state.candidates().size:
                model._add(state, model.selector.select(state, rng))
            X_u = X[state.basis_indices]
            objective = AllRowsObjective(kernel, X, y, X_u, sites, likelihood=model.likelihood)
            evidence = -float(objective(z, eval_gradient=False))
            sites = objective.sites
            cpu = time.process_time() - tic
            prior = SparsePrior(kernel, X, X_u)
            mu, s2, _ = marginals(prior, *sites)
            mc, s2c, ok = cavities(mu, s2, *sites)
            s2c = np.where(ok, s2c, kernel.diag(X))
            loo = -float(np.mean(model.likelihood.log_predictive(y, mc + bias, s2c)))
            L_B, _, mean_w = weight_posterior_of(prior, *sites)
            V = solve_triangular(prior.L, kernel(X_u, X_test), lower=True)
            U = solve_triangular(L_B, V, lower=True)
            var = kernel.diag(X_test) - np.sum(V * V, 0) + np.sum(U * U, 0)
            test = -float(np.mean(model.likelihood.log_predictive(
                t_test, V.T @ mean_w + bias, np.maximum(var, 1e-12))))
            rows.append({"set": name, "seed": seed, "after": after, "size": state.size,
                         "evidence": evidence, "loo": loo, "test": test, "cpu": cpu})
            print(json.dumps(rows[-1]), flush=True)
            if state.size < size:
                break
        raise _Done

    per_feature = _ep_rounds._per_feature_choice

    def after_fit(model, best, X, y, rng, max_rounds, **kwargs):
        kept, rounds = per_feature(model, best, X, y, rng, max_rounds, **kwargs)
        _, kernel, bias, _, sites = kept[:5]
        choose(model, kernel, X, y, bias, rng, 800, sites)

    if after == "round":
        _basis_size.choose_basis_size, original = choose, _basis_size.choose_basis_size
    else:
        _ep_rounds._per_feature_choice = after_fit
    try:
        with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SparseGPClassifier(max_basis="auto" if after == "round" else 100,
                               random_state=seed).fit(X, y)
    except _Done:
        pass
    finally:
        if after == "round":
            _basis_size.choose_basis_size = original
        else:
            _ep_rounds._per_feature_choice = per_feature
    for r in rows:
        r["after"] = after
    return rows


def report(runs):
    """The markdown table of ``runs``: per set and rule timing, each size's three numbers and
    their gains per doubling."""
    lines = ["| data | curve after | p | EP log evidence / n | gain | EP LOO log loss | gain "
             "| test NLP | gain | CPU s |", "|---|---|---|---|---|---|---|---|---|---|"]
    last = {}
    for r in runs:
        after = r.get("after", "round")
        key = (r["set"], after)
        before = last.get(key)
        if before is not None and before["size"] >= r["size"]:
            before = None

        def g(k, sign=1, r=r, before=before):
            return "" if before is None else f"{sign * (r[k] - before[k]):+.5f}"

        lines.append(f"| {r['set']} | {'first round' if after == 'round' else 'fit at 100'} "
                     f"| {r['size']} | {r['evidence']:.5f} | {g('evidence')} | {r['loo']:.5f} "
                     f"| {g('loo', -1)} | {r['test']:.5f} | {g('test', -1)} | {r['cpu']:.1f} |")
        last[key] = r
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--after", choices=["round", "fit"], default="round")
    parser.add_argument("--report", action="store_true",
                        help="print the table of the runs file and exit")
    args = parser.parse_args()
    if args.report:
        print(report([json.loads(line) for line in RUNS.open()]))
        return
    RESULTS.mkdir(exist_ok=True)
    for name in args.sets:
        for seed in args.seeds:
            rows = curve_of(name, seed, args.after)
            with RUNS.open("a") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
