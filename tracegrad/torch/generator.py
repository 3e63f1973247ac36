"""`Generator`: torch's CPU generator, so `torch.Generator().manual_seed(s)` draws torch's
numbers: the same Mersenne Twister (NumPy's MT19937, seeded as ATen's `mt19937`) under ATen's CPU
kernels (`randperm`, `randint`, int64 `random_`, uniforms, `multinomial`). `default_generator`
is the shim's global stream (`torch.manual_seed`, NumPy's PCG64) under the same kernels: unseeded
shuffles are not torch's."""

from __future__ import annotations

import numpy as np

from tracegrad.torch.creation_from_data import _check_device, tensor
from tracegrad.torch.ops import creation
from tracegrad.torch.tensor import Tensor

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721  # ATen's `default_rng_seed_val`


class Generator:
    """A seeded stream of 32-bit words (torch's `random()`); 64-bit draws take two, the first
    as the high half (ATen's `random64()`)."""

    def __init__(self, device="cpu") -> None:
        _check_device(device)
        self._bits = np.random.MT19937()
        self.manual_seed(_DEFAULT_SEED)

    @property
    def device(self) -> str:
        return "cpu"

    def manual_seed(self, seed) -> Generator:
        """Seeds the twister with the seed's low 32 bits (ATen's `init_with_uint32`)."""
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self._bits._legacy_seeding(self._seed & 0xFFFFFFFF)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Seeds from the operating system's entropy; returns the seed."""
        seed = int(np.random.SeedSequence().entropy) % 2**64
        self.manual_seed(seed)
        return seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (tracegrad's layout: the seed, the position and the 624
        words; torch's ByteTensor has another), for `set_state`."""
        state = self._bits.state["state"]
        words = np.concatenate(
            [[self._seed & 0xFFFFFFFF, self._seed >> 32, state["pos"]], state["key"]]
        ).astype("<u4")
        return tensor(words.view(np.uint8))

    def set_state(self, new_state: Tensor) -> Generator:
        raw = np.asarray(new_state.numpy(), np.uint8)
        if raw.shape != (627 * 4,):
            raise RuntimeError("Expected a Generator state from tracegrad's get_state()")
        words = raw.view("<u4")
        self._seed = int(words[0]) | int(words[1]) << 32
        state = {"key": words[3:].astype(np.uint32), "pos": int(words[2])}
        self._bits.state = {"bit_generator": "MT19937", "state": state}
        return self

    # -- the draws (ATen's CPU kernels) ---------------------------------------------------------
    def _random32(self, count: int) -> np.ndarray:
        return self._bits.random_raw(count).astype(np.uint64)

    def _random64(self, count: int) -> np.ndarray:
        words = self._random32(2 * count).reshape(count, 2)
        return (words[:, 0] << np.uint64(32)) | words[:, 1]

    def _random_int64(self) -> int:
        """`torch.empty((), dtype=torch.int64).random_(generator=g)`: 63 random bits."""
        return int(self._random64(1)[0] % np.uint64(2**63))

    def _randperm(self, n: int) -> list[int]:
        """ATen's `randperm_cpu`: Fisher-Yates, swapping `i` with `i + random() % (n - i)`."""
        perm = list(range(n))
        if n > 1:
            offsets = (self._random32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
            for i, z in enumerate(offsets):
                perm[i], perm[i + z] = perm[i + z], perm[i]
        return perm

    def _randint(self, low: int, high: int, count: int) -> np.ndarray:
        """`randint(low, high)`: `random() % range`, or `random64()` for ranges of 2**32 up."""
        span = high - low
        words = self._random64(count) if span >= 2**32 else self._random32(count)
        return (words % np.uint64(span)).astype(np.int64) + low

    def _uniform(self, count: int) -> np.ndarray:
        """Doubles in [0, 1): the low 53 bits of `random64()`, scaled."""
        mantissa = self._random64(count) & np.uint64((1 << 53) - 1)
        return mantissa.astype(np.float64) * (1.0 / (1 << 53))

    def _multinomial(self, weights: np.ndarray, num_samples: int, replacement: bool) -> list:
        """`torch.multinomial` of 1-d float64 `weights`, with its checks and messages."""
        n = weights.shape[-1]
        if not replacement and num_samples > n:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        if not replacement or num_samples == 1:
            # Gumbel top-k: the largest weights / Exp(1) draws; ATen's vectorised log1p may
            # differ from NumPy's in the last bit for long weight vectors
            if not (np.max(weights) < np.inf and np.min(weights) >= 0):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            if weights.sum() == 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            keys = weights / -np.log1p(-self._uniform(n))
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
        cumulative = np.cumsum(weights)
        if not cumulative[-1] > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cumulative = cumulative / cumulative[-1]
        cumulative[-1] = 1.0
        return np.searchsorted(cumulative, self._uniform(num_samples), side="left").tolist()


class _DefaultGenerator(Generator):
    """The shim's global stream (`creation._rng`, rebound by `torch.manual_seed`) behind the
    same draws: what samplers and `random_split` use without a generator."""

    def __init__(self) -> None:
        self._seed = None

    def manual_seed(self, seed) -> Generator:
        creation.manual_seed(seed)
        self._seed = seed
        return self

    def initial_seed(self):
        return self._seed

    def get_state(self) -> Tensor:
        raise NotImplementedError(
            "tracegrad's default_generator is NumPy's global stream: save it with "
            "tracegrad.torch.manual_seed, or use a torch.Generator"
        )

    set_state = get_state

    def _random32(self, count: int) -> np.ndarray:
        return creation._rng.integers(0, 2**32, size=count, dtype=np.uint64)


default_generator = _DefaultGenerator()
