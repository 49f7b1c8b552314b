"""PROMISE's non-DNN benchmarks (seed 000 Table 4.2, L828–837) on sklearn data, as PROMISE task graphs.

==================  ======================================  =====================  ==========================
workload            computation (vecOp / redOp)             data                   seed (Table 4.2)
==================  ======================================  =====================  ==========================
``matched_filter``  x·t > θ, one template (mult / sum)      digits 16×16, "0" vs rest  gun-shot matched filter
``template_l1``     argmin_j Σ|w_j − x| (sub / abs)         10 class-mean templates    template matching L1
``template_l2``     argmin_j Σ(w_j − x)² (sub / square)     10 class-mean templates    template matching L2
``svm``             sign(w·x + b) (mult / sum)              LinearSVC, digits < 5 vs ≥ 5   linear SVM (2 classes)
``knn_l1``          3-NN vote, L1 distance (sub / abs)      256 stored, 200 queries         k-NN L1
``knn_l2``          3-NN vote, L2 distance (sub / square)   256 stored, 200 queries         k-NN L2
``linreg``          slope = Σ(x−x̄)(y−ȳ)/Σ(x−x̄)², 4 tasks   make_regression, 8192 pts  linear regression
==================  ======================================  =====================  ==========================

The digits are 8×8 and are upsampled to 16×16 (N = 256) to match the seed's 16² kernels (assumption A11).
Each kernel is one PROMISE AbstractTask (L747), except ``linreg`` with four (mean, mean, square, sign_mult).
:meth:`PromiseKernel.decisions` runs the kernel exactly; the PROMISE functional model
(``solvermap.hardware.approxhpvm.promise_sim.kernel_decisions``) runs it at a swing and applies the kernel's
own decision rule (:meth:`PromiseKernel.decide`), so the IR knows no hardware.
The mismatch is p_model − p_PROMISE (L782): the accuracy the PROMISE run loses against the exact run,
measured on the true labels. For ``linreg``, which is not a classifier (the seed leaves it out of its swing
study, L869), it is the relative error of the slope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.workloads import register
from solvermap.ir.workloads.approxhpvm_tensor_ops import digits


@dataclass(frozen=True)
class KernelTask:
    name: str
    kind: str  # "dot" | "l1" | "l2"
    dot_length: int
    rows: int  # stored vectors W_j (RPT_NUM, L707)


@dataclass
class PromiseKernel:
    name: str
    kind: str  # dot | l1 | l2 | linreg
    graph: DataflowGraph
    tasks: tuple[KernelTask, ...]
    w: np.ndarray  # stored rows (M × N)
    x: np.ndarray  # queries (Q × N)
    labels: np.ndarray | None = None  # of stored rows (k-NN) or template classes
    bias: float = 0.0
    threshold: float = 0.0
    y: np.ndarray | None = None  # linreg targets
    truth: np.ndarray | None = None  # true label of every query (classifiers)
    description: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def scores(self) -> np.ndarray:
        """Exact scores of every query against every stored row: dot products, or L1 / L2 distances."""
        if self.kind == "dot":
            return self.x @ self.w.T
        diff = self.w[None, :, :] - self.x[:, None, :]
        return np.abs(diff).sum(axis=2) if self.kind == "l1" else (diff * diff).sum(axis=2)

    def decide(self, scores: np.ndarray) -> np.ndarray:
        """The kernel's decision for every query from its scores (exact, or PROMISE's: ``promise_sim``)."""
        if self.name == "matched_filter":
            return (scores[:, 0] > self.threshold).astype(int)
        if self.name == "svm":
            return (scores[:, 0] + self.bias > 0).astype(int)
        if self.name.startswith("template"):
            return np.argmin(scores, axis=1)
        nearest = np.argsort(scores, axis=1, kind="stable")[:, :3]
        votes = self.labels[nearest]
        return np.array([np.bincount(v, minlength=10).argmax() for v in votes])

    def slope(self) -> float:
        """linreg, exactly: slope = Σ(x−x̄)(y−ȳ) / Σ(x−x̄)²."""
        x, y = self.x[:, 0], self.y
        n = len(x)
        ones = np.ones(n)
        mx, my = float(x @ ones) / n, float(y @ ones) / n
        dx, dy = x - mx, y - my
        return float(dx @ dy) / float(dx @ dx)

    def decisions(self) -> np.ndarray:
        """The exact run's decisions (the slope for linreg)."""
        if self.kind == "linreg":
            return np.array([self.slope()])
        return self.decide(self.scores())

    def accuracy(self, decisions: np.ndarray) -> float:
        return float(np.mean(decisions == self.truth))

    def mismatch(self, decisions: np.ndarray) -> float:
        """p_model − p_PROMISE (L782): the accuracy lost against the exact run; relative slope error for linreg."""
        exact = self.exact()
        if self.kind == "linreg":
            return float(abs(decisions[0] - exact[0]) / abs(exact[0]))
        return self.accuracy(exact) - self.accuracy(decisions)

    def exact(self) -> np.ndarray:
        if "exact" not in self.meta:
            self.meta["exact"] = self.decisions()
        return self.meta["exact"]


def _graph(name: str, tasks: tuple[KernelTask, ...]) -> DataflowGraph:
    g = DataflowGraph(name, {"family": "approxhpvm", "kind": "promise-kernel"})
    g.add_node("input", NodeKind.IO, op="input")
    previous = "input"
    vec = {"dot": ("mult", "sum"), "l1": ("sub", "abs"), "l2": ("sub", "square")}
    for t in tasks:
        g.add_node(t.name, op="promise.task", resources={"macs": t.dot_length * t.rows},
                   attrs={"vecOp": vec[t.kind][0], "redOp": vec[t.kind][1], "vectorLen": t.dot_length,
                          "loopIterations": t.rows})
        g.add_edge(previous, t.name, "tensor")
        previous = t.name
    return g.validate()


@lru_cache(maxsize=16)
def build_kernel(name: str) -> PromiseKernel:
    data = digits(upsample=2)
    xtr, ytr, xte, yte = data.x_train, data.y_train, data.x_test, data.y_test
    if name == "matched_filter":
        template = xtr[ytr == 0].mean(axis=0)
        template = template / np.linalg.norm(template)
        s_pos, s_neg = xtr[ytr == 0] @ template, xtr[ytr != 0] @ template
        kernel = PromiseKernel(name, "dot", None, (KernelTask("filter", "dot", 256, 1),), template[None, :], xte,
                               truth=(yte == 0).astype(int), threshold=float((s_pos.mean() + s_neg.mean()) / 2))
    elif name in ("template_l1", "template_l2"):
        kind = name[-2:]
        templates = np.stack([xtr[ytr == c].mean(axis=0) for c in range(10)])
        kernel = PromiseKernel(name, kind, None, (KernelTask("match", kind, 256, 10),), templates, xte,
                               labels=np.arange(10), truth=yte)
    elif name == "svm":
        from sklearn.svm import LinearSVC

        clf = LinearSVC(C=0.05, random_state=0, max_iter=20000).fit(xtr, (ytr >= 5).astype(int))
        kernel = PromiseKernel(name, "dot", None, (KernelTask("svm", "dot", 256, 1),), clf.coef_.copy(), xte,
                               truth=(yte >= 5).astype(int), bias=float(clf.intercept_[0]))
    elif name in ("knn_l1", "knn_l2"):
        kind = name[-2:]
        rng = np.random.default_rng(0)
        stored = np.sort(rng.choice(len(xtr), 256, replace=False))
        queries = np.sort(rng.choice(len(xte), 200, replace=False))  # 200 test queries, as the seed (Table 4.2)
        kernel = PromiseKernel(name, kind, None, (KernelTask("distance", kind, 256, 256),), xtr[stored], xte[queries],
                               labels=ytr[stored], truth=yte[queries])
    elif name == "linreg":
        from sklearn.datasets import make_regression

        x, y = make_regression(n_samples=8192, n_features=1, noise=10.0, random_state=0)
        tasks = (KernelTask("mean_x", "dot", 8192, 1), KernelTask("mean_y", "dot", 8192, 1),
                 KernelTask("square", "dot", 8192, 1), KernelTask("sign_mult", "dot", 8192, 1))
        kernel = PromiseKernel(name, "linreg", None, tasks, np.ones((1, 8192)), x, y=y)
    else:  # pragma: no cover - registration below lists the names
        raise KeyError(name)
    kernel.graph = _graph(name, kernel.tasks)
    kernel.description = f"PROMISE benchmark {name} (seed 000 Table 4.2) on sklearn data"
    return kernel


for _name, _desc in (
    ("matched_filter", "PROMISE matched filter: one 256-tap template, threshold (Table 4.2)"),
    ("template_l1", "PROMISE template matching, L1 distance to 10 class templates (Table 4.2)"),
    ("template_l2", "PROMISE template matching, L2 distance to 10 class templates (Table 4.2)"),
    ("svm", "PROMISE linear SVM, 2 classes, 256 features (Table 4.2)"),
    ("knn_l1", "PROMISE 3-NN with L1 distance, 256 stored 256-d digits (Table 4.2)"),
    ("knn_l2", "PROMISE 3-NN with L2 distance, 256 stored 256-d digits (Table 4.2)"),
    ("linreg", "PROMISE linear regression, 8192 2-D points, 4 tasks (Table 4.2)"),
):
    register(_name, "approxhpvm", _desc)(lambda _n=_name: build_kernel(_n))
