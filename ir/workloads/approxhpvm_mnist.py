"""ApproxHPVM's networks at the seed's MNIST shapes (seed 000 Table 5.3, L1189–1191), trained on upscaled digits.

``lenet_mnist``: Conv 32 (5×5, pad 2) + tanh + max-pool 2, Conv 64 (5×5, pad 2) + tanh + max-pool 2, FC 3136→1024 +
tanh, FC 1024→10 + tanh — the shapes of HPVM's ``lenet_mnist_cudnn.cpp`` (32·1·5·5, 64·32·5·5, 3136·1024, 1024·10),
with 5×5 kernels and a 1-channel Conv1 as the seed implies (L1248, L1275).
``dnn1_mnist``, ``dnn2_mnist``, ``dnn3_mnist``: the tanh MLPs 784-128-10, 784-256-128-10 and 784-512-256-128-10 of
PROMISE's DNN-1/2/3 (L874).

Every layer lowers to conv/GEMM + bias add + tanh (+ pooling), the output layer included (L1187; HPVM's LeNet
also ends in tanh, then a softmax that does not change the predicted class and that the seed's layer tables
leave out).

Data. MNIST is not available offline; the only handwritten digits shipped with the environment are sklearn's
``load_digits`` (1,797 images of 8×8 pixels, 16 grey levels). They are upscaled the way MNIST was made from
NIST: each digit is resized to a 20×20 box (bilinear interpolation, ``scipy.ndimage.zoom`` with order 1, a factor
of 2.5) and centred in a 28×28 frame with a 4-pixel zero border, values in [0, 1]. The split is the 8×8
workloads' (50/50, stratified, seed 0: 898 training and 899 test images), standing in for the seed's 5,000 /
5,000 MNIST split (L1191). The images are smoother than MNIST's, so accuracies are not comparable with the seed's
Fig. 5.8; costs depend only on the shapes and are.

Training. Deterministic numpy Adam (seeded), done when the workload is built and cached per process, like the 8×8
networks: no weight files. LeNet takes about a minute on one core; the MLPs a few seconds.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from solvermap.ir.workloads.approxhpvm_tensor_ops import (
    Dataset,
    LayerSpec,
    TensorNetwork,
    build_network,
    detached,
    digits,
    register_trained,
    train,
)

MNIST_SHAPE = (1, 28, 28)
BOX = 20  # MNIST digits are size-normalised to a 20×20 box, centred in 28×28

_LENET = [
    LayerSpec("conv1", "conv", 32, "tanh", pool=True, kernel=5, padding=2, pool_first=False),
    LayerSpec("conv2", "conv", 64, "tanh", pool=True, kernel=5, padding=2, pool_first=False),
    LayerSpec("fc1", "fc", 1024, "tanh"),
    LayerSpec("fc2", "fc", 10, "tanh"),
]


def _mlp(*widths: int) -> list[LayerSpec]:
    return [LayerSpec(f"fc{i + 1}", "fc", w, "tanh") for i, w in enumerate(widths)]


# name: (layers, epochs, learning rate)
ARCHITECTURES: dict[str, tuple[list[LayerSpec], int, float]] = {
    "lenet_mnist": (_LENET, 12, 1e-3),
    "dnn1_mnist": (_mlp(128, 10), 40, 2e-3),
    "dnn2_mnist": (_mlp(256, 128, 10), 30, 1e-3),
    "dnn3_mnist": (_mlp(512, 256, 128, 10), 25, 1e-3),
}


def upscale(images: np.ndarray) -> np.ndarray:
    """(n, 8, 8) in [0, 1] → (n, 28, 28): bilinear resize to a 20×20 box, centred with a 4-pixel border."""
    from scipy.ndimage import zoom

    box = zoom(images, (1, BOX / images.shape[1], BOX / images.shape[2]), order=1)
    margin = (MNIST_SHAPE[1] - BOX) // 2
    return np.clip(np.pad(box, ((0, 0), (margin, margin), (margin, margin))), 0.0, 1.0)


@lru_cache(maxsize=2)
def digits_28(image: bool = True, seed: int = 0) -> Dataset:
    """sklearn's digits upscaled to MNIST's 28×28 (module docstring), in the 8×8 workloads' split."""
    small = digits(image=True, seed=seed)
    out = []
    for x in (small.x_train, small.x_test):
        big = upscale(x[:, 0])
        out.append(big[:, None] if image else big.reshape(len(big), -1))
    return Dataset(out[0], small.y_train, out[1], small.y_test)


def untrained_network(name: str, seed: int = 0) -> TensorNetwork:
    """The network with its initial (Glorot) weights: shapes and costs without the training time."""
    layers, _, _ = ARCHITECTURES[name]
    image = layers[0].kind == "conv"
    shape = MNIST_SHAPE if image else (int(np.prod(MNIST_SHAPE)),)
    return build_network(name, layers, digits_28(image=image), seed=seed, input_shape=shape,
                         description=f"{name} (seed 000 shapes) on sklearn digits upscaled to 28×28",
                         dataset="sklearn digits upscaled to 28×28")


@lru_cache(maxsize=8)
def _trained(name: str, seed: int, epochs: int) -> TensorNetwork:
    _, default_epochs, lr = ARCHITECTURES[name]
    net = untrained_network(name, seed)
    net.meta["train_loss"] = train(net, epochs=epochs or default_epochs, lr=lr, seed=seed)
    return net


def trained_network(name: str, seed: int = 0, epochs: int = 0) -> TensorNetwork:
    """A trained copy (parameters are copied, so a caller may change them without touching the cache)."""
    return detached(_trained(name, seed, epochs))


register_trained("lenet_mnist", "HPVM LeNet at MNIST shape: Conv32 5x5, Conv64 5x5, FC1024, FC10 on 28x28 (Table 5.3)",
                 trained_network)
register_trained("dnn1_mnist", "DNN1 784-128-10 tanh MLP on 28x28 digits (Table 5.3, PROMISE DNN-1 L874)",
                 trained_network)
register_trained("dnn2_mnist", "DNN2 784-256-128-10 tanh MLP on 28x28 digits (Table 5.3, PROMISE DNN-2 L874)",
                 trained_network)
register_trained("dnn3_mnist", "DNN3 784-512-256-128-10 tanh MLP on 28x28 digits (Table 5.3, PROMISE DNN-3 L874)",
                 trained_network)
