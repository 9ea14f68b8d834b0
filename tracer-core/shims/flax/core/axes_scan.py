"""flax.core.axes_scan's `broadcast` marker (a tracelens shim of flax 0.12.8): an argument of
linen's `scan` given whole to every iteration (`in_axes=nn.broadcast`)."""


class _Broadcast:
    def __repr__(self):
        return "broadcast"


broadcast = _Broadcast()
