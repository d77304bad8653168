"""More than two classes: one-vs-rest binary models, independent or sharing a kernel.

- :mod:`._one_vs_rest`: the dispatch (``multi_class``), the independent fits;
- :mod:`._shared_learning`: the shared kernel and per-class biases learned on a stratified
  subsample (the summed evidence and its gradient);
- :mod:`._shared_fit`: each class's basis and EP under the shared kernel;
- :mod:`._combination`: how the one-vs-rest probabilities combine into class probabilities.
"""
