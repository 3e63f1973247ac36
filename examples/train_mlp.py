"""A complete PyTorch training script (Dataset, DataLoader, model, optimiser, learning-rate
scheduler, training loop, evaluation), run by tracegrad.

The only change from PyTorch's text is the import: `import tracegrad.torch as torch` and
`from tracegrad.torch import nn` / `from tracegrad.torch.utils.data import ...` in place of
`import torch`, `from torch import nn` and `from torch.utils.data import ...`.
An MLP learns a smooth function of 8 inputs (a fixed random "teacher") from 512 samples and is
evaluated on 256 held-out ones.
Run: python examples/train_mlp.py  (in about two seconds it prints the loss before training,
one line per epoch, `epoch training-loss learning-rate`, then `eval held-out-loss`: the mean
squared error falls from about 0.9 to about 0.005). `torch.manual_seed(0)` seeds torch's own
generator, so the initial weights and the shuffles, and with them the printed losses, are
those of PyTorch's run of the same text.
"""

import tracegrad.torch as torch
from tracegrad.torch import nn
from tracegrad.torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)

D_in, H, D_out = 8, 64, 2

# The function to learn: a fixed random smooth map from 8 inputs to 2 outputs.
A = torch.randn(D_in, 4) * 0.5 / D_in**0.5
B = torch.randn(4, D_out)


def teacher(x):
    return torch.sin(x @ A) @ B


class TeacherDataset(Dataset):
    """`n` random inputs and the teacher's outputs for them, one (input, target) pair per
    index; a DataLoader batches them."""

    def __init__(self, n, generator):
        self.inputs = torch.randn(n, D_in, generator=generator)
        self.targets = teacher(self.inputs)

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, index):
        return self.inputs[index], self.targets[index]


train_data = TeacherDataset(512, torch.Generator().manual_seed(1))
test_data = TeacherDataset(256, torch.Generator().manual_seed(2))
train_loader = DataLoader(train_data, batch_size=64, shuffle=True)
test_loader = DataLoader(test_data, batch_size=128)

model = nn.Sequential(
    nn.Linear(D_in, H),
    nn.Tanh(),
    nn.Linear(H, H),
    nn.Tanh(),
    nn.Linear(H, D_out),
)
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
# halve the learning rate every 8 epochs
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)


def train_one_epoch():
    model.train()
    total = 0.0
    for inputs, targets in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(inputs)
    return total / len(train_loader.dataset)


def evaluate():
    model.eval()
    total = 0.0
    with torch.no_grad():
        for inputs, targets in test_loader:
            total += loss_fn(model(inputs), targets).item() * len(inputs)
    return total / len(test_loader.dataset)


print(0, f"{evaluate():.6f}", "(before training)")
for epoch in range(1, 21):
    train_loss = train_one_epoch()
    print(epoch, f"{train_loss:.6f}", f"{scheduler.get_last_lr()[0]:.4g}")
    scheduler.step()

print("eval", f"{evaluate():.6f}")
