"""What the haiku shim does not model. This module defines nothing on purpose: a name a shim
module does not define is unknown to tracelens, so `_unknown.params(...)` is a value tracelens
does not know (no finding is ever made from it)."""
