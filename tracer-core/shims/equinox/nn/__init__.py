"""equinox.nn as tracelens models it: Linear, MLP, Conv (1d, 2d, 3d), LayerNorm, Embedding,
Dropout, Identity. Layers not listed here (attention, recurrent cells, pooling) are unknown to
tracelens, never missing."""

from equinox.nn._conv import Conv, Conv1d, Conv2d, Conv3d
from equinox.nn._dropout import Dropout
from equinox.nn._embedding import Embedding
from equinox.nn._linear import Identity, Linear
from equinox.nn._mlp import MLP
from equinox.nn._normalisation import LayerNorm
