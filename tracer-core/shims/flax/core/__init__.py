"""flax.core: the frozen variable dicts of linen (flax/core/frozen_dict.py) and scan's `broadcast`.

A tracelens shim of flax 0.12.8. linen's `init` returns plain dicts (flax's default since
0.7); `FrozenDict`, `freeze` and `unfreeze` are here for programs that still use them.
"""

from flax.core.axes_scan import broadcast
from flax.core.frozen_dict import FrozenDict, copy, freeze, pop, unfreeze
