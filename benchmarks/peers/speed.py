"""Fit time and test quality of SparseGPClassifier against scikit-learn's full GPC on twonorm.

Twonorm (d = 20, the PMLB copy in the offline datasets folder, labels 0/1): a seeded subsample
of ``--n-train`` rows (default 2000) for training and a disjoint subsample of ``--n-test`` rows
(default 3000) for testing. Compares the default constructor ``SparseGPClassifier()`` (with
``--max-basis N``: ``SparseGPClassifier(max_basis=N)``) with
scikit-learn's ``GaussianProcessClassifier(ConstantKernel(1.0) * RBF(sqrt(d)))`` (Laplace
approximation, one L-BFGS-B run; started from ``RBF(1.0)`` it collapses to the constant
predictor on this set, which is shown too): fit time (median of ``--repeats`` fits, the
sparse ones with seeds ``seed .. seed + repeats - 1``; the ratio uses CPU time, as every fit is
single-threaded and the machine may be shared), median test NLP (``-mean log p(y_true | x)``,
natural log) and test error. The default sparse model starts from the reference's kernel
(``RBF(sqrt(d))``, amplitude capped at 100); the same model started from ``RBF(1.0)`` is shown
as well.

The goal of the classifier issue: the sparse fit at least 10x faster with a test NLP within
1.1x of the full GPC's; of the later speed issue: 30x at 1.05x, "with the default constructor
and with ``C(1.0) * RBF(3.0)``" (``twonorm_gap.py`` shows where the NLP gap comes from). The
default constructor keeps ``max_basis=100`` basis vectors; until 2026-11-28 the script ran
``max_basis=200`` as its default, which ``--max-basis 200`` still runs
(``results/speed_max_basis_200.md``).

One split is one draw: on the split of seed 0 the NLP ratio is 1.08x, on others 0.97-1.02x
(the EP posterior of a probit GP, not the basis, sets it: ``twonorm_gap.py``). So the goals are
read on the medians over ``--splits`` splits (seeds ``seed .. seed + splits - 1``) of the
per-split ratios, the default model, the user kernel and the reference fitted on each; the
first split also has ``--repeats`` fits and the other models.

Usage::

    python benchmarks/peers/speed.py                  # n = 2000, 10 splits, 3 repeats on the first
    python benchmarks/peers/speed.py --max-basis 200   # the same with 200 basis vectors
    python benchmarks/peers/speed.py --quick           # n = 1000, 1 split, 1 repeat

Writes ``benchmarks/peers/results/speed.md`` (``speed_max_basis_N.md`` with ``--max-basis N``).
"""

import argparse
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.data import load_dataset
from _common.machine import machine

RESULTS = Path(__file__).resolve().parent / "results"


def split(n_train, n_test, seed):
    data = load_dataset("pmlb_twonorm_subst_twonorm")
    X, y = data["X"], data["y"]
    if n_train + n_test > X.shape[0]:
        raise ValueError(
            f"n_train + n_test must be at most {X.shape[0]}, got {n_train} + {n_test}."
        )
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    train, test = perm[:n_train], perm[n_train : n_train + n_test]
    return X[train], y[train], X[test], y[test]


def scores(model, X, y):
    """Test NLP (natural log, mean over points) and error (%)."""
    proba = model.predict_proba(X)
    column = np.searchsorted(model.classes_, y)
    p_true = np.clip(proba[np.arange(len(y)), column], 1e-300, 1.0)
    error = np.mean(model.classes_[np.argmax(proba, axis=1)] != y)
    return float(-np.mean(np.log(p_true))), 100.0 * float(error)


def timed_fits(make, X, y, X_test, y_test, repeats):
    """Fit ``make(r)`` for r = 0..repeats-1; medians of CPU / wall time and of the test scores.

    The sparse models get ``random_state = seed + r``: their outer loop stops after a random
    number of iterations (patience on a noisy training NLP), so the median over seeds is the
    fair figure; scikit-learn's GPC is deterministic and simply repeated.
    """
    times, cpu_times, nlps, errors, iters, model = [], [], [], [], [], None
    for r in range(repeats):
        model = make(r)
        start, cpu_start = time.perf_counter(), time.process_time()
        model.fit(X, y)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        nlp, err = scores(model, X_test, y_test)
        nlps.append(nlp)
        errors.append(err)
        iters.append(getattr(model, "n_iter_", None))
    return {
        "cpu_times": cpu_times,
        "cpu": float(np.median(cpu_times)),
        "times": times,
        "time": float(np.median(times)),
        "nlps": nlps,
        "nlp": float(np.median(nlps)),
        "error": float(np.median(errors)),
        "iters": iters,
        "model": model,
    }


def split_ratios(seed, fits):
    """One split's figures: the default and user-kernel sparse fits against the full GPC."""
    sparse, user, full = fits["sparse"], fits["sparse_user3"], fits["full"]
    return {
        "seed": seed,
        "cpu": sparse["cpu"], "full_cpu": full["cpu"], "ratio": full["cpu"] / sparse["cpu"],
        "nlp": sparse["nlp"], "full_nlp": full["nlp"], "nlp_ratio": sparse["nlp"] / full["nlp"],
        "user_cpu": user["cpu"], "user_ratio": full["cpu"] / user["cpu"],
        "user_nlp": user["nlp"], "user_nlp_ratio": user["nlp"] / full["nlp"],
    }


def split_line(row):
    return (
        f"split {row['seed']}: default {row['cpu']:.2f} s NLP {row['nlp']:.4f}, user kernel "
        f"{row['user_cpu']:.2f} s NLP {row['user_nlp']:.4f}, full GPC {row['full_cpu']:.2f} s "
        f"NLP {row['full_nlp']:.4f}: {row['ratio']:.1f}x / {row['user_ratio']:.1f}x at "
        f"{row['nlp_ratio']:.3f} / {row['user_nlp_ratio']:.3f}"
    )


def split_row(row):
    return (
        f"| {row['seed']} | {row['cpu']:.2f} | {row['full_cpu']:.2f} | {row['ratio']:.1f}x | "
        f"{row['nlp']:.4f} | {row['full_nlp']:.4f} | {row['nlp_ratio']:.3f} | "
        f"{row['user_cpu']:.2f} | {row['user_ratio']:.1f}x | {row['user_nlp']:.4f} | "
        f"{row['user_nlp_ratio']:.3f} |"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=3000)
    parser.add_argument("--max-basis", type=int, default=None,
                        help="the sparse models' max_basis (default: the constructor's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both models")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--splits", type=int, default=10,
                        help="train/test splits (seeds seed..seed+splits-1) the goals are read on")
    parser.add_argument("--quick", action="store_true", help="n_train 1000, 1 split, 1 repeat")
    parser.add_argument("--no-write", action="store_true", help="do not write results/speed*.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.repeats, args.splits = 1000, 1, 1
    if args.splits < 1:
        raise ValueError(f"--splits must be at least 1, got {args.splits}.")

    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from threadpoolctl import threadpool_limits

    from skgpsparse import SparseGPClassifier

    X, y, X_test, y_test = split(args.n_train, args.n_test, args.seed)
    d = X.shape[1]
    print(f"twonorm: {X.shape[0]} train / {X_test.shape[0]} test rows, d = {d}")

    # the constructor's own max_basis unless one is given
    sized = {} if args.max_basis is None else {"max_basis": args.max_basis}
    basis_arg = "" if args.max_basis is None else f"max_basis={args.max_basis}"

    def sparse_model(kernel=None, r=0, seed=args.seed):
        return SparseGPClassifier(kernel, random_state=seed + r, **sized)

    def full_model(length_scale, seed=args.seed):
        kernel = ConstantKernel(1.0) * RBF(length_scale)
        return GaussianProcessClassifier(kernel, random_state=seed)

    # the models fitted on every split (the goals' pair and the user kernel)
    def split_models(seed):
        return {
            "sparse": lambda r: sparse_model(r=r, seed=seed),
            "sparse_user3": lambda r: sparse_model(ConstantKernel(1.0) * RBF(3.0), r, seed),
            "full": lambda r: full_model(np.sqrt(d), seed),
        }

    # (key, table label, factory); "sparse" and "full" are the compared pair
    configs = [
        (
            "sparse",
            (
                f"SparseGPClassifier({basis_arg}), defaults "
                "(C(1.0, bounds (1e-5, 100)) * RBF(sqrt(d)) start)"
            ),
            lambda r: sparse_model(r=r),
        ),
        (
            "sparse_rbf1",
            (
                "SparseGPClassifier(C(1.0, bounds (1e-5, 100)) * RBF(1.0)"
                f"{', ' + basis_arg if basis_arg else ''})"
            ),
            lambda r: sparse_model(ConstantKernel(1.0, (1e-5, 100.0)) * RBF(1.0), r),
        ),
        (
            "sparse_user3",
            f"SparseGPClassifier(C(1.0) * RBF(3.0){', ' + basis_arg if basis_arg else ''}) "
            "(a user kernel)",
            lambda r: sparse_model(ConstantKernel(1.0) * RBF(3.0), r),
        ),
        (
            "sparse_basis",
            f"SparseGPClassifier({basis_arg + ', ' if basis_arg else ''}posterior='basis')",
            lambda r: SparseGPClassifier(posterior="basis", random_state=args.seed + r, **sized),
        ),
        (
            "full",
            "GaussianProcessClassifier(C(1.0) * RBF(sqrt(d))) (reference)",
            lambda r: full_model(np.sqrt(d)),
        ),
        ("full_rbf1", "GaussianProcessClassifier(C(1.0) * RBF(1.0))", lambda r: full_model(1.0)),
    ]
    results = {}
    with threadpool_limits(limits=args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key, label, make in configs:
            res = timed_fits(make, X, y, X_test, y_test, args.repeats)
            res["label"] = label
            results[key] = res
            model = res["model"]
            print(
                f"{key:>14}: {res['time']:7.2f} s (CPU {res['cpu']:7.2f} s)  "
                f"NLP {res['nlp']:.4f}  "
                f"err {res['error']:5.2f}%  kernel {model.kernel_}  "
                f"n_iter {getattr(model, 'n_iter_', '-')}",
                flush=True,
            )
        per_split = [split_ratios(args.seed, results)]
        for seed in range(args.seed + 1, args.seed + args.splits):
            Xs, ys, Xs_test, ys_test = split(args.n_train, args.n_test, seed)
            fits = {key: timed_fits(make, Xs, ys, Xs_test, ys_test, 1)
                    for key, make in split_models(seed).items()}
            per_split.append(split_ratios(seed, fits))
            print(split_line(per_split[-1]), flush=True)
    sparse, full = results["sparse"], results["full"]
    # CPU time of single-threaded fits: robust to other jobs sharing the machine
    wall_ratio = full["time"] / sparse["time"]
    med = {key: float(np.median([row[key] for row in per_split])) for key in per_split[0]}
    ratio, nlp_ratio = med["ratio"], med["nlp_ratio"]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    on = f"median over {len(per_split)} split(s)"
    checks = [
        (f"fit >= 10x faster ({on})", ratio >= 10.0),
        (f"test NLP <= 1.1 x full GPC's ({on})", nlp_ratio <= 1.1),
        (f"fit >= 30x faster (speed issue; {on})", ratio >= 30.0),
        (f"test NLP <= 1.05 x full GPC's (speed issue; {on})", nlp_ratio <= 1.05),
        (f"C(1.0) * RBF(3.0): fit >= 30x faster (speed issue; {on})", med["user_ratio"] >= 30.0),
        (f"C(1.0) * RBF(3.0): test NLP <= 1.05 x (speed issue; {on})",
         med["user_nlp_ratio"] <= 1.05),
    ]
    lines = [
        "# Speed: SparseGPClassifier vs scikit-learn GaussianProcessClassifier (twonorm)",
        "",
        (
            f"Machine: {machine()}; scikit-learn {sklearn.__version__}; {date}; "
            f"{args.threads} BLAS thread(s) for every model; machine shared with other jobs."
        ),
        (
            f"twonorm (PMLB copy), d = {d}: {X.shape[0]} training rows, "
            f"{X_test.shape[0]} disjoint test rows (seed {args.seed}); fit time, test NLP and "
            f"error are medians of {args.repeats} fit(s) (the sparse models with random_state "
            f"{args.seed}..{args.seed + args.repeats - 1}: their number of outer iterations "
            "varies with the seed); test NLP is -mean log p(y|x) (natural log)."
        ),
        "",
        (
            "| model | fit CPU time (s) | fit wall time (s) | individual fits, CPU (s) | "
            "test NLP | individual test NLP | test error (%) | fitted kernel (last fit) | "
            "outer iterations |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results.values():
        model = res["model"]
        lines.append(
            f"| {res['label']} | {res['cpu']:.2f} | {res['time']:.2f} | "
            f"{[round(t, 2) for t in res['cpu_times']]} | "
            f"{res['nlp']:.4f} | {[round(v, 4) for v in res['nlps']]} | {res['error']:.2f} | "
            f"{model.kernel_} | {[i if i is not None else '—' for i in res['iters']]} |"
        )
    lines += [
        "",
        (
            f"On the split of seed {args.seed}: fit-time ratio (reference full GPC / default "
            f"sparse), CPU time, {per_split[0]['ratio']:.2f}x (wall time: {wall_ratio:.2f}x); "
            f"test NLP ratio (sparse / full) {per_split[0]['nlp_ratio']:.3f}."
        ),
        "",
        (
            f"Every split (seeds {args.seed}..{args.seed + len(per_split) - 1}; the first "
            f"split's medians from the table above, one fit of each model on the others; "
            "ratios are the full GPC's CPU time over the sparse fit's, and the sparse test NLP "
            "over the full GPC's):"
        ),
        "",
        ("| split seed | default: CPU (s) | full GPC: CPU (s) | **default: fit ratio** | "
         "default: test NLP | full GPC: test NLP | **default: NLP ratio** | "
         "C(1.0) * RBF(3.0): CPU (s) | **user kernel: fit ratio** | "
         "C(1.0) * RBF(3.0): test NLP | **user kernel: NLP ratio** |"),
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *[split_row(row) for row in per_split],
        (f"| **median** | {med['cpu']:.2f} | {med['full_cpu']:.2f} | **{ratio:.1f}x** | "
         f"{med['nlp']:.4f} | {med['full_nlp']:.4f} | **{nlp_ratio:.3f}** | "
         f"{med['user_cpu']:.2f} | **{med['user_ratio']:.1f}x** | {med['user_nlp']:.4f} | "
         f"**{med['user_nlp_ratio']:.3f}** |"),
        (f"| range | | | {min(r['ratio'] for r in per_split):.1f}-"
         f"{max(r['ratio'] for r in per_split):.1f}x | | | "
         f"{min(r['nlp_ratio'] for r in per_split):.3f}-"
         f"{max(r['nlp_ratio'] for r in per_split):.3f} | | "
         f"{min(r['user_ratio'] for r in per_split):.1f}-"
         f"{max(r['user_ratio'] for r in per_split):.1f}x | | "
         f"{min(r['user_nlp_ratio'] for r in per_split):.3f}-"
         f"{max(r['user_nlp_ratio'] for r in per_split):.3f} |"),
        "",
        "scikit-learn's GPC started from RBF(1.0) collapses to the constant predictor "
        "(amplitude at its lower bound, length scale at its upper bound, NLP = log 2) on this "
        "20-dimensional set, so the reference starts from RBF(sqrt(d)), the typical distance "
        "between standardised points."
        if results["full_rbf1"]["nlp"] > 0.69
        else "scikit-learn's GPC from RBF(1.0) is shown for completeness.",
        "",
    ]
    lines += [f"- {name}: {'PASS' if ok else 'FAIL'}" for name, ok in checks]
    text = "\n".join(lines) + "\n"
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        name = "speed.md" if args.max_basis is None else f"speed_max_basis_{args.max_basis}.md"
        (RESULTS / name).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
