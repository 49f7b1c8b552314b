"""The shared IR: typed dataflow graphs (``graph``), HPVM hierarchy (``hierarchy``), affine loop-nest
programs (``loopnest``), graph IO (``serialize``, ``onnx_import``) and the workload registry
(``workloads``)."""

from solvermap.ir.graph import Accuracy, DataflowGraph, Edge, EdgeKind, Node, NodeKind, Pattern

__all__ = ["Accuracy", "DataflowGraph", "Edge", "EdgeKind", "Node", "NodeKind", "Pattern"]
