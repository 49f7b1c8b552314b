"""A real classifier for PUMA accuracy studies: an MLP trained on scikit-learn's bundled digits data.

``digits_mlp`` trains ``sklearn.neural_network.MLPClassifier`` (64 → hidden → 10, ReLU, Adam,
``random_state=seed``) on a stratified 70 % split of the 1,797 8×8 digit images (pixels scaled to
[0, 1]; no download), exports it to ONNX and re-imports it. :func:`digits_split` returns the held-out
30 % for measuring accuracy. Training takes about a second and is cached per (hidden, seed).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from solvermap.ir.workloads import Param, register, seed_param
from solvermap.ir.workloads.puma_models import OnnxWorkload, mlp_model


@lru_cache(maxsize=4)
def digits_split(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, X_test, y_train, y_test) with pixels in [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    return tuple(train_test_split(x, data.target, test_size=0.3, random_state=seed, stratify=data.target))


@lru_cache(maxsize=4)
def trained_classifier(hidden: int = 64, seed: int = 0):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    x_train, _, y_train, _ = digits_split(seed)
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), activation="relu", max_iter=300, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x_train, y_train)
    return clf


@register("digits_mlp", "puma", "MLP 64-hidden-10 trained on sklearn digits (real weights), ONNX round trip",
          params={"hidden": Param(64, "hidden units (trained by scikit-learn: large values train slowly)", 1, 4096),
                  "seed": seed_param("seed of the data split and the training")})
def digits_mlp(hidden: int = 64, seed: int = 0) -> OnnxWorkload:
    clf = trained_classifier(hidden, seed)
    weights = [(w.T, b) for w, b in zip(clf.coefs_, clf.intercepts_)]
    return mlp_model([64, hidden, 10], "digits_mlp", seed, "Relu", weights=weights)
