"""tracegrad.torch.nn's attention and transformer encoder against torch:
`scaled_dot_product_attention` (bool and float masks, is_causal, scale, enable_gqa),
`MultiheadAttention` (kdim/vdim, add_bias_kv, add_zero_attn, batch_first, key_padding_mask,
attn_mask, need_weights, average_attn_weights, is_causal), `TransformerEncoderLayer` and
`TransformerEncoder` (post- and pre-norm, relu and gelu, masks, train with dropout 0 and eval):
outputs and the gradients of inputs and every parameter, float64 and float32; messages."""

from __future__ import annotations

import warnings
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.test_nn_recurrent import both, randn
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import attention, transformer

OURS = SimpleNamespace(
    MultiheadAttention=transformer.MultiheadAttention,
    TransformerEncoderLayer=transformer.TransformerEncoderLayer,
    TransformerEncoder=transformer.TransformerEncoder,
    TransformerDecoderLayer=transformer.TransformerDecoderLayer,
    TransformerDecoder=transformer.TransformerDecoder,
    Transformer=transformer.Transformer,
    functional=SimpleNamespace(scaled_dot_product_attention=attention.scaled_dot_product_attention),
)

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)


def lib_nn(torch, lib):
    return OURS if lib is tt else torch.nn


def run(torch, build, arrays, forward, dtype=np.float64):
    """`both` with our attention classes in place of torch.nn's."""
    return both(
        torch,
        lambda nn: build(torch.nn if nn is torch.nn else OURS),
        arrays,
        lambda lib, nn, m, t: forward(lib, lib_nn(torch, lib), m, t),
        dtype,
    )


class _NoParams:
    """A module-shaped stand-in for the functional tests (no parameters)."""

    def __init__(self, nn):
        self.training = True

    def double(self):
        return self

    float = double

    def train(self, mode=True):
        return self

    def state_dict(self):
        return {}

    def load_state_dict(self, sd):
        pass

    def named_parameters(self):
        return iter(())


# -- scaled_dot_product_attention ---------------------------------------------------------------


def _sdpa_cases():
    causal = np.tril(np.ones((4, 5), bool))
    return {
        "plain": {},
        "is_causal": {"is_causal": True},
        "scale": {"scale": 0.3},
        "bool mask": {"attn_mask": causal},
        "float mask": {"attn_mask": np.where(causal, 0.0, -2.5)},
        "broadcast mask": {"attn_mask": np.tril(np.ones((1, 3, 4, 5), bool))},
    }


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", list(_sdpa_cases()))
def test_sdpa_matches_torch(torch, case, dtype):
    kwargs = _sdpa_cases()[case]
    q, k, v = (randn(2, 3, 4 if i == 0 else 5, 8, dtype=dtype, seed=i) for i in range(3))
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.dtype.kind == "f":
        mask = mask.astype(dtype)

    def forward(lib, nn, m, t):
        extra = dict(kwargs)
        if mask is not None:
            extra["attn_mask"] = lib.tensor(mask)
        return [nn.functional.scaled_dot_product_attention(t["q"], t["k"], t["v"], **extra)]

    run(torch, _NoParams, {"q": q, "k": k, "v": v}, forward, dtype)


def test_sdpa_grouped_query_attention(torch):
    q, k, v = randn(2, 4, 3, 8), randn(2, 2, 5, 8, seed=1), randn(2, 2, 5, 8, seed=2)

    def forward(lib, nn, m, t):
        f = nn.functional.scaled_dot_product_attention
        return [f(t["q"], t["k"], t["v"], enable_gqa=True)]

    run(torch, _NoParams, {"q": q, "k": k, "v": v}, forward)


def test_sdpa_dropout_one_zeroes_everything():
    q = tt.tensor(randn(2, 3, 4))
    out = attention.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    np.testing.assert_array_equal(out.numpy(), 0.0)


# -- MultiheadAttention -------------------------------------------------------------------------


MHA_CONFIGS = {
    "packed": {},
    "kdim-vdim": {"kdim": 5, "vdim": 6},
    "bias-kv-zero-attn": {"add_bias_kv": True, "add_zero_attn": True},
    "batch-first-no-bias": {"batch_first": True, "bias": False},
}


def _mha_calls():
    above = np.triu(np.ones((3, 4), bool), 2)  # True: masked (MultiheadAttention's meaning)
    padding = np.zeros((2, 4), bool)
    padding[0, -1] = True
    return {
        "plain": {},
        "key_padding_mask": {"key_padding_mask": padding},
        "bool attn_mask, no weights": {"attn_mask": above, "need_weights": False},
        "float attn_mask, per-head weights": {
            "attn_mask": np.where(above, -1.5, 0.0),
            "average_attn_weights": False,
        },
        "3-D mask and padding": {
            "attn_mask": np.broadcast_to(above, (4, 3, 4)).copy(),
            "key_padding_mask": padding,
        },
    }


@pytest.mark.parametrize("config", list(MHA_CONFIGS))
@pytest.mark.parametrize("call", list(_mha_calls()))
def test_multihead_attention_matches_torch(torch, config, call):
    # float32 for every call of the first configuration, float64 for all
    dtype = np.float32 if config == "packed" else np.float64
    cfg, kwargs = MHA_CONFIGS[config], _mha_calls()[call]
    target, source, batch = 3, 4, 2
    first = cfg.get("batch_first", False)

    def shaped(length, dim, seed):
        return randn(*((batch, length) if first else (length, batch)), dim, dtype=dtype, seed=seed)

    arrays = {
        "q": shaped(target, 8, 0),
        "k": shaped(source, cfg.get("kdim", 8), 1),
        "v": shaped(source, cfg.get("vdim", 8), 2),
    }

    def forward(lib, nn, mha, t):
        extra = {}
        for name, value in kwargs.items():
            if isinstance(value, np.ndarray):
                value = value.astype(dtype) if value.dtype.kind == "f" else value
                value = lib.tensor(value)
            extra[name] = value
        out, weights = mha(t["q"], t["k"], t["v"], **extra)
        return [out] if weights is None else [out, weights]

    run(torch, lambda nn: nn.MultiheadAttention(8, 2, **cfg), arrays, forward, dtype)


def test_multihead_attention_packed_float64(torch):
    x = randn(3, 2, 8)
    padding = np.zeros((2, 3), bool)
    padding[1, 0] = True

    def forward(lib, nn, mha, t):
        out, weights = mha(t["x"], t["x"], t["x"], key_padding_mask=lib.tensor(padding))
        return [out, weights]

    run(torch, lambda nn: nn.MultiheadAttention(8, 2), {"x": x}, forward)


def test_multihead_attention_unbatched_and_self(torch):
    x = randn(3, 8)
    causal = np.triu(np.full((3, 3), -np.inf), 1)

    def forward(lib, nn, mha, t):
        out1, w1 = mha(t["x"], t["x"], t["x"])
        out2, _ = mha(t["x"], t["x"], t["x"], attn_mask=lib.tensor(causal), is_causal=True)
        return [out1, w1, out2]

    run(torch, lambda nn: nn.MultiheadAttention(8, 4), {"x": x}, forward)


def test_multihead_attention_parameters_match_torch(torch):
    for cfg in MHA_CONFIGS.values():
        ours, theirs = (
            OURS.MultiheadAttention(8, 2, **cfg),
            torch.nn.MultiheadAttention(8, 2, **cfg),
        )
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
        ]
        assert repr(ours) == repr(theirs)
        if ours.in_proj_bias is not None:
            assert not ours.in_proj_bias.detach().numpy().any()
            assert not ours.out_proj.bias.detach().numpy().any()
    w = OURS.MultiheadAttention(8, 2).in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ on (24, 8)
    assert np.abs(w).max() <= bound and w.std() > 0.3 * bound


def _mha_errors():
    def mha(nn):
        return nn.MultiheadAttention(8, 2)

    def z(lib, *shape, dtype=None):
        return lib.zeros(*shape) if dtype is None else lib.zeros(*shape, dtype=dtype)

    return {
        "not divisible": lambda lib, nn: nn.MultiheadAttention(10, 3),
        "non-positive": lambda lib, nn: nn.MultiheadAttention(0, 2),
        "embed dim": lambda lib, nn: mha(nn)(z(lib, 3, 2, 6), z(lib, 3, 2, 8), z(lib, 3, 2, 8)),
        "causal without mask": lambda lib, nn: mha(nn)(
            z(lib, 3, 2, 8), z(lib, 3, 2, 8), z(lib, 3, 2, 8), is_causal=True
        ),
        "integer mask": lambda lib, nn: mha(nn)(
            z(lib, 3, 2, 8),
            z(lib, 3, 2, 8),
            z(lib, 3, 2, 8),
            attn_mask=z(lib, 3, 3, dtype=lib.int64),
        ),
        "2-D mask shape": lambda lib, nn: mha(nn)(
            z(lib, 3, 2, 8), z(lib, 3, 2, 8), z(lib, 3, 2, 8), attn_mask=z(lib, 4, 3)
        ),
        "padding shape": lambda lib, nn: mha(nn)(
            z(lib, 3, 2, 8),
            z(lib, 3, 2, 8),
            z(lib, 3, 2, 8),
            key_padding_mask=z(lib, 2, 4, dtype=lib.bool),
        ),
        "key dims": lambda lib, nn: mha(nn)(z(lib, 3, 2, 8), z(lib, 3, 8), z(lib, 3, 8)),
        "sdpa dtypes": lambda lib, nn: nn.functional.scaled_dot_product_attention(
            z(lib, 1, 2, 4), z(lib, 1, 2, 4), z(lib, 1, 2, 4, dtype=lib.float64)
        ),
        "sdpa mask dtype": lambda lib, nn: nn.functional.scaled_dot_product_attention(
            z(lib, 1, 2, 4),
            z(lib, 1, 2, 4),
            z(lib, 1, 2, 4),
            attn_mask=z(lib, 2, 2, dtype=lib.int64),
        ),
        "activation": lambda lib, nn: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
    }


@pytest.mark.parametrize("case", list(_mha_errors()))
def test_messages_match_torch(torch, case):
    fn = _mha_errors()[case]
    assert_same_error(lambda: fn(tt, OURS), lambda: fn(torch, torch.nn))


def test_embed_dim_not_divisible_message():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        transformer.MultiheadAttention(10, 3)


# -- transformer encoder ------------------------------------------------------------------------


ENCODER_CONFIGS = {
    "post-norm relu": {},
    "pre-norm gelu batch-first": {"norm_first": True, "activation": "gelu", "batch_first": True},
    "no bias": {"bias": False, "layer_norm_eps": 1e-3},
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("config", list(ENCODER_CONFIGS))
@pytest.mark.parametrize("training", [True, False])
def test_transformer_encoder_matches_torch(torch, config, training, dtype):
    cfg = ENCODER_CONFIGS[config]
    first = cfg.get("batch_first", False)
    x = randn(*((2, 3) if first else (3, 2)), 8, dtype=dtype)
    causal = np.triu(np.full((3, 3), -np.inf), 1).astype(dtype)
    padding = np.zeros((2, 3), bool)
    padding[1, 2] = True
    float_padding = np.where(padding, -np.inf, 0.0).astype(dtype)

    def build(nn):
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the nested-tensor note; compared below
            encoder = nn.TransformerEncoder(layer, 2, norm=None, enable_nested_tensor=False)
        return encoder.train(training)

    def forward(lib, nn, encoder, t):
        out1 = encoder(t["x"])
        out2 = encoder(
            t["x"], mask=lib.tensor(causal), src_key_padding_mask=lib.tensor(float_padding)
        )
        out3 = encoder.layers[0](t["x"], src_key_padding_mask=lib.tensor(padding))
        return [out1, out2, out3]

    run(torch, build, {"x": x}, forward, dtype)


def test_transformer_encoder_with_final_norm(torch):
    x = randn(3, 2, 8)

    def build(nn):
        layer = nn.TransformerEncoderLayer(8, 4, dim_feedforward=16, dropout=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nn.TransformerEncoder(layer, 2, norm=layer.norm1.__class__(8))

    def forward(lib, nn, encoder, t):
        causal = lib.tensor(np.triu(np.full((3, 3), -np.inf), 1))
        return [encoder(t["x"], mask=causal, is_causal=True)]

    run(torch, build, {"x": x}, forward)


def test_encoder_parameters_and_warning_match_torch(torch):
    for cfg in ENCODER_CONFIGS.values():
        seen = []
        for nn in (OURS, torch.nn):
            layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **cfg)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                encoder = nn.TransformerEncoder(layer, 2)
            keys = [(k, tuple(v.shape)) for k, v in encoder.state_dict().items()]
            seen.append((keys, [str(w.message) for w in caught], repr(encoder)))
        assert seen[0] == seen[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(torch, norm_first, dtype):
    """The encoder-decoder `Transformer` (one layer each, dropout 0) with a causal target mask
    and a memory padding mask: outputs and every gradient."""
    src, tgt = randn(4, 2, 8, dtype=dtype), randn(3, 2, 8, dtype=dtype, seed=1)
    padding = np.zeros((2, 4), bool)
    padding[0, 3] = True

    def build(nn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the nested-tensor note
            return nn.Transformer(
                8, 2, 1, 1, dim_feedforward=16, dropout=0.0, norm_first=norm_first
            )

    def forward(lib, nn, model, t):
        mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=lib.float64).to(
            t["tgt"].dtype
        )
        out = model(t["src"], t["tgt"], tgt_mask=mask, memory_key_padding_mask=lib.tensor(padding))
        return [out]

    run(torch, build, {"src": src, "tgt": tgt}, forward, dtype)


def test_transformer_decoder_matches_torch(torch):
    tgt, memory = randn(2, 3, 8), randn(2, 5, 8, seed=1)

    def build(nn):
        layer = nn.TransformerDecoderLayer(
            8, 4, dim_feedforward=16, dropout=0.0, activation="gelu", batch_first=True
        )
        return nn.TransformerDecoder(layer, 2, norm=None)

    def forward(lib, nn, decoder, t):
        causal = lib.tensor(np.triu(np.full((3, 3), -np.inf), 1))
        return [decoder(t["tgt"], t["m"]), decoder(t["tgt"], t["m"], tgt_mask=causal)]

    run(torch, build, {"tgt": tgt, "m": memory}, forward)


_TRANSFORMER_ERRORS = {
    "batch": lambda lib, nn: nn.Transformer(8, 2, 1, 1, 16)(lib.zeros(3, 2, 8), lib.zeros(3, 4, 8)),
    "features": lambda lib, nn: nn.Transformer(8, 2, 1, 1, 16)(
        lib.zeros(3, 2, 8), lib.zeros(3, 2, 6)
    ),
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("case", list(_TRANSFORMER_ERRORS))
def test_transformer_messages_match_torch(torch, case):
    fn = _TRANSFORMER_ERRORS[case]
    assert_same_error(lambda: fn(tt, OURS), lambda: fn(torch, torch.nn))


def test_attention_dropout_inactive_in_eval_and_drawn_in_training(torch):
    """MultiheadAttention(dropout=0.5) in eval mode equals torch's; in training the weights
    are dropped (tracegrad's own random draw) and the kept ones scaled by 1 / (1 - p)."""
    x = randn(3, 2, 8)

    def forward(lib, nn, mha, t):
        return list(mha(t["x"], t["x"], t["x"]))

    run(torch, lambda nn: nn.MultiheadAttention(8, 2, dropout=0.5).eval(), {"x": x}, forward)
    mha = transformer.MultiheadAttention(8, 2, dropout=0.5, dtype=np.float64)
    tt.manual_seed(0)
    _, weights = mha(tt.tensor(x), tt.tensor(x), tt.tensor(x), average_attn_weights=False)
    w = weights.detach().numpy()
    assert (w == 0).any() and np.isclose(w.sum(-1).mean(), 1.0, atol=0.3)
