"""equinox.nn.MLP.

A shim of equinox 0.13.8 (equinox/nn/_mlp.py) for tracelens, not equinox's code. The
activations are applied to the whole vector (equinox vmaps them over its elements: the same
for the elementwise functions activations are).
"""

import jax

from equinox._module import Module, field
from equinox.nn._linear import Linear


def _identity(x):
    return x


class MLP(Module):
    __tracelens_summary__ = "in_size={in_size}, out_size={out_size}, width_size={width_size}, depth={depth}"

    layers: tuple
    activation: object
    final_activation: object
    use_bias: bool = field(static=True)
    use_final_bias: bool = field(static=True)
    in_size: object = field(static=True)
    out_size: object = field(static=True)
    width_size: int = field(static=True)
    depth: int = field(static=True)
    scan: bool = field(static=True, default=False)

    def __init__(
        self,
        in_size,
        out_size,
        width_size,
        depth,
        activation=jax.nn.relu,
        final_activation=_identity,
        use_bias=True,
        use_final_bias=True,
        dtype=None,
        *,
        scan=False,
        key,
    ):
        keys = jax.random.split(key, depth + 1)
        layers = []
        if depth == 0:
            layers.append(Linear(in_size, out_size, use_bias=use_final_bias, dtype=dtype, key=keys[0]))
        else:
            layers.append(Linear(in_size, width_size, use_bias, dtype=dtype, key=keys[0]))
            for i in range(1, depth):
                layers.append(Linear(width_size, width_size, use_bias=use_bias, dtype=dtype, key=keys[i]))
            layers.append(Linear(width_size, out_size, use_final_bias, dtype=dtype, key=keys[-1]))
        self.layers = tuple(layers)
        self.in_size = in_size
        self.out_size = out_size
        self.width_size = width_size
        self.depth = depth
        self.scan = scan
        self.activation = activation
        self.final_activation = final_activation
        self.use_bias = use_bias
        self.use_final_bias = use_final_bias

    def __call__(self, x, *, key=None):
        for layer in self.layers[:-1]:
            x = layer(x)
            x = self.activation(x)
        x = self.layers[-1](x)
        return self.final_activation(x)
