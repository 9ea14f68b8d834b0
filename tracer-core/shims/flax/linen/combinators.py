"""flax.linen.Sequential (flax/linen/combinators.py), as a tracelens shim of flax 0.12.8."""

from flax.linen.module import Module, compact


class Sequential(Module):
    layers: object

    def __call__(self, *args, **kwargs):
        self._bound_root()
        if not self.layers:
            raise ValueError(f"Empty Sequential module {self.name}.")
        outputs = self.layers[0](*args, **kwargs)
        for layer in self.layers[1:]:
            if isinstance(outputs, tuple):
                outputs = layer(*outputs)
            elif isinstance(outputs, dict):
                outputs = layer(**outputs)
            else:
                outputs = layer(outputs)
        return outputs
