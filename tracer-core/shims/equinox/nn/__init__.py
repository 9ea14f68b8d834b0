"""equinox.nn as tracelens models it: Linear, MLP, LayerNorm, Embedding, Dropout, Identity.
Layers not listed here (Conv2d, whose lax.conv_general_dilated is not modelled, attention,
recurrent cells) are unknown to tracelens, never missing."""

from equinox.nn._dropout import Dropout
from equinox.nn._embedding import Embedding
from equinox.nn._linear import Identity, Linear
from equinox.nn._mlp import MLP
from equinox.nn._normalisation import LayerNorm
