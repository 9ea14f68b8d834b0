"""What the equinox shims do not model. This module defines nothing on purpose: a name a shim
module does not define is unknown to tracelens, so `_unknown.result(...)` is a value tracelens
does not know (no finding is ever made from it), for the paths the shims leave out."""
