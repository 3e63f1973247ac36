"""PyTorch's documentation example (a two-layer network fit with torch.optim), run by tracegrad.

The only change from PyTorch's text is the import: `import tracegrad.torch as torch` and
`from tracegrad.torch import nn, optim` in place of `import torch` and
`from torch import nn, optim`.
Run: python examples/train_mlp.py  (in under a second the loss falls from about 1 to almost 0:
the 64 random targets are memorised).
"""

import tracegrad.torch as torch
from tracegrad.torch import nn, optim

torch.manual_seed(0)

# N is batch size; D_in is input dimension;
# H is hidden dimension; D_out is output dimension.
N, D_in, H, D_out = 64, 32, 64, 4

# Create random Tensors to hold inputs and outputs
input = torch.randn(N, D_in)
target = torch.randn(N, D_out)

# Use the nn package to define our model and loss function.
model = nn.Sequential(
    nn.Linear(D_in, H),
    nn.ReLU(),
    nn.Linear(H, D_out),
)
loss_fn = nn.MSELoss()

# Use the optim package to define an Optimizer that will update the weights of
# the model for us.
optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for t in range(300):
    # Before the backward pass, zero the gradients of the weights the optimizer updates
    # (by default, gradients are accumulated in .grad whenever .backward() is called).
    optimizer.zero_grad()

    # Forward pass: compute predicted y by passing input to the model, then the loss.
    loss = loss_fn(model(input), target)
    if t % 50 == 0 or t == 299:
        print(t, loss.item())

    # Backward pass: compute the gradient of the loss with respect to the parameters.
    loss.backward()

    # Calling the step function on an Optimizer makes an update to our parameters.
    optimizer.step()
