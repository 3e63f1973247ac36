"""A program written for `autograd.scipy.signal.convolve` runs with tracegrad in its place.

The program is HIPS autograd's examples/convnet.py (LeNet-style: conv layers through autograd's
`convolve(inputs, weights, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode='valid')`, max
pooling by reshape, tanh layers, a log-softmax), shrunk to a few 12 x 12 images. It is written
once, against a NumPy namespace and a `convolve`; the oracle runs it under HIPS autograd
(`autograd.numpy`, `autograd.scipy.signal.convolve`, `autograd.grad`), and tracegrad runs the
same text with plain NumPy, `tracegrad.scipy.signal.autograd_convolve` and `tg.grad`: the
losses, gradients and the weights after a few steps of SGD with momentum agree.
"""

from __future__ import annotations

import numpy
import pytest

import tracegrad as tg
import tracegrad.scipy.signal as tss

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
asig = pytest.importorskip("autograd.scipy.signal")


def convnet(np, convolve):
    """autograd's examples/convnet.py, its model code as written there (Python 3 only)."""

    class WeightsParser:
        def __init__(self):
            self.idxs_and_shapes = {}
            self.N = 0

        def add_weights(self, name, shape):
            start = self.N
            self.N += int(np.prod(shape))
            self.idxs_and_shapes[name] = (slice(start, self.N), shape)

        def get(self, vect, name):
            idxs, shape = self.idxs_and_shapes[name]
            return np.reshape(vect[idxs], shape)

    def logsumexp(X, axis, keepdims=False):
        max_X = np.max(X)  # noqa: N806 - the example's names
        return max_X + np.log(np.sum(np.exp(X - max_X), axis=axis, keepdims=keepdims))

    class conv_layer:  # noqa: N801
        def __init__(self, kernel_shape, num_filters):
            self.kernel_shape = kernel_shape
            self.num_filters = num_filters

        def forward_pass(self, inputs, param_vector):
            params = self.parser.get(param_vector, "params")
            biases = self.parser.get(param_vector, "biases")
            conv = convolve(
                inputs, params, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid"
            )
            return conv + biases

        def build_weights_dict(self, input_shape):
            self.parser = WeightsParser()
            self.parser.add_weights(
                "params", (input_shape[0], self.num_filters) + self.kernel_shape
            )
            self.parser.add_weights("biases", (1, self.num_filters, 1, 1))
            shape = input_shape[1:]
            out = (shape[0] - self.kernel_shape[0] + 1, shape[1] - self.kernel_shape[1] + 1)
            return self.parser.N, (self.num_filters,) + out

    class maxpool_layer:  # noqa: N801
        def __init__(self, pool_shape):
            self.pool_shape = pool_shape

        def build_weights_dict(self, input_shape):
            output_shape = list(input_shape)
            for i in [0, 1]:
                assert input_shape[i + 1] % self.pool_shape[i] == 0
                output_shape[i + 1] = input_shape[i + 1] // self.pool_shape[i]
            return 0, tuple(output_shape)

        def forward_pass(self, inputs, param_vector):
            new_shape = inputs.shape[:2]
            for i in [0, 1]:
                pool_width = self.pool_shape[i]
                img_width = inputs.shape[i + 2]
                new_shape += (img_width // pool_width, pool_width)
            result = inputs.reshape(new_shape)
            return np.max(np.max(result, axis=3), axis=4)

    class full_layer:  # noqa: N801
        def __init__(self, size):
            self.size = size

        def build_weights_dict(self, input_shape):
            input_size = int(np.prod(input_shape))
            self.parser = WeightsParser()
            self.parser.add_weights("params", (input_size, self.size))
            self.parser.add_weights("biases", (self.size,))
            return self.parser.N, (self.size,)

        def forward_pass(self, inputs, param_vector):
            params = self.parser.get(param_vector, "params")
            biases = self.parser.get(param_vector, "biases")
            if inputs.ndim > 2:
                inputs = inputs.reshape((inputs.shape[0], int(np.prod(inputs.shape[1:]))))
            return self.nonlinearity(np.dot(inputs[:, :], params) + biases)

    class tanh_layer(full_layer):  # noqa: N801
        def nonlinearity(self, x):
            return np.tanh(x)

    class softmax_layer(full_layer):  # noqa: N801
        def nonlinearity(self, x):
            return x - logsumexp(x, axis=1, keepdims=True)

    layer_specs = [
        conv_layer((3, 3), 4),
        maxpool_layer((2, 2)),
        conv_layer((2, 2), 5),
        maxpool_layer((2, 2)),
        tanh_layer(12),
        softmax_layer(3),
    ]
    parser = WeightsParser()
    cur_shape = (1, 12, 12)
    for layer in layer_specs:
        n_weights, cur_shape = layer.build_weights_dict(cur_shape)
        parser.add_weights(layer, (n_weights,))

    def predictions(W_vect, inputs):  # noqa: N803
        cur_units = inputs
        for layer in layer_specs:
            cur_units = layer.forward_pass(cur_units, parser.get(W_vect, layer))
        return cur_units

    def loss(W_vect, X, T):  # noqa: N803
        log_prior = -1.0 * np.dot(W_vect, W_vect)
        log_lik = np.sum(predictions(W_vect, X) * T)
        return -log_prior - log_lik

    return parser.N, loss


def _data(n_weights):
    rs = numpy.random.RandomState(0)
    images = rs.rand(6, 1, 12, 12)
    labels = numpy.eye(3)[rs.randint(0, 3, 6)]
    return rs.randn(n_weights) * 0.1, images, labels


def test_convnet_under_tracegrad_matches_autograd():
    n_weights, loss_ag = convnet(anp, asig.convolve)
    n, loss_tg = convnet(numpy, tss.autograd_convolve)
    assert n == n_weights
    W, X, T = _data(n_weights)  # noqa: N806
    numpy.testing.assert_allclose(loss_tg(W, X, T), loss_ag(W, X, T), rtol=1e-13)
    grad_ag, grad_tg = autograd.grad(loss_ag), tg.jit(tg.grad(loss_tg))
    numpy.testing.assert_allclose(grad_tg(W, X, T), grad_ag(W, X, T), rtol=1e-11, atol=1e-13)
    # the example's training loop: SGD with momentum, a few steps, under both
    runs = []
    for grad in (grad_ag, grad_tg):
        w, cur_dir = W.copy(), numpy.zeros(n_weights)
        for _ in range(3):
            cur_dir = 0.9 * cur_dir + 0.1 * grad(w, X, T)
            w = w - 1e-2 * cur_dir
        runs.append(w)
    numpy.testing.assert_allclose(runs[1], runs[0], rtol=1e-12)
