"""The simulator's PE arithmetic computes what the golden model computes, for any expression a program file can hold."""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from solvermap.hardware.pushmem.simulator import _wrap_fn, compile_expr
from solvermap.ir.loopnest import Access, Call, Cast, Const, Load, Loop, Program, Statement, Tensor, evaluate, loads

DTYPES = ["int8", "uint8", "int16", "uint16", "int32"]
N = 64
OPERANDS = {name: Access(name, ((1,),), (0,), (1,), ("i",)) for name in ("a", "b")}


def _const(dtype: str):
    info = np.iinfo(np.dtype(dtype))
    return st.integers(min_value=max(int(info.min), -20), max_value=min(int(info.max), 40)).map(Const)


def expressions(dtype: str):
    leaves = st.sampled_from([Load(a) for a in OPERANDS.values()]) | _const(dtype)

    def grow(inner):
        binary = st.tuples(st.sampled_from(["add", "sub", "mul", "div", "shr", "shl", "and", "or", "max", "min"]), inner,
                           inner).map(lambda t: Call(t[0], (t[1], t[2])))
        unary = st.tuples(st.sampled_from(["neg", "abs"]), inner).map(lambda t: Call(t[0], (t[1],)))
        ternary = st.tuples(st.sampled_from(["select", "clamp"]), inner, inner, inner).map(
            lambda t: Call(t[0], (t[1], t[2], t[3])))
        widen = inner.map(lambda e: Cast("int32", e))
        return binary | unary | ternary | widen

    return st.recursive(leaves, grow, max_leaves=8)


@settings(max_examples=150, deadline=None)
@example(case=("int8", Call("neg", (Cast("int32", Load(OPERANDS["a"])),)), "int16"), seed=0)  # -(-128) in int8
@given(st.sampled_from(DTYPES).flatmap(lambda d: st.tuples(st.just(d), expressions(d), st.sampled_from(DTYPES))),
       st.integers(min_value=0, max_value=2**31))
def test_a_kernel_computes_the_golden_value_of_its_expression(case, seed):
    dtype, expr, out_dtype = case
    rng = np.random.default_rng(seed)
    tensors = {name: Tensor(name, (N,), dtype, "input") for name in OPERANDS}
    tensors["out"] = Tensor("out", (N,), out_dtype, "output")
    stmt = Statement("s", (Loop("i", 0, N),), Access("out", ((1,),), (0,), (1,), ("i",)), expr, dtype)
    program = Program("p", tensors, [stmt]).validate()
    info = np.iinfo(np.dtype(dtype))
    inputs = {name: rng.integers(int(info.min), int(info.max) + 1, size=N).astype(dtype) for name in OPERANDS}
    with np.errstate(all="ignore"):
        golden = evaluate(program, inputs)["out"]
    kernel, store = compile_expr(expr, dtype), _wrap_fn(out_dtype)
    names = [acc.tensor for acc in loads(expr)]
    simulated = [store(kernel([int(inputs[n][i]) for n in names])) for i in range(N)]
    assert simulated == golden.tolist()
