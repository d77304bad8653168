"""The command-line report (``python -m skgpsparse``) on users' CSV files, good and bad."""

import io
import subprocess
import sys

import numpy as np
import pytest

from skgpsparse._cli._demo import main


def _write_csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def classification_csv(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    labels = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "spam", "ham")
    rows = [[*np.round(x, 4), label] for x, label in zip(X, labels)]
    return _write_csv(tmp_path / "mail.csv", ["a", "b", "c", "kind"], rows)


@pytest.fixture
def regression_csv(tmp_path):
    rng = np.random.RandomState(1)
    X = rng.uniform(-2, 2, size=(120, 2))
    y = 100 + 20 * np.sin(X[:, 0]) + X[:, 1] + rng.normal(scale=0.5, size=120)
    rows = [[*np.round(x, 4), round(t, 4)] for x, t in zip(X, y)]
    return _write_csv(tmp_path / "sine.csv", ["x1", "x2", "target"], rows)


def _run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def test_csv_classification_report_beside_the_full_gp(classification_csv):
    code, report = _run(["--csv", classification_csv, "--target", "kind", "--max-basis", "15"])
    assert code == 0
    assert "classification" in report and "60 training rows" in report
    lines = [line.split() for line in report.splitlines() if line.strip().startswith(
        ("skgpsparse", "scikit-learn"))]
    sparse, full = lines[-2], lines[-1]
    assert sparse[1] == "15"  # basis size
    accuracy, nlp = float(sparse[-2]), float(sparse[-1])
    assert 0.8 <= accuracy <= 1.0 and 0.0 < nlp < 0.6  # a linear rule with 120 rows
    assert float(full[-2]) >= 0.8


def test_csv_regression_report_in_original_units(regression_csv):
    code, report = _run(["--csv", regression_csv, "--target", "target", "--max-basis", "20"])
    assert code == 0 and "regression" in report
    sparse = [line.split() for line in report.splitlines()
              if line.strip().startswith("skgpsparse")][-1]
    rmse, nlpd = float(sparse[-2]), float(sparse[-1])
    # Noise 0.5 around a smooth function of amplitude 20: an RMSE near the noise level shows
    # the predictions were mapped back to the original units (y is near 100).
    assert 0.3 < rmse < 2.0
    assert 0.0 < nlpd < 3.0


def test_no_baseline_and_explicit_task(regression_csv):
    code, report = _run(["--csv", regression_csv, "--target", "target", "--no-baseline",
                         "--task", "regression", "--max-basis", "10"])
    assert code == 0
    assert "scikit-learn full GP" not in report.split("model")[-1]


@pytest.mark.parametrize(
    "content, target, message",
    [
        (None, "y", "cannot read"),
        ("a,b,y\n1,2,3\n4,5,6\n", "z", "target column 'z' is not in"),
        ("a,b,y\n1,2,3\n4,5\n", "y", "line 3 has 2 fields"),
        ("a,b,y\n1,x,0\n4,5,1\n", "y", "non-numeric value 'x'"),
        ("a,b,y\n1,nan,0\n4,5,1\n", "y", "missing or infinite"),
        ("a,b,y\n", "y", "needs a header row and at least one data row"),
        ("", "y", "needs a header row and at least one data row"),
        ("a,b,y\n1,2,1\n3,4,1\n5,6,1\n", "y", "target column 'y' holds a single class (1.0)"),
        ("a,y\n1,spam\n2,spam\n", "y", "holds a single class ('spam'); classification needs"),
        ("y\n1\n2\n", "y", "no feature columns"),
    ],
)
def test_bad_files_give_one_clear_line(tmp_path, capsys, content, target, message):
    path = tmp_path / "data.csv"
    if content is not None:
        path.write_text(content)
    code, _ = _run(["--csv", str(path), "--target", target])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and len(err.splitlines()) == 1


def test_non_numeric_target_cannot_be_regression(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "y"], [[i, "cat" if i % 2 else "dog"]
                                                       for i in range(20)])
    code, _ = _run(["--csv", path, "--target", "y", "--task", "regression"])
    assert code == 2 and "not numeric" in capsys.readouterr().err


def test_help_and_argument_errors():
    result = subprocess.run([sys.executable, "-m", "skgpsparse", "--help"],
                            capture_output=True, text=True, check=True)
    assert "--csv" in result.stdout and "--max-basis" in result.stdout
    result = subprocess.run([sys.executable, "-m", "skgpsparse", "--csv", "x.csv"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "--csv and --target go together" in result.stderr


def test_bad_file_exits_with_status_2_and_no_traceback(tmp_path):
    # The command as a user runs it: a single-class target used to end in the estimator's
    # ValueError traceback and status 1.
    path = _write_csv(tmp_path / "one.csv", ["a", "b", "y"], [[i, -i, 1] for i in range(30)])
    result = subprocess.run([sys.executable, "-m", "skgpsparse", "--csv", path, "--target", "y"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "single class" in result.stderr


def test_estimator_refusal_is_one_line(monkeypatch, capsys, regression_csv):
    # Whatever else an estimator's input checks refuse is reported as a problem with the file.
    import skgpsparse._cli._demo as demo

    class Refuses:
        def fit(self, X, y):
            raise ValueError("Input y has\na problem.")

    monkeypatch.setattr(demo, "_models", lambda *args: [("skgpsparse", Refuses())])
    code, report = _run(["--csv", regression_csv, "--target", "target"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and report.endswith("skgpsparse            \n")
    assert err == ("python -m skgpsparse: error: skgpsparse cannot fit "
                   f"{regression_csv!r}: Input y has a problem.")
