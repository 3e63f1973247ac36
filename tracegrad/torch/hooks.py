"""`RemovableHandle`: what registering a hook returns (PyTorch's `torch.utils.hooks`), shared by
tensors and graph nodes."""

from __future__ import annotations


class RemovableHandle:
    """What `register_hook` returns: `.remove()` takes the hook out again."""

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        for i, h in enumerate(self._hooks):
            if h is self._hook:
                del self._hooks[i]
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
