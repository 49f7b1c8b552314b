"""The memory cap: an estimate over it is one line naming the parameter, the estimate and the cap."""

import pytest

from solvermap.errors import InputError, LimitError
from solvermap.limits import ENV_VAR, available_bytes, check_estimate, memory_cap, memory_cap_bytes


def test_estimate_over_the_cap_names_parameter_estimate_and_cap():
    with memory_cap(2.0), pytest.raises(LimitError) as err:
        check_estimate("workload.hidden=65536: LSTM weights", 140e9, "lstm_lm")
    message = str(err.value)
    assert message.startswith("lstm_lm: workload.hidden=65536: LSTM weights needs about 140 GB")
    assert "memory cap of 2 GB" in message and "\n" not in message


def test_estimate_under_the_cap_passes():
    with memory_cap(2.0):
        check_estimate("small", 1.9e9)


def test_nan_estimate_is_refused():
    with memory_cap(2.0), pytest.raises(LimitError):
        check_estimate("broken estimate", float("nan"))


def test_block_cap_beats_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "3")
    assert memory_cap_bytes() == 3e9
    with memory_cap(1.5):
        assert memory_cap_bytes() == 1.5e9
    assert memory_cap_bytes() == 3e9


def test_default_cap_is_half_of_the_available_memory(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert memory_cap_bytes() == available_bytes() / 2


@pytest.mark.parametrize("value", ["lots", "-1", "inf", "nan", "0"])
def test_bad_environment_cap_is_one_line(monkeypatch, value):
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(InputError, match=rf"{ENV_VAR}: field 'limits.memory_gb'"):
        memory_cap_bytes()
