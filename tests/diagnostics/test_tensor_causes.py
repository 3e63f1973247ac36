"""The tensors' error messages: PyTorch's first line exactly, then the cause with the user's
lines (freed saved values and the backward call that freed them; a tensor without grad_fn
from no_grad or detach; the in-place operation that changed a saved tensor)."""

from __future__ import annotations

import pytest

import tracegrad as tg
import tracegrad.torch as torch
from tests.diagnostics.helpers import line_of

HERE = __file__

FREED_FIRST = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)
NO_GRAD_FN_FIRST = "element 0 of tensors does not require grad and does not have a grad_fn"
TURN_ON = "Set tg.config.provenance = True (or the environment variable TRACEGRAD_PROVENANCE=1)"


@pytest.fixture
def provenance():
    saved = tg.config.provenance
    tg.config.provenance = True
    yield
    tg.config.provenance = saved


@pytest.fixture
def no_provenance():
    saved = (tg.config.provenance, tg.config.debug_nans, tg.config.debug_infs)
    tg.config.provenance = tg.config.debug_nans = tg.config.debug_infs = False
    yield
    tg.config.provenance, tg.config.debug_nans, tg.config.debug_infs = saved


def _lines(err) -> list[str]:
    return str(err.value).splitlines()


# -- freed saved values ------------------------------------------------------------------------


def test_freed_names_node_creation_line_and_freeing_call(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # LINE: freed_exp
    y.sum().backward()  # LINE: freed_first_backward
    with pytest.raises(RuntimeError) as err:
        (y * 2).sum().backward()
    first, cause, advice = _lines(err)
    assert first == FREED_FIRST
    assert cause == (
        "The saved values of ExpBackward0 (`exp` of a float32 (2,) value, created at "
        f"{line_of(HERE, 'freed_exp')} (`y = x.exp()  # LINE: freed_exp`)) were freed by the "
        f"backward call at {line_of(HERE, 'freed_first_backward')} "
        "(`y.sum().backward()  # LINE: freed_first_backward`)."
    )
    assert advice.startswith("Pass retain_graph=True to that call")


def test_freed_without_provenance_names_the_backward_call(no_provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    torch.autograd.grad(y.sum(), x)  # LINE: freed_by_grad
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    lines = _lines(err)
    assert lines[0] == FREED_FIRST
    assert lines[1].startswith("The saved values of ExpBackward0 (`exp` of a float32 (2,) value)")
    assert f"freed by the backward call at {line_of(HERE, 'freed_by_grad')}" in lines[1]
    assert lines[3].startswith(TURN_ON) and "the line that created the node" in lines[3]


def test_freed_saved_attribute_access(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.sum().backward()  # LINE: freed_attr
    with pytest.raises(RuntimeError) as err:
        y.grad_fn._saved_result  # noqa: B018 - the access raises
    assert _lines(err)[0] == FREED_FIRST
    assert f"backward call at {line_of(HERE, 'freed_attr')}" in _lines(err)[1]


# -- element 0 does not require grad -----------------------------------------------------------


def test_no_grad_fn_from_no_grad(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        z = x * 2  # LINE: under_no_grad
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    first, cause = _lines(err)
    assert first == NO_GRAD_FN_FIRST
    assert cause.startswith(
        "It comes from a value computed under no_grad() (or with grad mode off), at "
        f"{line_of(HERE, 'under_no_grad')} (`z = x * 2"
    )


def test_no_grad_fn_leaf_without_requires_grad(provenance):
    x = torch.tensor([1.0, 2.0])  # LINE: plain_leaf
    with pytest.raises(RuntimeError) as err:
        (x * 2).sum().backward()
    first, cause = _lines(err)
    assert first == NO_GRAD_FN_FIRST
    assert cause.startswith(
        "It comes from a leaf created without requires_grad=True at "
        f"{line_of(HERE, 'plain_leaf')} (`x = torch.tensor([1.0, 2.0])"
    )


def test_no_grad_fn_from_detach(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()  # LINE: detached
    with pytest.raises(RuntimeError) as err:
        torch.autograd.backward([(d * 3).sum()])
    first, cause = _lines(err)
    assert first == NO_GRAD_FN_FIRST
    assert cause.startswith(f"It comes from detach() at {line_of(HERE, 'detached')} (`d = x.")


def test_no_grad_fn_leaf_from_a_factory(provenance):
    x = torch.zeros(2)  # factories other than tensor() record no line: the general cause
    with pytest.raises(RuntimeError) as err:
        x.sum().backward()
    assert _lines(err)[1].startswith("It is a leaf that does not require grad: created without")


def test_no_grad_fn_without_provenance_says_how_to_learn_more(no_provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        z = x * 2
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    first, cause = _lines(err)
    assert first == NO_GRAD_FN_FIRST
    assert "under no_grad(), or by detach()" in cause and TURN_ON in cause


# -- the version counter -----------------------------------------------------------------------


def test_version_error_names_the_in_place_line(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with torch.no_grad():
        y.mul_(2)  # LINE: in_place
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    first, cause = _lines(err)
    assert first.startswith(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [float32 [2]], which is output 0 of Exp, is at version 1; expected version 0"
    )
    assert cause == (
        "The saved tensor was at version 0 when the graph saved it; version 1: changed in place "
        f"at {line_of(HERE, 'in_place')} (`y.mul_(2)  # LINE: in_place`)."
    )


def test_version_error_through_a_detached_alias(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = x * x
    d = x.detach()
    d.add_(1)  # LINE: detached_add
    d.add_(1)  # LINE: detached_add_again
    with pytest.raises(RuntimeError) as err:
        w.sum().backward()
    cause = _lines(err)[1]
    assert "was at version 0" in cause
    assert f"version 1: changed in place at {line_of(HERE, 'detached_add')}" in cause
    assert f"version 2: changed in place at {line_of(HERE, 'detached_add_again')}" in cause


def test_version_error_through_data_assignment(provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.data = torch.tensor([0.0, 0.0])  # LINE: data_set
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    cause = _lines(err)[1]
    assert f"version 1: changed in place at {line_of(HERE, 'data_set')}" in cause


def test_version_error_without_provenance(no_provenance):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with torch.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    lines = _lines(err)
    assert len(lines) == 1  # nothing recorded: PyTorch's message alone
    assert lines[0].endswith(
        "expected version 0 instead. Hint: enable anomaly detection to find "
        "the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
