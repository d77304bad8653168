"""The one-vs-rest default at scale: multi_class="auto" (the shared fit) against "independent".

Synthetic rows (d = 10, three classes by thresholding sin(x0) + x1^2/2 - x2 x3/2 + noise at its
terciles), 20,000 test rows, the default constructor otherwise, one BLAS thread.
The shared fit's logit weight t and the test NLP of its models normalised (t = 0) are printed too.
Usage: ``python benchmarks/studies/multiclass_scale.py auto 1e5 [seed]`` (mode, training rows, the
estimator's random_state, 0 by default; the data are the same for every seed).
"""
import sys, time, resource, numpy as np, warnings
from threadpoolctl import threadpool_limits
from skgpsparse import SparseGPClassifier
from sklearn.metrics import log_loss
mode = sys.argv[1]; n = int(float(sys.argv[2])); seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rng = np.random.RandomState(0)
d = 10
X = rng.randn(n + 20000, d)
f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 - X[:, 2] * X[:, 3] / 2 + 0.3 * rng.randn(n + 20000)
y = np.digitize(f, np.quantile(f, [1/3, 2/3]))
Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
with threadpool_limits(1, "blas"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t = time.process_time(); w = time.time()
    clf = SparseGPClassifier(multi_class=mode, random_state=seed).fit(Xtr, ytr)
    cpu, wall = time.process_time() - t, time.time() - w
    p = clf.predict_proba(Xte)
    # the same binary models' probabilities normalised (t = 0: the combination before 2026-11-29)
    q = np.column_stack([np.exp(e._predictor.log_proba(Xte, 1.0)) for e in clf.estimators_])
    nlp_t0 = log_loss(yte, q / q.sum(1, keepdims=True))
print(f"{mode} n={n} seed={seed} classes=3 d={d}: fit CPU {cpu:.1f} s wall {wall:.1f} s, test NLP {log_loss(yte, p):.4f}, "
      f"error {np.mean(clf.classes_[p.argmax(1)] != yte):.4f}, peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/2**20:.2f} GB, ran {clf.multi_class_}, "
      f"logit weight t {clf.logit_weight_:.3f} (test NLP at t = 0: {nlp_t0:.4f})", flush=True)
