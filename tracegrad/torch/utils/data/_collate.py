"""torch's default collation (torch/utils/data/_utils/collate.py): a list of samples becomes
one batch of the same structure, tensors stacked along a new first dimension, NumPy arrays and
numbers made tensors (Python floats as float64, ints as int64), strings kept as lists; dicts,
namedtuples and sequences collate field by field (tuples become lists, as torch's)."""

from __future__ import annotations

import collections
import copy
import re

import numpy as np

from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.ops import as_tensor, stack
from tracegrad.torch.tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_convert(data):
    """The conversion without batching (`batch_size=None`): NumPy arrays and scalars become
    tensors, containers are converted entry by entry, everything else is kept."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data  # arrays of strings and objects
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(like, values: dict):
    """`values` in a mapping of `like`'s type: a mutable one is copied and updated (it may
    carry more than its items), an immutable one rebuilt, a plain dict where neither works."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuild_sequence(like, values: list):
    """`values` in a sequence of `like`'s type, as `_rebuild_mapping` (a list where neither
    copying nor construction works, as for `range`)."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map=None):
    """Collates `batch` by the type of its first element: an entry of `collate_fn_map` (exact
    type first, then `isinstance`), else mappings, namedtuples and sequences recursively."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        columns = {
            key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
        }
        return _rebuild_mapping(elem, columns)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        fields = (collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch))
        return elem_type(*fields)
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # tuples batch into lists, as torch's
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """`torch.stack(batch)`; NumPy's stack where nothing is recorded and nothing is promoted
    (no grad, one dtype and shape), as a loader stacks every batch."""
    first = batch[0]
    if all(
        not t.requires_grad and t.dtype == first.dtype and t.shape == first.shape for t in batch
    ):
        return Tensor._wrap(np.stack([t._cell.value for t in batch]))
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=np.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """The batch of a list of samples, as torch's `default_collate`."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
