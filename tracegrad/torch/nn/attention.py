"""Attention as PyTorch's functional API computes it: `scaled_dot_product_attention` and
`multi_head_attention_forward` (the `MultiheadAttention` module is in `transformer.py`).

Everything is the textbook formula over batched matmuls, `softmax(q k^T * scale + bias) v`,
with PyTorch's masks: a boolean `attn_mask` of SDPA marks the positions that take part, while
a boolean mask of `MultiheadAttention` (`attn_mask`, `key_padding_mask`) marks those that are
masked out; both become additive float masks (`-inf` where masked). Messages and shape
checks are PyTorch's. This module builds on the tensor operations only (not on `functional`), so
`functional` can re-export it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.tensor import Tensor

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]

_TORCH_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _torch_name(dtype) -> str:
    """PyTorch's C++ name of a dtype in its SDPA messages (`float`, `double`, `long int`)."""
    return {"int64": "long int", "int32": "int", "bool": "bool"}.get(
        dtype.name, _TORCH_DTYPE_NAMES.get(dtype.name, dtype.name)
    )


def _linear(x, weight, bias):
    """`x @ weight.T + bias` (the shapes are the module's own: no checks needed)."""
    out = ops.matmul(x, ops.t(weight))
    return out if bias is None else ops.add(out, bias)


def _dropout(x, p: float):
    """Inverted dropout of attention weights (tracegrad's generator draws the mask)."""
    if p == 1.0:
        return ops.mul(x, 0.0)
    keep = ops.ge(ops.rand(x.shape, dtype=x.dtype), p)
    return ops.mul(ops.mul(x, keep.to(x.dtype)), 1.0 / (1.0 - p))


def _causal_bias(target: int, source: int, dtype) -> Tensor:
    """0 on and below the diagonal, -inf above (query i sees keys 0..i)."""
    upper = np.triu(np.ones((target, source), bool), 1)
    return Tensor(np.where(upper, -np.inf, 0.0).astype(dtype))


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa: bool = False,
):
    """`softmax(q @ k^T * scale + bias) @ v` over the last two axes (leading axes broadcast).

    `scale` defaults to 1 / sqrt(q.size(-1)). A boolean `attn_mask` is True where the query may
    attend; a float one is added to the scores. `is_causal` masks keys after the query's own
    position. `dropout_p` drops attention weights (always: the caller passes 0 in eval).
    `enable_gqa` repeats each key/value head for a group of query heads."""
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_torch_name(query.dtype)} key.dtype: {_torch_name(key.dtype)} and value.dtype: "
            f"{_torch_name(value.dtype)} instead."
        )
    if attn_mask is not None and attn_mask.dtype != np.bool_ and attn_mask.dtype != query.dtype:
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_torch_name(attn_mask.dtype)} and  query.dtype: "
            f"{_torch_name(query.dtype)} instead."
        )
    target, source = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        group = query.shape[-3] // key.shape[-3]
        key, value = _repeat_heads(key, group), _repeat_heads(value, group)
    scores = ops.mul(ops.matmul(query, ops.transpose(key, -2, -1)), scale_factor)
    if is_causal:
        scores = ops.add(scores, _causal_bias(target, source, query.dtype))
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = ops.masked_fill(scores, ops.logical_not(attn_mask), float("-inf"))
        else:
            scores = ops.add(scores, attn_mask)
    weights = ops.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p)
    return ops.matmul(weights, value)


def _repeat_heads(x, group: int):
    """`x.repeat_interleave(group, -3)`: each key/value head serves `group` query heads."""
    *lead, heads, length, dim = x.shape
    wide = ops.expand(ops.unsqueeze(x, -3), (*lead, heads, group, length, dim))
    return ops.reshape(wide, (*lead, heads * group, length, dim))


# -- multi-head attention -----------------------------------------------------------------------


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check=True):
    """A boolean mask as an additive float mask (-inf where True); float masks unchanged."""
    if mask is None:
        return None
    is_float = mask.dtype.kind == "f"
    if mask.dtype != np.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.",
            stacklevel=3,
        )
    if not is_float:
        mask = ops.masked_fill(ops.zeros(mask.shape, dtype=target_type), mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    return None if input is None else input.dtype


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """PyTorch's checks of the dimensions; True when the input is batched (3-D)."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead"
                )
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(
                    f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def _in_projection(query, key, value, weights, biases):
    """q, k, v projected by their weights (a packed (3E, E) weight is split in three)."""
    return tuple(_linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _check_mask_shape(attn_mask, target: int, source: int, batch_heads: int):
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (target, source):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                f"{(target, source)}."
            )
        return ops.unsqueeze(attn_mask, 0)
    if tuple(attn_mask.shape) != (batch_heads, target, source):
        raise RuntimeError(
            f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
            f"{(batch_heads, target, source)}."
        )
    return attn_mask


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight,
    out_proj_bias,
    training: bool = True,
    key_padding_mask=None,
    need_weights: bool = True,
    attn_mask=None,
    use_separate_proj_weight: bool = False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
):
    """PyTorch's multi-head attention on time-major (L, N, E) inputs (or unbatched (L, E)):
    returns (output, weights averaged over heads (or per head), or None)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = (ops.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = ops.unsqueeze(key_padding_mask, 0)
    target, batch, embed_dim = query.shape
    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask", query.dtype
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    # the causal hint only lets PyTorch pick a kernel; the given mask says the same thing
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check=False)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}"
            )
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        weights = ops.chunk(in_proj_weight, 3)
    biases = (None,) * 3 if in_proj_bias is None else ops.chunk(in_proj_bias, 3)
    q, k, v = _in_projection(query, key, value, weights, biases)
    if attn_mask is not None:
        attn_mask = _check_mask_shape(attn_mask, target, key.shape[0], batch * num_heads)
    if bias_k is not None and bias_v is not None:
        k = ops.cat([k, ops.expand(bias_k, (1, batch, embed_dim))], 0)
        v = ops.cat([v, ops.expand(bias_v, (1, batch, embed_dim))], 0)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    q = ops.transpose(ops.reshape(q, (target, batch * num_heads, head_dim)), 0, 1)
    k = ops.transpose(ops.reshape(k, (k.shape[0], batch * num_heads, head_dim)), 0, 1)
    v = ops.transpose(ops.reshape(v, (v.shape[0], batch * num_heads, head_dim)), 0, 1)
    if add_zero_attn:
        zeros = ops.zeros((batch * num_heads, 1, head_dim), dtype=k.dtype)
        k = ops.cat([k, zeros], 1)
        v = ops.cat([v, zeros], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    source = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != batch:
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {batch}, but got "
                f"{key_padding_mask.shape[0]}"
            )
        if key_padding_mask.shape[1] != source:
            raise AssertionError(
                f"Expected key_padded_mask.shape[1] to be {source}, but got "
                f"{key_padding_mask.shape[1]}"
            )
        per_head = ops.reshape(
            ops.expand(
                ops.reshape(key_padding_mask, (batch, 1, 1, source)), (-1, num_heads, 1, -1)
            ),
            (batch * num_heads, 1, source),
        )
        attn_mask = per_head if attn_mask is None else ops.add(attn_mask, per_head)
    if not training:
        dropout_p = 0.0
    scores = ops.matmul(ops.mul(q, math.sqrt(1.0 / float(head_dim))), ops.transpose(k, -2, -1))
    if attn_mask is not None:
        scores = ops.add(scores, attn_mask)
    attn = ops.softmax(scores, -1)
    if dropout_p > 0.0:
        attn = _dropout(attn, dropout_p)
    out = ops.reshape(ops.transpose(ops.matmul(attn, v), 0, 1), (target * batch, embed_dim))
    out = ops.reshape(_linear(out, out_proj_weight, out_proj_bias), (target, batch, -1))
    if not need_weights:
        return (out if is_batched else ops.squeeze(out, 1)), None
    attn = ops.reshape(attn, (batch, num_heads, target, source))
    if average_attn_weights:
        attn = ops.mean(attn, 1)
    if not is_batched:
        return ops.squeeze(out, 1), ops.squeeze(attn, 0)
    return out, attn


def _pad_last(mask):
    """`F.pad(mask, (0, 1))`: one more (zero: not masked) column for the extra key."""
    if mask is None:
        return None
    zeros = ops.zeros((*mask.shape[:-1], 1), dtype=mask.dtype)
    return ops.cat([mask, zeros], -1)
