"""Anomaly detection (SHIM_SEMANTICS.md K) against PyTorch's: the warning, the NaN report
naming the node, the forward stack, and the version error's other hint."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad.torch as tt

torch = pytest.importorskip("torch")


def _nan_backward(M):
    x = M.tensor([0.0, 1.0], requires_grad=True)
    return lambda: (M.sqrt(x) * 0).sum().backward()


def test_detect_anomaly_warns_and_is_scoped_like_torch():
    for M in (tt, torch):
        assert not M.is_anomaly_enabled()
        with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
            with M.autograd.detect_anomaly():
                assert M.is_anomaly_enabled()
        assert not M.is_anomaly_enabled()


def test_nan_in_a_backward_names_the_node_and_its_forward_line():
    messages, warned = [], []
    for M in (tt, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with M.autograd.set_detect_anomaly(True):
                run = _nan_backward(M)
                with pytest.raises(RuntimeError) as e:
                    run()
        messages.append(str(e.value))
        warned.append([str(w.message) for w in caught if "Error detected" in str(w.message)])
    assert (
        messages[0]
        == messages[1]
        == "Function 'SqrtBackward0' returned nan values in its 0th output."
    )
    for text in warned:
        assert text and text[0].startswith("Error detected in SqrtBackward0. Traceback of forward")
        lines = text[0].splitlines()  # the stack shows the line that built the node
        at = next(i for i, line in enumerate(lines) if "M.sqrt(x)" in line)
        assert "test_anomaly.py" in lines[at - 1]
    # without anomaly mode: NaN flows silently, in both
    for M in (tt, torch):
        x = M.tensor([0.0, 1.0], requires_grad=True)
        (M.sqrt(x) * 0).sum().backward()
        assert np.isnan(x.grad.detach().numpy()[0])


def test_version_error_hint_under_anomaly_mode_matches_torch():
    firsts = []
    for M in (tt, torch):
        with M.autograd.set_detect_anomaly(True, check_nan=False):
            x = M.tensor([1.0, 2.0], requires_grad=True)
            y = x.exp()
            with M.no_grad():
                y.add_(1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(RuntimeError) as e:
                    y.sum().backward()
        firsts.append(str(e.value).replace("torch.FloatTensor", "float32"))
    assert firsts[0] == firsts[1]
    assert firsts[0].endswith("was changed in there or anywhere later. Good luck!")
