"""The command-line report: a sparse GP beside scikit-learn's full GP on the same data."""

import argparse
import csv
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

__all__ = ["main"]

_DESCRIPTION = """\
Fit skgpsparse's sparse GP and scikit-learn's full GP on the same data and print a report:
rows, basis size, fit time, and test accuracy / log loss (classification) or RMSE / NLPD
(regression). Both models start from the same kernel (for regression an RBF with one length
scale per feature) and learn its hyperparameters; for classification the sparse GP's default
kernel may then take one length scale per feature, when its evidence pays the charge for
them (the full GP's fit with them would take minutes). With no arguments it runs on built-in
generated data, one classification and one regression problem. With --csv it runs on your
file (numeric feature columns; the target column may hold labels of any kind for
classification).
"""


class DataError(Exception):
    """A problem with the user's data, reported as one line."""


def _builtin_problems(random_state):
    """Two generated problems: 2,000 training rows for classification (where the full GP's
    O(n^3) fit takes tens of seconds), 1,000 for regression."""
    from sklearn.datasets import make_classification, make_friedman1

    Xc, yc = make_classification(
        n_samples=4000,
        n_features=8,
        n_informative=5,
        n_redundant=1,
        flip_y=0.03,
        class_sep=0.8,
        random_state=random_state,
    )
    Xr, yr = make_friedman1(n_samples=2000, n_features=8, noise=0.5, random_state=random_state)
    return [
        ("classification", "make_classification", Xc, yc),
        ("regression", "make_friedman1", Xr, yr),
    ]


def _read_csv(path, target):
    """Read a CSV with a header row; return (X, y, task_guess)."""
    try:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise DataError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path!r} is not a readable CSV file: {exc}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise DataError(f"{path!r} needs a header row and at least one data row")
    header = [name.strip() for name in rows[0]]
    if target not in header:
        raise DataError(
            f"target column {target!r} is not in {path!r}; columns are: {', '.join(header)}"
        )
    width = len(header)
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise DataError(
                f"{path!r} line {number} has {len(row)} fields, the header has {width}"
            )
    t = header.index(target)
    y_raw = np.array([row[t].strip() for row in rows[1:]])
    feature_names = [name for i, name in enumerate(header) if i != t]
    if not feature_names:
        raise DataError(f"{path!r} has no feature columns besides the target {target!r}")
    X = np.empty((len(rows) - 1, width - 1))
    for j, i in enumerate(k for k in range(width) if k != t):
        for r, row in enumerate(rows[1:]):
            try:
                X[r, j] = float(row[i])
            except ValueError:
                raise DataError(
                    f"column {header[i]!r} holds a non-numeric value {row[i]!r} on line "
                    f"{r + 2}; encode categorical features as numbers first"
                ) from None
    if not np.all(np.isfinite(X)):
        raise DataError(f"{path!r} has missing or infinite feature values; impute them first")
    try:
        y = y_raw.astype(float)
        numeric = bool(np.all(np.isfinite(y)))
    except ValueError:
        y, numeric = y_raw, False
    if numeric and np.all(y == np.round(y)) and len(np.unique(y)) <= 20:
        task = "classification"
    else:
        task = "regression" if numeric else "classification"
    return X, y, task


def _nlpd(y, mean, std):
    """Mean negative log predictive density of a Gaussian prediction."""
    var = np.maximum(std**2, 1e-300)
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


def _fit_timed(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return time.perf_counter() - start


def _evaluate(task, model, X_train, y_train, X_test, y_test, y_shift=0.0, y_scale=1.0):
    """Fit one model and return its row of the report."""
    from sklearn.metrics import accuracy_score, log_loss, mean_squared_error

    seconds = _fit_timed(model, X_train, y_train)
    basis = getattr(model, "basis_indices_", None)
    if basis is None and hasattr(model, "estimators_"):  # one-vs-rest: the largest basis
        basis = max((e.basis_indices_ for e in model.estimators_), key=len)
    row = {"basis": len(basis) if basis is not None else len(X_train), "fit_s": seconds}
    if task == "classification":
        proba = model.predict_proba(X_test)
        row["accuracy"] = accuracy_score(y_test, model.classes_[np.argmax(proba, axis=1)])
        row["nlp"] = log_loss(y_test, proba, labels=model.classes_)
    else:
        # Targets were standardised by the caller (y_scale); report in the original units.
        mean, std = model.predict(X_test, return_std=True)
        # sklearn's GPR with a WhiteKernel: std already includes the noise.
        noise = getattr(model, "noise_variance_", 0.0)
        mean, std = mean * y_scale + y_shift, np.sqrt(std**2 + noise) * y_scale
        row["rmse"] = float(np.sqrt(mean_squared_error(y_test, mean)))
        row["nlpd"] = _nlpd(y_test, mean, std)
    return row


def _models(task, max_basis, random_state, n_features):
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    # Both models start from the same kernel.
    if task == "classification":
        # The sparse classifier's default kernel: C(1) * RBF(sqrt(d)) with the amplitude
        # capped at 100, then one length scale per feature if the evidence pays the charge
        # for them. The full GP learns the shared length scale from the same start (with one
        # per feature its fit would take minutes on 2,000 rows).
        kernel = ConstantKernel(1.0, (1e-5, 100.0)) * RBF(np.sqrt(n_features))
        sparse = SparseGPClassifier(max_basis=max_basis, random_state=random_state)
        full = GaussianProcessClassifier(kernel, random_state=random_state)
    else:
        # One length scale per feature (ARD): with a single one both GPs underfit
        # make_friedman1's unequally relevant features (test RMSE 0.93 sparse and 0.64 full,
        # against 0.50 for both with ARD).
        ard = RBF(np.ones(n_features))
        sparse = SparseGPRegressor(
            ConstantKernel() * ard, max_basis=max_basis, random_state=random_state
        )
        full = GaussianProcessRegressor(
            ConstantKernel() * ard + WhiteKernel(0.1),
            random_state=random_state,
        )
    return [("skgpsparse", sparse), ("scikit-learn full GP", full)]


def _report(task, name, X, y, max_basis, baseline, random_state, out):
    stratify = y if task == "classification" else None
    try:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.5, random_state=random_state, stratify=stratify
        )
    except ValueError as exc:
        raise DataError(f"cannot split the data for testing: {exc}") from None
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    y_shift, y_scale = 0.0, 1.0
    if task == "regression":
        # Standardise the targets for both models (zero-mean GP priors), so that every noise
        # variance is in the same units; metrics are reported in the original units.
        y_train, y_test = y_train.astype(float), y_test.astype(float)
        y_shift, y_scale = float(np.mean(y_train)), float(np.std(y_train)) or 1.0
        y_train = (y_train - y_shift) / y_scale
    basis = min(max_basis, len(X_train))
    print(
        f"\n{task}: {name}, {len(X_train)} training rows, {len(X_test)} test rows, "
        f"{X.shape[1]} features",
        file=out,
    )
    if task == "classification":
        header = f"  {'model':<22}{'basis':>7}{'fit (s)':>10}{'accuracy':>10}{'NLP':>9}"
    else:
        header = f"  {'model':<22}{'basis':>7}{'fit (s)':>10}{'RMSE':>10}{'NLPD':>9}"
    print(header, file=out)
    for label, model in _models(task, basis, random_state, X.shape[1]):
        if label != "skgpsparse" and not baseline:
            continue
        # The model's name first, its figures when its fit is done (the full GP takes a while).
        print(f"  {label:<22}", end="", file=out, flush=True)
        try:
            row = _evaluate(task, model, X_train, y_train, X_test, y_test, y_shift, y_scale)
        except ValueError as exc:
            # The estimators' input checks: what they refuse is a problem with the file.
            print(file=out, flush=True)
            reason = " ".join(str(exc).split())
            raise DataError(f"{label} cannot fit {name!r}: {reason}") from None
        except BaseException:
            print(file=out, flush=True)  # end the line before the error is reported
            raise
        if task == "classification":
            scores = f"{row['accuracy']:>10.3f}{row['nlp']:>9.3f}"
        else:
            scores = f"{row['rmse']:>10.3f}{row['nlpd']:>9.3f}"
        print(f"{row['basis']:>7d}{row['fit_s']:>10.2f}{scores}", file=out, flush=True)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m skgpsparse",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--csv", metavar="PATH", help="a CSV file with a header row")
    parser.add_argument("--target", metavar="COLUMN", help="the target column of --csv")
    parser.add_argument(
        "--task",
        choices=["classification", "regression"],
        help="default: guessed from the target column",
    )
    parser.add_argument(
        "--max-basis",
        type=int,
        default=200,
        metavar="N",
        help="basis vectors of the sparse GP (default: 200)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip scikit-learn's full GP (O(n^3): slow beyond a few thousand rows)",
    )
    parser.add_argument(
        "--random-state",
        type=int,
        default=0,
        metavar="SEED",
        help="seed of the data split and the models (default: 0)",
    )
    return parser


def main(argv=None, out=sys.stdout):
    """Run the report; return the process exit code.

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments (``sys.argv[1:]`` when None).
    out : file-like, default=sys.stdout
        Where the report is written.

    Returns
    -------
    code : int
        0 on success, 2 for bad arguments or an unusable data file.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_basis < 1:
        parser.error(f"--max-basis must be a positive integer, got {args.max_basis}")
    if (args.csv is None) != (args.target is None):
        parser.error("--csv and --target go together")
    try:
        if args.csv is None:
            problems = _builtin_problems(args.random_state)
        else:
            X, y, guess = _read_csv(args.csv, args.target)
            task = args.task or guess
            if task == "regression" and y.dtype.kind not in "fiu":
                raise DataError(
                    f"target column {args.target!r} is not numeric; use --task classification"
                )
            classes = np.unique(y)
            if task == "classification" and classes.size < 2:
                raise DataError(
                    f"target column {args.target!r} holds a single class ({classes[0].item()!r}); "
                    f"classification needs at least two"
                )
            problems = [(task, args.csv, X, y)]
        print(
            "skgpsparse: sparse GP vs scikit-learn's full GP (test metrics on a 50% "
            "held-out split)",
            file=out,
        )
        for task, name, X, y in problems:
            _report(task, name, X, y, args.max_basis, not args.no_baseline, args.random_state, out)
    except DataError as exc:
        print(f"python -m skgpsparse: error: {exc}", file=sys.stderr)
        return 2
    return 0
