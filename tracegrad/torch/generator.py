"""`Generator`: torch's CPU generator, and `default_generator`, the global stream that
`torch.manual_seed` seeds and every sampler without `generator=` draws from.

The twister is NumPy's MT19937, seeded as ATen's `mt19937` (its 32-bit words are torch's
`random()`; `random64()` takes two, the first as the high half), and the draws are ATen's CPU
kernels on those words, vectorised: uniforms (`uniform_real_distribution`), normals
(`normal_kernel`: `normal_fill` from 16 elements up, else Box-Muller pairs keeping the second
sample for the next call until a reseed), `random_(from, to)`, `randperm`, Bernoulli,
exponential and `multinomial`. The floating-point steps are those of PyTorch's x86-64 AVX2
kernels (`aten_math`). `get_state` is torch's 5056-byte `CPUGeneratorImplState`, so states
move between the two libraries. Dropout's `bernoulli_(1 - p)` is the twister's kernel too:
PyTorch's builds outside fbcode no longer run MKL's VSL stream there (pytorch#132395).

Not torch's numbers (same seed, same numbers; each still draws from this twister, so it moves
the stream differently from torch): `poisson`, the `distributions` package and RReLU's
training slopes (NumPy's samplers, `_numpy`). `orthogonal_` draws torch's normals but
factorises them with NumPy's QR (equal to rounding). Torch builds without AVX2 (or on ARM)
compute float32 normals with libm and may differ from these in the last bit; float64 normals
assume NumPy and ATen call the same libm (NumPy's own SIMD float64 log/sin/cos, on AVX-512
machines, may differ in the last bit). bfloat16 has no NumPy dtype.
"""

from __future__ import annotations

import math
import os

import numpy as np

from tracegrad.torch.aten_math import fma32, fma64, normal_fill_16
from tracegrad.torch.creation_from_data import _check_device, tensor
from tracegrad.torch.tensor import Tensor

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721  # ATen's `default_rng_seed_val`
_N = 624  # the twister's words
_STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState)
# CPUGeneratorImplState: the legacy POD (seed, left, seeded, next, 624 words held as uint64,
# normal_x, normal_y, normal_rho, normal_is_valid) then the float normal and its flag
_STATE = np.dtype(
    {
        "names": ["seed", "left", "seeded", "next", "words", "normal_y", "normal_valid"]
        + ["float_normal", "float_valid"],
        "formats": ["<u8", "<i4", "<i4", "<u8", ("<u8", _N), "<f8", "<i4", "<f4", "u1"],
        "offsets": [0, 8, 12, 16, 24, 5024, 5040, 5048, 5052],
        "itemsize": _STATE_BYTES,
    }
)
_F32_DIGITS_MASK = np.uint64((1 << 24) - 1)
_F64_DIGITS_MASK = np.uint64((1 << 53) - 1)


def _seeded_words(seed: int) -> np.ndarray:
    """The 624 words `init_with_uint32(seed)` writes (before the first twist)."""
    bits = np.random.MT19937()
    bits._legacy_seeding(seed & 0xFFFFFFFF)
    return bits.state["state"]["key"]


class Generator:
    """torch's `torch.Generator` for the CPU: a seeded Mersenne Twister with its state
    functions, and ATen's samplers as the private `_` methods, which return NumPy arrays."""

    def __init__(self, device="cpu") -> None:
        _check_device(device)
        self._bits = np.random.MT19937()
        self._numpy_view = np.random.Generator(self._bits)
        self.manual_seed(_DEFAULT_SEED)

    @property
    def device(self) -> str:
        return "cpu"

    def manual_seed(self, seed) -> Generator:
        """Seeds the twister with the seed's low 32 bits (ATen's `init_with_uint32`) and drops
        the kept normal samples."""
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self._bits._legacy_seeding(self._seed & 0xFFFFFFFF)
        self._next_double_normal = self._next_float_normal = None
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Seeds from the operating system's entropy; returns the seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def get_state(self) -> Tensor:
        """The state as torch's uint8 tensor of 5056 bytes (`CPUGeneratorImplState`)."""
        state = self._bits.state["state"]
        pos = int(state["pos"])
        fresh = pos == _N and np.array_equal(state["key"], _seeded_words(self._seed))
        record = np.zeros((), _STATE)
        record["seed"], record["left"], record["seeded"] = self._seed, _N + 1 - pos, 1
        record["next"] = 0 if fresh else pos  # torch's engine counts from 0 after a seed
        record["words"] = state["key"]
        if self._next_double_normal is not None:
            record["normal_y"], record["normal_valid"] = self._next_double_normal, 1
        if self._next_float_normal is not None:
            record["float_normal"], record["float_valid"] = self._next_float_normal, 1
        return tensor(np.frombuffer(record.tobytes(), np.uint8))

    def set_state(self, new_state) -> Generator:
        """Restores a state from `get_state` (this library's or torch's)."""
        # torch's messages, its `torch.ByteTensor` written as the dtype (SHIM_SEMANTICS.md)
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a uint8, but got {type(new_state).__name__}")
        if new_state.dtype != np.uint8:
            raise TypeError("RNG state must be a uint8")
        raw = np.ascontiguousarray(new_state.numpy()).reshape(-1)
        if raw.size != _STATE_BYTES:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input "
                f"RNG state size to be {raw.size}"
            )
        record = np.frombuffer(raw.tobytes(), _STATE)[0]
        left, consumed = int(record["left"]), int(record["next"])
        if not (record["seeded"] and 0 < left <= _N and consumed <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = (record["words"] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        # ATen twists when `left` reaches 0, NumPy when `pos` reaches 624
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": _N + 1 - left}}
        self._seed = int(record["seed"])
        self._next_double_normal = float(record["normal_y"]) if record["normal_valid"] else None
        self._next_float_normal = (
            np.float32(record["float_normal"]) if record["float_valid"] else None
        )
        return self

    # -- the words ------------------------------------------------------------------------------
    def _random32(self, count: int) -> np.ndarray:
        """`count` draws of `random()`, as uint64."""
        return self._bits.random_raw(count)

    def _random64(self, count: int) -> np.ndarray:
        words = self._random32(2 * count).reshape(count, 2)
        return (words[:, 0] << np.uint64(32)) | words[:, 1]

    def _random_int64(self) -> int:
        """`torch.empty((), dtype=torch.int64).random_(generator=g)`: 63 random bits."""
        return int(self._random64(1)[0] % np.uint64(2**63))

    def _numpy(self) -> np.random.Generator:
        """NumPy's samplers on this twister (for draws whose ATen kernels are not reproduced:
        they share the stream, not torch's numbers)."""
        return self._numpy_view

    # -- ATen's kernels -------------------------------------------------------------------------
    def _unit(self, count: int, dtype) -> np.ndarray:
        """`count` uniforms in [0, 1): the low 53 bits of `random64()` for float64, the low 24
        of `random()` (in float32) for the other floating dtypes."""
        if np.dtype(dtype) == np.float64:
            return (self._random64(count) & _F64_DIGITS_MASK).astype(np.float64) * 2.0**-53
        bits = self._random32(count) & _F32_DIGITS_MASK
        return bits.astype(np.float32) * np.float32(2.0**-24)

    def _uniform(self, count: int, dtype=np.float64, low=0.0, high=1.0) -> np.ndarray:
        """`uniform_kernel`: `fma(u, to - from, from)` in float64, or float32 for the narrower
        dtypes, cast to `dtype`, with a value that rounds up to `to` replaced by `from`."""
        dtype = np.dtype(dtype)
        work = np.float64 if dtype == np.float64 else np.float32
        u = self._unit(count, work)
        if low == 0 and high == 1:
            values = u.astype(dtype)  # fma(u, 1, 0) is u
        else:
            low_w, high_w = work(low), work(high)
            fma = fma64 if work is np.float64 else fma32
            values = fma(u, high_w - low_w, low_w).astype(dtype)
        return np.where(values == dtype.type(high), dtype.type(low), values)

    def _normal(self, count: int, dtype=np.float64, mean=0.0, std=1.0) -> np.ndarray:
        """`normal_kernel` on a contiguous tensor of `count` elements of `dtype`."""
        dtype = np.dtype(dtype)
        if count < 16:
            return self._normal_pairs(count, mean, std).astype(dtype)
        work = np.dtype(np.float64 if dtype == np.float64 else np.float32)
        blocks = count // 16
        if dtype == work:  # all the uniforms first (the tail's are never read), 16 more for it
            head = self._unit(count, work)[: blocks * 16]
        else:  # float16: 16 uniforms per block into a float buffer
            head = self._unit(blocks * 16, work)
        out = np.empty(count, dtype)
        out[: blocks * 16] = normal_fill_16(head.reshape(blocks, 16), mean, std).reshape(-1)
        if count % 16:  # the last 16 again, from 16 new uniforms
            tail = self._unit(16, work).reshape(1, 16)
            out[count - 16 :] = normal_fill_16(tail, mean, std).reshape(-1)
        return out

    def _normal_pairs(self, count: int, mean, std) -> np.ndarray:
        """`normal_distribution<double>` `count` times: Box-Muller on two uniforms gives
        `r cos(theta)` and keeps `r sin(theta)` for the next draw (until a reseed); each sample
        becomes `fma(z, std, mean)`."""
        samples = []
        for _ in range(count):
            if self._next_double_normal is not None:
                samples.append(self._next_double_normal)
                self._next_double_normal = None
                continue
            u1, u2 = self._unit(2, np.float64).tolist()
            radius = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            self._next_double_normal = radius * math.sin(theta)
            samples.append(radius * math.cos(theta))
        return fma64(np.array(samples, np.float64), std, mean)

    def _bernoulli(self, count: int, p: float) -> np.ndarray:
        """`bernoulli_(p)` for a number p: a float64 uniform below p, as booleans."""
        return self._unit(count, np.float64) < p

    def _bernoulli_tensor(self, probs: np.ndarray) -> np.ndarray:
        """`bernoulli` of a tensor of probabilities: a uniform below each, compared in float64
        for float64 probabilities and in float32 for the others."""
        work = np.float64 if probs.dtype == np.float64 else np.float32
        u = self._unit(probs.size, work).reshape(probs.shape)
        return u < probs.astype(work)

    def _exponential(self, count: int, dtype=np.float64, rate=1.0) -> np.ndarray:
        """`exponential_`: `-1 / rate * log1p(-u)` in float64, cast to `dtype`."""
        return ((-1.0 / rate) * np.log1p(-self._unit(count, np.float64))).astype(dtype)

    def _randint(self, low: int, high: int, count: int) -> np.ndarray:
        """`random_(low, high)`: `random() % range + low`, `random64()` for ranges of 2**28 up
        (PyTorch's builds outside fbcode)."""
        span = high - low
        words = self._random64(count) if span >= 2**28 else self._random32(count)
        return (words % np.uint64(span)).astype(np.int64) + low

    def _randperm(self, n: int) -> np.ndarray:
        """ATen's `randperm_cpu`: Fisher-Yates, step i swapping `i` with `i + random() % (n-i)`
        (vectorised: `_swaps`); from 2**32 / 20 elements, the inside-out shuffle on
        `random64()`."""
        if n < 0xFFFFFFFF // 20:
            if n < 2:
                return np.arange(n, dtype=np.int64)
            offsets = self._random32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)
            return _swaps(offsets.astype(np.int64))
        sources = (self._random64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
        perm = np.empty(n, np.int64)
        for i, z in enumerate(sources):  # a Python loop over 2**27 elements and more: rare
            perm[i] = perm[z]
            perm[z] = i
        return perm

    def _multinomial(self, weights: np.ndarray, num_samples: int, replacement: bool) -> list:
        """`torch.multinomial` of one row of weights (float32 or float64), with its checks and
        messages: without replacement (or for one sample) the largest `weights / Exp(1)` in
        the weights' dtype; with replacement a binary search of float64 uniforms in the
        normalised cumulative sums."""
        n = weights.shape[-1]
        if not replacement and num_samples > n:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        if not replacement or num_samples == 1:
            if not (np.max(weights) < np.inf and np.min(weights) >= 0):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            if weights.sum() == 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            keys = weights / self._exponential(n, weights.dtype)
            if num_samples == 1:
                return [int(np.argmax(keys))]
            return np.argsort(-keys, kind="stable")[:num_samples].tolist()
        if np.any(weights < 0):
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry < 0)"
            )
        if not np.all(np.isfinite(weights)):
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry = infinity "
                "or NaN)"
            )
        cumulative = np.cumsum(weights)  # sequential sums, in the weights' dtype, as ATen's
        if not cumulative[-1] > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cumulative = cumulative / cumulative[-1]
        cumulative[-1] = 1
        u = self._unit(num_samples, np.float64)
        return np.searchsorted(cumulative.astype(np.float64), u, side="left").tolist()


def _swaps(offsets: np.ndarray) -> np.ndarray:
    """The permutation that swapping position i with t_i = i + offsets[i], for i = 0, 1, ...,
    makes of 0..n-1, without a loop over the swaps. Let w_p be what position p holds just
    before step p (and w_{n-1} what it ends with). Step i leaves w_i at t_i and finalises
    position i with what t_i held, so: w_p is w_k for the last step k < p with t_k = p (p
    itself if none; pointer jumping follows these chains), and position i ends with w_i if
    t_i = i, else with w_k for the last step k < i aiming at t_i (t_i itself if none)."""
    n = offsets.size + 1
    steps = np.arange(n - 1)
    targets = steps + offsets
    moves = targets != steps
    # the last step before p aiming at p: steps aim at or after themselves, so the latest of
    # all the moves aiming at p
    feeder = np.full(n, -1)
    np.maximum.at(feeder, targets[moves], steps[moves])
    root = np.where(feeder >= 0, feeder, np.arange(n))
    while True:
        jumped = root[root]
        if np.array_equal(jumped, root):
            break
        root = jumped
    held = root  # w_p: the chains end where nothing arrived, holding their own index
    # for each move, the previous move aiming at the same target
    moving = steps[moves]
    order = moving[np.argsort(targets[moves], kind="stable")]
    same = targets[order[1:]] == targets[order[:-1]]
    previous = np.full(n - 1, -1)
    previous[order[1:][same]] = order[:-1][same]
    perm = np.empty(n, np.int64)
    perm[: n - 1] = np.where(
        moves, np.where(previous >= 0, held[np.maximum(previous, 0)], targets), held[: n - 1]
    )
    perm[n - 1] = held[n - 1]
    return perm


default_generator = Generator()
default_generator.seed()  # torch seeds its default generator nondeterministically at start-up
