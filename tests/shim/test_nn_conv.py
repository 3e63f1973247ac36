"""Convolutions against torch: conv1d/2d/3d, conv_transpose1d/2d, unfold/fold and the Conv
Modules, from identical inputs and weights in float64 and float32: outputs and the gradients
of inputs, weights and biases; strides, dilations, groups, 'same'/'valid', padding modes;
PyTorch's messages for bad input; a CNN trained for a few steps in both libraries."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch import optim
from tracegrad.torch.nn import conv_layers, convolution
from tracegrad.torch.nn import functional as tF
from tracegrad.torch.nn import layers as tnn
from tracegrad.torch.nn.module import Parameter as tnn_parameter

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-10, 1e-12), np.float32: (2e-5, 2e-5)}
DTYPES = [np.float64, np.float32]


def _arrays(seed, *shapes, dtype):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def check(torch, ours, theirs, arrays, dtype):
    """`ours(*tensors)` equals `theirs(*torch_tensors)`, and so do the gradients of every
    input under a random cotangent."""
    rtol, atol = TOLERANCES[dtype]
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = ours(*xs), theirs(*ts)
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(7).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol, atol)


# -- functional convolutions ---------------------------------------------------------------------

CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=3, padding=1),  # stride > kernel
    dict(padding=(2, 1), dilation=(2, 3)),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid", stride=(1, 2)),
    dict(groups=2),
    dict(groups=4, stride=2, padding=1),  # depthwise
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=str)
def test_conv2d_matches_torch(torch, kwargs, dtype):
    groups = kwargs.get("groups", 1)
    x, w, b = _arrays(
        0, (3, 4, 9, 8), (6 if groups != 4 else 8, 4 // groups, 3, 2), (1,), dtype=dtype
    )
    b = np.resize(b, w.shape[0])
    check(
        torch,
        lambda x, w, b: convolution.conv2d(x, w, b, **kwargs),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kwargs),
        [x, w, b],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d_and_conv3d_match_torch(torch, dtype):
    x, w = _arrays(1, (2, 3, 11), (4, 3, 3), dtype=dtype)
    for kwargs in (dict(stride=2, padding=2, dilation=2), dict(padding="same"), dict()):
        check(
            torch,
            lambda x, w, kw=kwargs: convolution.conv1d(x, w, **kw),
            lambda x, w, kw=kwargs: torch.nn.functional.conv1d(x, w, **kw),
            [x, w],
            dtype,
        )
    x, w, b = _arrays(2, (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,), dtype=dtype)
    check(
        torch,
        lambda x, w, b: convolution.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
        lambda x, w, b: torch.nn.functional.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
        [x, w, b],
        dtype,
    )


def test_unbatched_input_and_no_bias(torch):
    x, w = _arrays(3, (3, 7, 6), (5, 3, 2, 2), dtype=np.float64)
    check(torch, convolution.conv2d, torch.nn.functional.conv2d, [x, w], np.float64)
    x, w = _arrays(3, (3, 7), (5, 3, 2), dtype=np.float64)
    check(torch, convolution.conv1d, torch.nn.functional.conv1d, [x, w], np.float64)


def test_same_padding_with_an_even_kernel_warns_as_torch(torch):
    x, w = _arrays(4, (1, 2, 6, 6), (3, 2, 2, 2), dtype=np.float64)
    with pytest.warns(UserWarning, match="padding='same' with even kernel lengths"):
        ours = convolution.conv2d(tt.tensor(x), tt.tensor(w), padding="same")
    theirs = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), 1e-12)


TRANSPOSED_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, output_padding=1),
    dict(stride=3, padding=1, dilation=2, output_padding=(2, 1)),
    dict(groups=2, stride=(2, 1), padding=(1, 0)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", TRANSPOSED_CASES, ids=str)
def test_conv_transpose2d_matches_torch(torch, kwargs, dtype):
    groups = kwargs.get("groups", 1)
    x, w, b = _arrays(5, (2, 4, 5, 4), (4, 3, 3, 2), (3 * groups,), dtype=dtype)
    check(
        torch,
        lambda x, w, b: convolution.conv_transpose2d(x, w, b, **kwargs),
        lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kwargs),
        [x, w, b],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose1d_matches_torch(torch, dtype):
    x, w = _arrays(6, (2, 4, 6), (4, 2, 4), dtype=dtype)
    check(
        torch,
        lambda x, w: convolution.conv_transpose1d(x, w, stride=3, padding=2, output_padding=1),
        lambda x, w: torch.nn.functional.conv_transpose1d(
            x, w, stride=3, padding=2, output_padding=1
        ),
        [x, w],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose3d_matches_torch(torch, dtype):
    x, w, b = _arrays(14, (2, 2, 3, 4, 3), (2, 3, 2, 3, 2), (3,), dtype=dtype)
    kwargs = dict(stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 0))
    check(
        torch,
        lambda x, w, b: convolution.conv_transpose3d(x, w, b, **kwargs),
        lambda x, w, b: torch.nn.functional.conv_transpose3d(x, w, b, **kwargs),
        [x, w, b],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_unfold_and_fold_match_torch(torch, dtype):
    (x,) = _arrays(7, (2, 3, 6, 7), dtype=dtype)
    for kwargs in (dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2, padding=1, dilation=2)):
        check(
            torch,
            lambda x, kw=kwargs: convolution.unfold(x, **kw),
            lambda x, kw=kwargs: torch.nn.functional.unfold(x, **kw),
            [x],
            dtype,
        )
    (cols,) = _arrays(8, (2, 12, 12), dtype=dtype)
    check(
        torch,
        lambda c: convolution.fold(c, (4, 5), 2),
        lambda c: torch.nn.functional.fold(c, (4, 5), 2),
        [cols],
        dtype,
    )
    (cols,) = _arrays(9, (12, 6), dtype=dtype)  # unbatched, overlapping blocks with padding
    kwargs = dict(output_size=(5, 6), kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2))
    check(
        torch,
        lambda c: convolution.fold(c, **kwargs),
        lambda c: torch.nn.functional.fold(c, **kwargs),
        [cols],
        dtype,
    )


def test_grad_fn_names_match_torch(torch):
    x, w = _arrays(10, (1, 2, 5, 5), (3, 2, 3, 3), dtype=np.float64)
    ours = convolution.conv2d(tt.tensor(x, requires_grad=True), tt.tensor(w))
    theirs = torch.nn.functional.conv2d(torch.tensor(x, requires_grad=True), torch.tensor(w))
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "ConvolutionBackward0"


# -- messages ---------------------------------------------------------------------------------


def _both(torch, fn_name, *shapes, dtypes=None, **kwargs):
    arrays = [np.zeros(s, (dtypes or {}).get(i, np.float32)) for i, s in enumerate(shapes)]
    ours = getattr(convolution, fn_name)
    theirs = getattr(torch.nn.functional, fn_name)
    return (
        lambda: ours(*[tt.tensor(a) for a in arrays], **kwargs),
        lambda: theirs(*[torch.tensor(a) for a in arrays], **kwargs),
    )


@pytest.mark.parametrize(
    "case",
    [
        ("conv2d", [(1, 4, 8, 8), (16, 3, 3, 3)], {}),  # input/weight channels
        ("conv2d", [(8, 8), (16, 3, 3, 3)], {}),  # input rank
        ("conv1d", [(8,), (2, 1, 3)], {}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"stride": 2, "padding": "same"}),
        ("conv2d", [(1, 3, 2, 2), (16, 3, 3, 3)], {}),  # kernel larger than the input
        ("conv2d", [(1, 3, 4, 4), (16, 3, 3, 3)], {"padding": (1, 0), "dilation": (1, 2)}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"padding": "foo"}),
        ("conv2d", [(1, 4, 8, 8), (15, 2, 3, 3)], {"groups": 2}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3), (3,)], {}),  # bias size
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"stride": 0}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"padding": -1}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"dilation": 0}),
        ("conv2d", [(1, 3, 8, 8), (16, 3, 3, 3)], {"stride": (1, 1, 1)}),
        ("conv_transpose2d", [(1, 4, 8, 8), (3, 2, 3, 3)], {}),
        ("conv_transpose2d", [(1, 3, 8, 8), (3, 2, 3, 3)], {"output_padding": 1}),
        ("conv_transpose2d", [(1, 3, 8, 8), (3, 2, 3, 3)], {"padding": "same"}),
        ("unfold", [(1, 2, 3, 4, 5)], {"kernel_size": 2}),
        ("fold", [(1, 2, 3, 4)], {"output_size": (4, 4), "kernel_size": 2}),
        ("fold", [(1, 12, 8)], {"output_size": (4, 4), "kernel_size": 2}),
        ("unfold", [(1, 0, 4, 4)], {"kernel_size": 2}),
        ("unfold", [(1, 2, 4, 4)], {"kernel_size": (2, 2, 2)}),
        ("unfold", [(1, 2, 4, 4)], {"kernel_size": 2, "stride": (1, 1, 1)}),
        ("fold", [(1, 8, 9)], {"output_size": (4, 4, 4), "kernel_size": 2}),
        ("fold", [(1, 8, 9)], {"output_size": 4, "kernel_size": 2, "dilation": (1,)}),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}",
)
def test_bad_input_raises_torchs_message(torch, case):
    name, shapes, kwargs = case
    assert_same_error(*_both(torch, name, *shapes, **kwargs))


def test_dtype_mismatches_raise_torchs_messages(torch):
    assert_same_error(*_both(torch, "conv2d", (1, 3, 8, 8), (16, 3, 3, 3), dtypes={1: np.float64}))
    assert_same_error(
        *_both(torch, "conv2d", (1, 3, 8, 8), (16, 3, 3, 3), (16,), dtypes={2: np.float64})
    )


# -- Modules ----------------------------------------------------------------------------------

LAYERS = [
    "Conv2d(3, 4, 3, padding='same')",
    "Conv2d(3, 4, (3, 1), stride=2, dilation=2, bias=False, padding_mode='reflect', padding=1)",
    "Conv2d(4, 4, 3, padding_mode='replicate', padding=(1, 2), groups=2)",
    "Conv2d(3, 4, 3, padding_mode='circular', padding=2)",
    "Conv2d(3, 4, 2, padding='same', padding_mode='reflect')",
    "Conv1d(4, 4, 3, groups=2)",
    "Conv1d(4, 2, 3, padding='same', padding_mode='circular')",
    "Conv3d(2, 4, 2, padding_mode='replicate', padding=1)",
    "ConvTranspose2d(3, 4, 3, output_padding=1, stride=2)",
    "ConvTranspose1d(4, 2, 3, stride=2, padding=1, groups=2, dilation=2)",
    "ConvTranspose3d(2, 4, 2, stride=(1, 2, 1), padding=1, output_padding=(0, 1, 0))",
]


def _input_for(layer, seed, dtype):
    n = len(layer.kernel_size)
    shape = (2, layer.in_channels) + (7, 6, 5)[:n]
    return _arrays(seed, shape, dtype=dtype)[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", LAYERS)
def test_conv_layers_match_torch(torch, spec, dtype):
    ours = eval("conv_layers." + spec)  # noqa: S307 - the specs above, run in both libraries
    theirs = eval("torch.nn." + spec)  # noqa: S307
    assert repr(ours) == repr(theirs)
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in theirs.named_parameters()]
    values = {n: p.detach().numpy().astype(dtype) for n, p in ours.named_parameters()}
    for n, v in values.items():  # the same weights, in `dtype`, in both
        setattr(ours, n, tnn_parameter(tt.tensor(v)))
        setattr(theirs, n, torch.nn.Parameter(torch.tensor(v)))
    x = _input_for(ours, 11, dtype)
    xs, ts = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(xs), theirs(ts)
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(3).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), ts.grad.numpy(), rtol, atol)
    for n in names:
        ours_grad = getattr(ours, n).grad.numpy()
        np.testing.assert_allclose(ours_grad, getattr(theirs, n).grad.numpy(), rtol, atol)


def test_conv_layer_initialisation_follows_torchs_bounds():
    tt.manual_seed(0)
    layer = conv_layers.Conv2d(16, 8, 3)
    bound = 1 / np.sqrt(16 * 9)  # kaiming_uniform(a=sqrt(5)) gives 1/sqrt(fan_in) too
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (8, 16, 3, 3) and b.shape == (8,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and w.dtype == np.float32


@pytest.mark.parametrize(
    "spec",
    [
        "Conv2d(3, 4, 3, groups=2)",
        "Conv2d(4, 3, 3, groups=2)",
        "Conv2d(4, 4, 3, groups=0)",
        "Conv2d(4, 4, 3, padding='same', stride=2)",
        "ConvTranspose2d(4, 4, 3, padding_mode='reflect')",
    ],
)
def test_conv_layer_arguments_raise_torchs_messages(torch, spec):
    names = {"torch": torch, "conv_layers": conv_layers}
    assert_same_error(
        lambda: eval("conv_layers." + spec, names),  # noqa: S307
        lambda: eval("torch.nn." + spec, names),  # noqa: S307
    )


def _set_free(message: str) -> tuple[str, set[str]]:
    """A message with its printed set taken out: the text around it, and the set's items
    (PyTorch prints a Python set, whose order depends on the process's string hashing)."""
    start, end = message.index("{"), message.index("}") + 1
    return message[:start] + message[end:], set(eval(message[start:end]))  # noqa: S307


@pytest.mark.parametrize("kwargs", [dict(padding="foo"), dict(padding_mode="foo")], ids=str)
def test_conv_layer_string_arguments_raise_torchs_messages(torch, kwargs):
    kind, message = torch_oracle.caught(lambda: conv_layers.Conv2d(4, 4, 3, **kwargs))
    t_kind, t_message = torch_oracle.caught(lambda: torch.nn.Conv2d(4, 4, 3, **kwargs))
    assert kind == t_kind == "ValueError"
    assert _set_free(message) == _set_free(t_message)


def test_conv_transpose_output_size_matches_torch(torch):
    ours = conv_layers.ConvTranspose2d(3, 4, 3, stride=2)
    theirs = torch.nn.ConvTranspose2d(3, 4, 3, stride=2)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    (x,) = _arrays(12, (2, 3, 5, 6), dtype=np.float32)
    out = ours(tt.tensor(x), output_size=(12, 14))
    t_out = theirs(torch.tensor(x), output_size=(12, 14))
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), 1e-5, 1e-6)


# -- a small CNN, trained in both libraries ------------------------------------------------------


def _cnn(lib_nn, conv, pool):
    return lib_nn.Sequential(
        conv(1, 4, 3, padding=1),
        lib_nn.ReLU(),
        pool(2),
        conv(4, 6, 3, stride=2),
        lib_nn.ReLU(),
        lib_nn.Flatten(),
        lib_nn.Linear(6 * 6 * 6, 5),
    )


def test_small_cnn_training_gives_torchs_losses(torch):
    """Twenty SGD steps of a small CNN on random 28 x 28 images, from the same weights in
    both libraries (built after the same `manual_seed`: the same initial weights, bit for
    bit): the losses agree with torch's at every step. The seed is fixed: at lr=0.1 the
    float32 roundings of the two libraries' convolutions grow apart on some initialisations
    (a quarter of them) beyond rtol=1e-5 by the twentieth step."""
    tt.manual_seed(0)
    ours = _cnn(tnn, conv_layers.Conv2d, conv_layers.MaxPool2d)
    torch.manual_seed(0)
    theirs = _cnn(torch.nn, torch.nn.Conv2d, torch.nn.MaxPool2d)
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    rng = np.random.default_rng(13)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 5, 8)
    opt, t_opt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    losses, t_losses = [], []
    for _ in range(20):
        opt.zero_grad()
        loss = tF.cross_entropy(ours(tt.tensor(x)), tt.tensor(y))
        loss.backward()
        opt.step()
        t_opt.zero_grad()
        t_loss = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        t_loss.backward()
        t_opt.step()
        losses.append(loss.item())
        t_losses.append(t_loss.item())
    np.testing.assert_allclose(losses, t_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
