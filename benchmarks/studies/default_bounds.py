"""Do the default estimators warn about their own bounds, and what does the fit give? Paired.

Issue 48, point 5. ``SparseGPClassifier(random_state=0)`` (``kernel=None``) on the classification
benchmark sets, and ``SparseGPRegressor(random_state=0)`` on 20,000 synthetic rows of 20
features of which 16 are irrelevant, fitted by two checkouts of the package: ``--ref`` (a git
ref, unpacked with ``git archive``) and this working tree (uncommitted changes included); with
``--cap C`` also this tree with the default classifier's amplitude cap (the upper bound of its
``ConstantKernel``, 100) set to ``C``, the alternative of widening the bound. Each fit records
the warnings it emitted by category, the test NLP (natural log, mean) and error, and the
fitted amplitude; each data set runs in its own process per checkout, one BLAS thread, the
checkouts in turn per data set.

The sets (classifier; labels made binary where the source has more classes, except letter):

- the Raetsch sets (``raetsch_*``: banana, breast_cancer, german, heart, image, ringnorm,
  titanic, waveform) on their first ``--splits`` realizations;
- the PMLB substitutes for the Raetsch sets missing offline (diabetis, flare_solar, splice,
  thyroid, twonorm; their seeded splits, features standardised on the training rows; splice
  and thyroid as the most frequent class against the rest), same realizations;
- letter (26 classes): 3,000 training and 5,000 test rows of a seeded permutation,
  standardised (``multiclass.py``'s split), one split;
- adult: ``--adult`` training rows (default 3,000) and 5,000 test rows of a seeded permutation
  per split (seed = split), standardised; ``--adult-splits`` splits (default 2).

The regressor: ``X`` standard normal (n x 20), ``f = sin(x0) + x1^2 / 2 - x2 x3 / 2``
(``paired_refs.py``'s law: 16 irrelevant features), ``y = f + 0.3 noise`` standardised,
20,000 training and 5,000 test rows; test NLPD and NMSE, and the length scales at their
upper bound.

Writes ``results/default_bounds_runs.jsonl`` (one line per fit) and ``results/default_bounds.md``
(``--tag`` renames both; per set: the ConvergenceWarnings of each checkout, mean test NLP and
error, the paired NLP difference with its t-test p-value and largest absolute difference).

Usage (from the repository root; with ``--cap``, 22 minutes' wall time on the shared 2-core
machine, the fits' CPU 6 minutes of it)::

    python benchmarks/studies/default_bounds.py --ref main --cap 1e4
    python benchmarks/studies/default_bounds.py --ref main --quick   # three sets, one split
    python benchmarks/studies/default_bounds.py --report
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

RAETSCH = ("banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic",
           "waveform")
SUBSTITUTES = {"diabetis": "pmlb_pima_subst_diabetis",
               "flare_solar": "pmlb_flare_subst_flare_solar",
               "splice": "pmlb_splice_subst_splice", "thyroid": "pmlb_new_thyroid_subst_thyroid",
               "twonorm": "pmlb_twonorm_subst_twonorm"}
CLASSIFIER_SETS = (*RAETSCH, *SUBSTITUTES, "letter", "adult")
QUICK_SETS = ("twonorm", "heart", "regressor")


def _standardised(X_train, X_test):
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (X_train - mean) / std, (X_test - mean) / std


def splits(name, n_splits, adult_rows, adult_splits):
    """``[(split, X_train, y_train, X_test, y_test)]`` of a classification set."""
    from _common.data import load_dataset

    if name in ("letter", "adult"):
        d = load_dataset(f"pmlb_{name}")
        X, y = np.asarray(d["X"], dtype=float), np.asarray(d["y"])
        n_train, seeds = (3000, [0]) if name == "letter" else (adult_rows, range(adult_splits))
        out = []
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(y.size)
            tr, te = perm[:n_train], perm[n_train : n_train + 5000]
            out.append((seed, *_split_arrays(X, y, tr, te, standardise=True)))
        return out
    file = f"raetsch_{name}" if name in RAETSCH else SUBSTITUTES[name]
    d = load_dataset(file)
    X, y = np.asarray(d["X"], dtype=float), np.asarray(d["y"])
    if name in ("splice", "thyroid"):  # the most frequent class against the rest
        values, counts = np.unique(y, return_counts=True)
        y = (y == values[np.argmax(counts)]).astype(int)
    return [(r, *_split_arrays(X, y, d["train_idx"][r], d["test_idx"][r],
                               standardise=name not in RAETSCH))
            for r in range(min(n_splits, d["train_idx"].shape[0]))]


def _split_arrays(X, y, tr, te, standardise):
    X_train, X_test = X[tr], X[te]
    if standardise:
        X_train, X_test = _standardised(X_train, X_test)
    return X_train, y[tr], X_test, y[te]


def _warnings(caught):
    counts = Counter(w.category.__name__ for w in caught)
    prefix = "The optimal value found for "
    bounds = sorted({str(w.message).split(" is close")[0].replace(prefix, "")
                     for w in caught if w.category.__name__ == "ConvergenceWarning"})
    return dict(counts), bounds


def _amplitudes(model):
    # one kernel per binary model (a multi-class kernel_ may be their CompoundKernel)
    kernels = getattr(model, "kernels_", None) or [model.kernel_]
    return [float(k.k1.constant_value) for k in kernels]


def child_classifier(name, cap, n_splits, adult_rows, adult_splits):
    """The default classifier on every split of ``name``; one JSON line per fit."""
    import time
    import warnings

    import skgpsparse
    from skgpsparse import SparseGPClassifier

    if cap is not None:
        import skgpsparse.classification._fitting as fitting

        fitting._MAX_AMPLITUDE = cap
    for split, X, y, X_t, y_t in splits(name, n_splits, adult_rows, adult_splits):
        tic = time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SparseGPClassifier(random_state=0).fit(X, y)
        cpu = time.process_time() - tic
        log_p = model.predict_log_proba(X_t)
        idx = np.searchsorted(model.classes_, y_t)
        counts, bounds = _warnings(caught)
        print(json.dumps({
            "estimator": "classifier", "dataset": name, "split": int(split), "n_train": y.size,
            "cpu_s": round(cpu, 2), "nlp": float(-np.mean(log_p[np.arange(y_t.size), idx])),
            "error": float(np.mean(model.predict(X_t) != y_t)), "warnings": counts,
            "at_bounds": bounds, "amplitude": _amplitudes(model),
            "package": str(Path(skgpsparse.__file__).parents[1]),
        }), flush=True)


def child_regressor(n=20000, n_test=5000):
    """The default regressor on the synthetic 20-feature set; one JSON line."""
    import time
    import warnings

    import skgpsparse
    from skgpsparse import SparseGPRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n + n_test, 20))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    noisy = f + 0.3 * rng.standard_normal(f.size)
    y = (noisy - noisy[:n].mean()) / noisy[:n].std()
    tic = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SparseGPRegressor(random_state=0).fit(X[:n], y[:n])
    cpu = time.process_time() - tic
    mean, std = model.predict(X[n:], return_std=True)
    var = std**2 + model.noise_variance_
    r = y[n:] - mean
    counts, bounds = _warnings(caught)
    scales = np.atleast_1d(model.kernel_.k2.length_scale)
    print(json.dumps({
        "estimator": "regressor", "dataset": "regressor", "split": 0, "n_train": n,
        "cpu_s": round(cpu, 2), "nlp": float(np.mean(0.5 * np.log(2 * np.pi * var)
                                                   + 0.5 * r**2 / var)),
        "error": float(np.mean(r**2) / np.var(y[n:])), "warnings": counts,
        "at_bounds": bounds, "switched_off": int(np.sum(np.isclose(np.log(scales),
                                                                     np.log(1e5)))),
        "package": str(Path(skgpsparse.__file__).parents[1]),
    }), flush=True)


def _unpack(ref, tmp):
    """``ref``'s package in a temporary folder (``git archive``); returns the folder."""
    path = Path(tmp) / "ref"
    path.mkdir()
    archive = Path(tmp) / "ref.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref, "skgpsparse"],
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(path, filter="data")
    return path


def _run(package_root, name, args, cap=None):
    env = dict(os.environ, PYTHONPATH=str(package_root), **ONE_THREAD)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name,
           "--splits", str(args.splits), "--adult", str(args.adult),
           "--adult-splits", str(args.adult_splits)]
    if cap is not None:
        cmd += ["--child-cap", repr(cap)]
    res = subprocess.run(cmd, env=env, cwd=str(HERE), capture_output=True, text=True,
                         check=False)
    if res.returncode:
        raise RuntimeError(f"{name} in {package_root} failed:\n{res.stderr[-3000:]}")
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def _p_value(a, b):
    from scipy.stats import ttest_rel

    a, b = np.asarray(a), np.asarray(b)
    if a.size < 2 or np.allclose(a, b, rtol=0, atol=0):
        return float("nan")
    return float(ttest_rel(a, b).pvalue)


def _commit():
    """This checkout's short commit, ``+`` when its package has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain",
                                                              "skgpsparse") else "")


def report(records):
    """The Markdown table of ``records`` (the JSON lines of one run)."""
    from _common.machine import machine

    sides = list(dict.fromkeys(r["side"] for r in records))
    first = records[0]
    lines = [
        "# The default estimators and their own bounds (issue 48, point 5)", "",
        (f"Command: `{first['command']}`. Date: {first.get('date', '?')}; the tree at "
         f"{first.get('tree_commit', '?')}. Machine: {machine()}; one BLAS thread per fit, "
         "CPU seconds."),
        (f"Checkouts: {', '.join(f'`{s}`' for s in sides)} (`tree` is the working tree; "
         "`tree, cap C` the same with the default classifier's amplitude cap at C)."), "",
        ("Per set: the fits' ConvergenceWarnings (total over splits), mean test NLP (the "
         "regressor: NLPD) and error (the regressor: NMSE) per checkout, and the NLP of each "
         "checkout after the first paired against the first: mean difference (negative: "
         "better), t-test p-value (nan: identical), largest absolute difference."), "",
    ]
    head = ["set", "splits"]
    for s in sides:
        head += [f"CW {s}", f"NLP {s}", f"err {s}"]
    for s in sides[1:]:
        head += [f"d NLP {s}", "p", "max abs d"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    names = list(dict.fromkeys(r["dataset"] for r in records))
    for name in names:
        by = {s: sorted((r for r in records if r["dataset"] == name and r["side"] == s),
                        key=lambda r: r["split"]) for s in sides}
        row = [name, str(len(by[sides[0]]))]
        for s in sides:
            if not by[s]:  # the cap's checkout fits no regressor
                row += ["-"] * 3
                continue
            cw = sum(r["warnings"].get("ConvergenceWarning", 0) for r in by[s])
            row += [str(cw), f"{np.mean([r['nlp'] for r in by[s]]):.4f}",
                    f"{np.mean([r['error'] for r in by[s]]):.4f}"]
        first = np.array([r["nlp"] for r in by[sides[0]]])
        for s in sides[1:]:
            other = np.array([r["nlp"] for r in by[s]])
            if other.size != first.size:
                row += ["-"] * 3
                continue
            row += [f"{np.mean(other - first):+.5f}", f"{_p_value(other, first):.3f}",
                    f"{np.max(np.abs(other - first)):.2e}"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "What the warnings named (per checkout, over every fit):", ""]
    for s in sides:
        named = Counter(b for r in records if r["side"] == s for b in r["at_bounds"])
        text = "; ".join(f"{k} ({v})" for k, v in named.most_common()) or "none"
        lines.append(f"- `{s}`: {text}")
    reg = [r for r in records if r["dataset"] == "regressor"]
    if reg:
        lines += ["", "Regressor, per-feature length scales at their upper bound 1e5 "
                  "(switched-off features): " + ", ".join(
                      f"`{r['side']}` {r['switched_off']}" for r in reg) + "."]
    fits = [r for r in records if r["estimator"] == "classifier"]
    if fits:
        capped = []
        for s in sides:
            mine = [r for r in fits if r["side"] == s]
            at_cap = sum(any(abs(a / _cap_of(s) - 1) < 1e-6 for a in r["amplitude"])
                         for r in mine)
            capped.append(f"`{s}` {at_cap} of {len(mine)}")
        lines += ["", "Classifier fits whose amplitude ended at its cap (within 1e-6 "
                  "relative), per checkout: " + ", ".join(capped) + "."]
    return "\n".join(lines) + "\n"


def _cap_of(side):
    return float(side.rsplit("cap ", 1)[1]) if "cap " in side else 100.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="main", help="the reference git ref")
    parser.add_argument("--cap", type=float, default=None,
                        help="also fit this tree with the default amplitude cap at CAP")
    parser.add_argument("--splits", type=int, default=5, help="realizations per small set")
    parser.add_argument("--adult", type=int, default=3000, help="adult training rows")
    parser.add_argument("--adult-splits", type=int, default=2)
    parser.add_argument("--sets", default=None, help="comma-separated subset of the sets")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_SETS)}, "
                        "one split")
    parser.add_argument("--report", action="store_true", help="rewrite the table from the runs")
    parser.add_argument("--tag", default="default_bounds",
                        help="results/TAG.md and results/TAG_runs.jsonl (default: %(default)s)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-cap", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))  # _common (never the repository root: the package
    # comes from PYTHONPATH, the checkout being measured)
    if args.child == "regressor":
        return child_regressor()
    if args.child:
        return child_classifier(args.child, args.child_cap, args.splits, args.adult,
                                args.adult_splits)
    runs, table_file = RESULTS / f"{args.tag}_runs.jsonl", RESULTS / f"{args.tag}.md"
    if args.report:
        lines = [json.loads(line) for line in runs.read_text().splitlines()]
        table_file.write_text(report(lines))
        return None
    if args.quick:
        args.splits, args.adult_splits = 1, 1
    names = (args.sets.split(",") if args.sets else
             list(QUICK_SETS) if args.quick else [*CLASSIFIER_SETS, "regressor"])
    command = "python benchmarks/studies/default_bounds.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    stamp = {"command": command, "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
             "tree_commit": _commit()}
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = [(f"ref {args.ref}", _unpack(args.ref, tmp), None), ("tree", ROOT, None)]
        if args.cap is not None:
            trees.append((f"tree, cap {args.cap:g}", ROOT, args.cap))
        for k, name in enumerate(names):
            order = trees if k % 2 == 0 else trees[::-1]  # load drift hits both alike
            for side, root, cap in order:
                if cap is not None and name == "regressor":
                    continue
                for rec in _run(root, name, args, cap):
                    rec.update(side=side, **stamp)
                    records.append(rec)
                    print(json.dumps({k: rec[k] for k in ("side", "dataset", "split", "cpu_s",
                                                          "nlp", "warnings")}), flush=True)
    order = {side: i for i, (side, _, _) in enumerate(trees)}
    records.sort(key=lambda r: (names.index(r["dataset"]), order[r["side"]], r["split"]))
    RESULTS.mkdir(exist_ok=True)
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    table = report(records)
    table_file.write_text(table)
    print(table)
    return None


if __name__ == "__main__":
    main()
