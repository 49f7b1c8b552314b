"""Affine loop-nest programs: parsing, bounds validation and the NumPy golden executor."""

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Tensor, evaluate, parse_access, random_inputs, statement


def blur_program(h=6, w=8) -> Program:
    """3-tap horizontal then vertical box blur (the gaussian-style two-stage pipeline)."""
    tensors = {
        "img": Tensor("img", (h + 2, w + 2), "int32", "input"),
        "bx": Tensor("bx", (h + 2, w), "int32"),
        "out": Tensor("out", (h, w), "int32", "output"),
    }
    stmts = [
        statement("blur_x", [("y", 0, h + 2), ("x", 0, w)], "bx[y, x]", "img[y, x] + img[y, x + 1] + img[y, x + 2]"),
        statement("blur_y", [("y", 0, h), ("x", 0, w)], "out[y, x]", "(bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) // 9"),
    ]
    return Program("blur", tensors, stmts).validate()


def test_parse_access_reads_affine_maps_and_divisors():
    access = parse_access("in[2*y - 1, x/2]", ["y", "x"])
    assert access.coeffs == ((2, 0), (0, 1)) and access.offsets == (-1, 0) and access.divisors == (1, 2)
    assert access.index((3, 5)) == (5, 2)


@pytest.mark.parametrize("text", ["in[x*y]", "in[z]", "in[x/y]", "in"])
def test_parse_access_rejects_non_affine_indices(text):
    with pytest.raises(InputError):
        parse_access(text, ["y", "x"])


def test_evaluate_matches_numpy_reference():
    program = blur_program()
    img = random_inputs(program, seed=3)["img"]
    out = evaluate(program, {"img": img})["out"]
    bx = img[:, 0:-2] + img[:, 1:-1] + img[:, 2:]
    expected = (bx[0:-2] + bx[1:-1] + bx[2:]) // 9
    assert np.array_equal(out, expected)


def test_out_of_bounds_access_is_rejected_naming_statement_and_dimension():
    tensors = {"a": Tensor("a", (4,), "int32", "input"), "b": Tensor("b", (4,), "int32", "output")}
    bad = statement("shift", [("i", 0, 4)], "b[i]", "a[i + 1]")
    with pytest.raises(InputError, match=r"statement 'shift' access a\[i \+ 1\].*spans \[1, 4\]"):
        Program("p", tensors, [bad]).validate()


def test_upsample_by_floor_division():
    tensors = {"a": Tensor("a", (3,), "int32", "input"), "b": Tensor("b", (6,), "int32", "output")}
    program = Program("up", tensors, [statement("up", [("i", 0, 6)], "b[i]", "a[i/2]")]).validate()
    assert evaluate(program, {"a": np.array([1, 2, 3])})["b"].tolist() == [1, 1, 2, 2, 3, 3]


def test_accumulating_statement_computes_int8_matmul_exactly():
    m, n, k = 3, 4, 5
    tensors = {"A": Tensor("A", (m, k), "int8", "input"), "B": Tensor("B", (k, n), "int8", "input"),
               "C": Tensor("C", (m, n), "int32", "output")}
    mm = statement("mm", [("i", 0, m), ("j", 0, n), ("r", 0, k, "reduction")], "C[i, j]",
                   "int32(A[i, r]) * int32(B[r, j])", accumulate=True)
    program = Program("mm", tensors, [mm]).validate()
    inputs = random_inputs(program, seed=1)
    out = evaluate(program, inputs)["C"]
    assert np.array_equal(out, inputs["A"].astype(np.int32) @ inputs["B"].astype(np.int32))
    assert program.statements[0].loop("r").kind == "reduction"


def test_empty_loop_range_is_rejected():
    tensors = {"b": Tensor("b", (4,), "int32", "output")}
    with pytest.raises(InputError, match="empty range"):
        Program("p", tensors, [statement("s", [("i", 3, 3)], "b[i]", "1")]).validate()


def test_missing_input_array_is_rejected():
    with pytest.raises(InputError, match="missing input array"):
        evaluate(blur_program(), {})


def test_tensor_named_like_a_python_keyword_parses_in_expressions():
    tensors = {"in": Tensor("in", (4,), "int32", "input"), "out": Tensor("out", (3,), "int32", "output")}
    s = statement("s", [("x", 0, 3)], "out[x]", "in[x] + in[x + 1]")
    assert [a.tensor for a in s.reads] == ["in", "in"]
    out = evaluate(Program("p", tensors, [s]).validate(), {"in": np.arange(4)})["out"]
    assert out.tolist() == [1, 3, 5]
