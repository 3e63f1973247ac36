"""`tracegrad.torch`: the PyTorch-style namespace, `import tracegrad.torch as torch`.

Everything with PyTorch's semantics lives here: `Tensor` and `tensor`, the functions and
factories (`torch.sum(x, dim)`, `cat`, `clamp`, `zeros`, `randn`, ...), `autograd`, `nn`,
`optim` (with `optim.lr_scheduler`), `utils.data`, `Generator`, grad modes, dtypes and
`manual_seed`. Tensors record the same IR nodes the functional
API traces (DESIGN.md §6). The top-level `tracegrad` keeps the functional API (JAX's
semantics) and a few aliases of the tensor entry points, so that `tg.sum` is never mistaken for
NumPy's inside `tg.grad`.

The parts, bottom up: `grad_mode`, `hooks`, `tensor` (the class), `graph` (the recorded nodes),
`recording`, `engine` (the backward pass), `function` (custom `autograd.Function`), `ops`
(PyTorch's functions), `methods` (the tensor methods built from them), `nn`, `optim`,
`generator` (torch's CPU random numbers), `utils.data`, `serialization` (`save`, `load`),
`func` and `autograd.functional` (functorch's transforms and PyTorch's functional API on
the recorded graph), `distributions`.

`device`: `torch.device`, and the `cuda` and `accelerator` namespaces of PyTorch's CPU
build; `testing`: `assert_close`.
"""

import importlib

from tracegrad.primitives import _scipy_installed
from tracegrad.torch import autograd, grad_mode, nn, ops, optim
from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.dtypes import *  # noqa: F403 - the dtype names, listed in dtypes.DTYPES
from tracegrad.torch.dtypes import DTYPES, get_default_dtype, set_default_dtype
from tracegrad.torch.grad_mode import *  # noqa: F403 - the grad modes, in grad_mode.__all__
from tracegrad.torch.ops import *  # noqa: F403 - PyTorch's functions, listed in ops.__all__
from tracegrad.torch.tensor import Tensor

__all__ = [
    "Tensor",
    "autograd",
    "get_default_dtype",
    "nn",
    "optim",
    "set_default_dtype",
    "tensor",
    *grad_mode.__all__,
    *ops.__all__,
    *DTYPES,
]

# torch.utils.data and torch.Generator (issue 25): the generator draws torch's CPU numbers
from tracegrad.torch import utils  # noqa: E402
from tracegrad.torch.generator import Generator, default_generator  # noqa: E402

__all__ += ["Generator", "default_generator", "utils"]

# torch.linalg and torch.fft (issue 15), and the top-level torch.det and torch.inverse
from tracegrad.torch import fft, linalg  # noqa: E402
from tracegrad.torch.linalg import det, inverse  # noqa: E402

__all__ += ["det", "fft", "inverse", "linalg"]

# the older top-level linear-algebra names (torch.cholesky, torch.svd, torch.qr, ...), over
# torch.linalg: imported here, after it (from tracegrad.torch.ops they would import it early)
from tracegrad.torch.ops import linalg_names  # noqa: E402
from tracegrad.torch.ops.linalg_names import *  # noqa: E402, F403 - in linalg_names.__all__

__all__ += linalg_names.__all__

# torch.save and torch.load (issue 23): JSON and raw arrays in a zip; reads torch.save's zip format
from tracegrad.torch import serialization  # noqa: E402
from tracegrad.torch.serialization import load, save  # noqa: E402

__all__ += ["load", "save", "serialization"]

# torch.func (issue 23): functorch's transforms on the recorded graph
from tracegrad.torch import func  # noqa: E402

__all__ += ["func"]

# devices of a CPU-only build, and torch.testing (issue 23 items 2 and 7)
from tracegrad.torch import testing  # noqa: E402
from tracegrad.torch.device import (  # noqa: E402
    accelerator,
    cuda,
    device,
    get_default_device,
    set_default_device,
)

__all__ += ["accelerator", "cuda", "device", "get_default_device", "set_default_device", "testing"]

# torch.distributions (issue 23): its densities use SciPy's special functions (tracegrad.scipy,
# an optional extra), so it is imported on first use, and listed only where SciPy is installed:
# `import tracegrad` must neither need nor import SciPy
if _scipy_installed():
    __all__ += ["distributions"]  # noqa: F405 - the lazy attribute of __getattr__ below


def __getattr__(name: str):
    if name == "distributions":  # (importing it binds the attribute: this runs once)
        return importlib.import_module("tracegrad.torch.distributions")
    raise AttributeError(f"module 'tracegrad.torch' has no attribute '{name}'")
