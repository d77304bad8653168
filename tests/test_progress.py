"""verbose: a first line as a fit starts, then step lines throttled in time (or every step)."""

import re

import numpy as np
import pytest
from sklearn.datasets import make_moons

from skgpsparse import SparseGPClassifier, SparseGPRegressor, _progress
from skgpsparse._progress import Progress


class _Clock:
    """A clock that advances one second each time it is read."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 1.0
        return self.t


def test_progress_throttles_step_lines(capsys):
    clock = _Clock()
    progress = Progress("M", verbose=1, interval=5.0, clock=clock)
    progress.line("start")
    calls = []
    for i in range(20):
        progress.step(lambda i=i: calls.append(i) or f"step {i}")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[M] start"
    # a line only when 5 clock seconds passed since the last one; unprinted steps format nothing
    assert 2 <= len(out) - 1 <= 4 and len(calls) == len(out) - 1
    Progress("M", verbose=2, clock=clock).step(lambda: "every")
    Progress("M", verbose=0, clock=clock).line("never")
    assert capsys.readouterr().out.splitlines() == ["[M] every (1.0 s)"]


@pytest.mark.parametrize("model_name", ["regressor", "classifier"])
def test_first_line_precedes_the_work_and_steps_follow_the_clock(model_name, monkeypatch,
                                                                 capsys):
    monkeypatch.setattr(_progress, "_now", _Clock())
    X, y = make_moons(n_samples=300, noise=0.3, random_state=0)
    if model_name == "regressor":
        model = SparseGPRegressor(max_basis=30, max_iter=1, verbose=1, random_state=0)
        name, target = "SparseGPRegressor", np.sin(3 * X[:, 0])
    else:
        model = SparseGPClassifier(max_basis=30, max_iter=1, verbose=1, random_state=0)
        name, target = "SparseGPClassifier", y
    model.fit(X, target)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"[{name}] fit: 300 rows x 2 features, basis of 30")
    assert "the fit needs about" in out[0] and out[0].endswith(" GB")
    steps = [line for line in out if "basis " in line and "/30" in line]
    # one clock second per greedy step: a step line about every 5 steps, not every step
    assert 3 <= len(steps) <= 10


@pytest.mark.parametrize("verbose", [0, 2])
def test_verbose_two_prints_every_step_and_zero_nothing(verbose, capsys):
    X, y = make_moons(n_samples=120, noise=0.3, random_state=0)
    SparseGPClassifier(max_basis=12, max_iter=1, verbose=verbose, random_state=0).fit(X, y)
    SparseGPRegressor(max_basis=12, max_iter=1, verbose=verbose, random_state=0).fit(
        X, np.sin(3 * X[:, 0])
    )
    out = capsys.readouterr().out.splitlines()
    steps = [line for line in out if "basis " in line and "/12" in line]
    assert len(steps) == (24 if verbose == 2 else 0)
    if verbose == 0:
        assert out == []


class _SlowClock:
    """A clock that advances more than the interval each time it is read: every step prints."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += _progress.INTERVAL + 1.0
        return self.t


def _phases(out):
    """The phases named by the step lines (those ending in the elapsed time, one decimal)."""
    return {line.split("] ")[1].split(":")[0].split(" ")[0] for line in out
            if re.search(r" \(\d+\.\d s\)$", line)}


@pytest.mark.parametrize(
    "params, phases",
    [
        # the default regressor: the subset start's and the refinement's searches, the
        # selection, the noise calibration's passes over the rows
        ({}, {"hyperparameters", "basis", "refine_basis", "noise"}),
        # without refinement: selection and learning alternate
        ({"refine_basis": 0}, {"hyperparameters", "basis", "noise"}),
    ],
)
def test_every_regression_phase_reports_at_verbose_one(params, phases, monkeypatch, capsys):
    # A 20,000-row fit printed its first line, then nothing during the refinement (79 s of
    # 83 s): each phase's steps now go through Progress.step, throttled to one line per
    # INTERVAL at verbose=1; with a clock that passes INTERVAL between two reads every step
    # prints, so each phase that runs shows up.
    monkeypatch.setattr(_progress, "_now", _SlowClock())
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(80, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(80)
    SparseGPRegressor(max_basis=10, max_iter=2, verbose=1, random_state=0, **params).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert _phases(out) == phases
    refine = [line for line in out if line.startswith("[SparseGPRegressor] refine_basis: ")]
    assert (len(refine) > 3) == ("refine_basis" in phases)
    assert any("noise calibration: evaluation 1" in line for line in out)


@pytest.mark.parametrize(
    "params, phases",
    [
        ({}, {"hyperparameters", "basis", "EP"}),  # the all-rows EP posterior
        ({"posterior": "basis", "hyperparameter_objective": "nlp"}, {"hyperparameters", "basis"}),
        ({"posterior": "basis", "hyperparameter_objective": "evidence"},
         {"hyperparameters", "basis"}),
    ],
)
def test_every_classification_phase_reports_at_verbose_one(params, phases, monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_now", _SlowClock())
    X, y = make_moons(n_samples=80, noise=0.3, random_state=0)
    SparseGPClassifier(max_basis=10, max_iter=2, verbose=1, random_state=0, **params).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert _phases(out) == phases
    if "EP" in phases:
        assert any(line.startswith("[SparseGPClassifier] EP sweep 2: largest site change ")
                   for line in out)
