"""PyTorch's printing of tensors (torch/_tensor_str.py), on NumPy arrays.

The real and the imaginary parts each get a formatter of their own (fixed or scientific, with
or without decimals, one width for all of a part's elements), and elements are joined as
`re+imj` in rows that fit PyTorch's 80 columns; above 1000 elements the middle of each axis is
summarized as `...`. The suffixes (`dtype=`, `grad_fn=`) wrap as PyTorch's do (`add_suffixes`).
"""

from __future__ import annotations

import math

import numpy as np

_PRECISION = 4
_THRESHOLD = 1000
_EDGEITEMS = 3
_LINEWIDTH = 80


class _PartFormatter:
    """PyTorch's `_Formatter` for the real (or imaginary) parts of a complex tensor."""

    def __init__(self, part: np.ndarray):
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        values = part.reshape(-1)
        nonzero = values[np.isfinite(values) & (values != 0)]
        if nonzero.size == 0:
            return
        magnitudes = np.abs(nonzero.astype(np.float64))
        low, high = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        self.sci_mode = bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
        for v in nonzero.tolist():
            if self.sci_mode:
                width = len(f"{v:.{_PRECISION}e}")
            elif self.int_mode:
                width = len(f"{v:.0f}") + 1
            else:
                width = len(f"{v:.{_PRECISION}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value: float) -> str:
        if self.sci_mode:
            text = f"{value:{self.max_width}.{_PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{_PRECISION}f}"
        return (self.max_width - len(text)) * " " + text


def _element(z: complex, re: _PartFormatter, im: _PartFormatter) -> str:
    real = re.format(z.real)
    imag = (im.format(z.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(value: np.ndarray) -> np.ndarray:
    """The elements PyTorch shows of a summarized array (`get_summarized_data`)."""
    if value.ndim == 0:
        return value
    if value.shape[0] > 2 * _EDGEITEMS:
        rows = [*value[:_EDGEITEMS], *value[-_EDGEITEMS:]]
    else:
        rows = list(value)
    if value.ndim == 1:
        return np.asarray(rows)
    return np.stack([_summarized(r) for r in rows])


def _text(value, indent: int, summarize: bool, re, im) -> str:
    if value.ndim == 0:
        return _element(complex(value), re, im)
    long = summarize and value.shape[0] > 2 * _EDGEITEMS
    if value.ndim == 1:
        per_line = max(1, (_LINEWIDTH - indent) // (re.max_width + 2 + im.max_width + 1))
        items = value.tolist()
        if long:
            data = [_element(z, re, im) for z in items[:_EDGEITEMS]] + [" ..."]
            data += [_element(z, re, im) for z in items[-_EDGEITEMS:]]
        else:
            data = [_element(z, re, im) for z in items]
        lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    rows = range(value.shape[0])
    if long:
        shown = [*rows[:_EDGEITEMS], None, *rows[-_EDGEITEMS:]]
    else:
        shown = list(rows)
    slices = ["..." if i is None else _text(value[i], indent + 1, summarize, re, im) for i in shown]
    return "[" + ("," + "\n" * (value.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def complex_text(value: np.ndarray, indent: int) -> str:
    """A complex array as PyTorch prints a tensor's values, `indent` columns in."""
    if value.size == 0:
        return "[]"
    summarize = value.size > _THRESHOLD
    shown = _summarized(value) if summarize else value
    re, im = _PartFormatter(shown.real), _PartFormatter(shown.imag)
    return _text(value, indent, summarize, re, im)


def _real_text(value: np.ndarray) -> str:
    """PyTorch's printing: four decimals, scientific when the magnitudes span a lot."""
    kw = {}
    if value.dtype.kind == "f" and value.size:
        finite = np.abs(value[np.isfinite(value)].astype(np.float64))
        nonzero = finite[finite != 0]
        if nonzero.size and (nonzero.max() >= 1e8 or nonzero.max() / nonzero.min() > 1e3):
            kw["formatter"] = {"float_kind": lambda v: f"{v:.4e}"}
        elif bool(np.any(finite != np.round(finite))):
            kw["floatmode"] = "fixed"
    return np.array2string(value, separator=", ", prefix="tensor(", precision=4, **kw)


def values_text(value: np.ndarray, indent: int) -> str:
    """The values of `tensor(...)` as PyTorch prints them; `indent` columns precede them."""
    return complex_text(value, indent) if value.dtype.kind == "c" else _real_text(value)


def add_suffixes(text: str, suffixes: list[tuple[str, int]], indent: int) -> str:
    """PyTorch's `_add_suffixes`: `, suffix` after the values, on a new line where the last
    line would pass 80 columns. Each suffix comes with its length in PyTorch's text
    (`dtype=torch.complex128` is longer than ours), so the lines break where PyTorch's do."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix, torch_len in suffixes:
        if last_line_len + torch_len + 2 > _LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + torch_len
        else:
            parts.append(", " + suffix)
            last_line_len += torch_len + 2
    parts.append(")")
    return "".join(parts)
