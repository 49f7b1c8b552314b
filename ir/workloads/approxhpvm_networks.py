"""ApproxHPVM networks (seed 000 Table 5.3, L1189) and the PROMISE MLP (Table 4.2), trained on sklearn digits.

=============  =======================================  ==============================================
workload       layers                                   seed
=============  =======================================  ==============================================
``lenet``      Conv(8)+pool, Conv(16)+pool, FC 64, FC 10  LeNet: Conv, Conv, FC, FC (Table 5.3)
``dnn1``       64-128-10                                DNN1: FC×2; PROMISE DNN-1 784-128-10 (L874)
``dnn2``       64-256-128-10                            DNN2: FC×3; PROMISE DNN-2 784-256-128-10
``dnn3``       64-512-256-128-10                        DNN3: FC×4; PROMISE DNN-3 784-512-256-128-10
``promise_mlp``  64-512-256-128-10, ReLU                PROMISE MLP 784-512-256-128-10 (Table 4.2)
=============  =======================================  ==============================================

Inputs are 8×8 digits (64 features) instead of 28×28 MNIST (assumption A11 of the promise-soc preset).
ApproxHPVM layers use tanh (FC → GEMM + bias add + tanh, conv → conv + bias add + pooling + tanh, L1187);
the output layer has no activation (its GEMM + add gives the logits). ``promise_mlp`` uses ReLU, a PROMISE
Class-4 op (Table 4.3). LeNet's Conv1 has 9-element dot products, so PROMISE cannot run it (< 64, L1248),
as in the seed (Conv1 → FP16 in every configuration of Fig. 5.9).

Training is deterministic (numpy Adam, seed per network) and cached per process.
"""

from __future__ import annotations

from functools import lru_cache

from solvermap.ir.workloads.approxhpvm_tensor_ops import (
    LayerSpec,
    TensorNetwork,
    build_network,
    detached,
    digits,
    register_trained,
    train,
)

_ARCH = {
    "lenet": ([LayerSpec("conv1", "conv", 8, "tanh", pool=True), LayerSpec("conv2", "conv", 16, "tanh", pool=True),
               LayerSpec("fc1", "fc", 64, "tanh"), LayerSpec("fc2", "fc", 10, None)], 25, 3e-3),
    "dnn1": ([LayerSpec("fc1", "fc", 128, "tanh"), LayerSpec("fc2", "fc", 10, None)], 40, 2e-3),
    "dnn2": ([LayerSpec("fc1", "fc", 256, "tanh"), LayerSpec("fc2", "fc", 128, "tanh"),
              LayerSpec("fc3", "fc", 10, None)], 30, 1e-3),
    "dnn3": ([LayerSpec("fc1", "fc", 512, "tanh"), LayerSpec("fc2", "fc", 256, "tanh"),
              LayerSpec("fc3", "fc", 128, "tanh"), LayerSpec("fc4", "fc", 10, None)], 25, 1e-3),
    "promise_mlp": ([LayerSpec("fc1", "fc", 512, "relu"), LayerSpec("fc2", "fc", 256, "relu"),
                     LayerSpec("fc3", "fc", 128, "relu"), LayerSpec("fc4", "fc", 10, None)], 25, 1e-3),
}


@lru_cache(maxsize=16)
def _trained(name: str, seed: int, epochs: int) -> TensorNetwork:
    layers, default_epochs, lr = _ARCH[name]
    image = layers[0].kind == "conv"
    data = digits(image=image)
    shape = (1, 8, 8) if image else (64,)
    net = build_network(name, layers, data, seed=seed, input_shape=shape,
                        description=f"{name} trained on sklearn digits")
    losses = train(net, epochs=epochs or default_epochs, lr=lr, seed=seed)
    net.meta["train_loss"] = losses
    return net


def trained_network(name: str, seed: int = 0, epochs: int = 0) -> TensorNetwork:
    """A trained copy (parameters are copied, so a caller may change them without touching the cache)."""
    return detached(_trained(name, seed, epochs))


register_trained("lenet", "LeNet-style Conv,Conv,FC,FC on 8×8 digits (seed 000 Table 5.3)",
                 trained_network)
register_trained("dnn1", "DNN1: 64-128-10 tanh MLP on digits (Table 5.3, PROMISE DNN-1)",
                 trained_network)
register_trained("dnn2", "DNN2: 64-256-128-10 tanh MLP on digits (Table 5.3, PROMISE DNN-2)",
                 trained_network)
register_trained("dnn3", "DNN3: 64-512-256-128-10 tanh MLP on digits (Table 5.3, PROMISE DNN-3)",
                 trained_network)
register_trained("promise_mlp", "PROMISE MLP 64-512-256-128-10 ReLU on digits (Table 4.2, adapted from 784 inputs)",
                 trained_network)
