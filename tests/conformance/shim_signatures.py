"""The library shims accept every call the real library accepts.

A shim function that lacks a parameter of the real one turns a correct call into a false
`TypeError` (TL190) at the user's line: `nnx.merge(graphdef, params, copy=True)` did, in
flax's own examples. This script compares, for every public name a shim module defines, its
signature with the real library's (flax 0.12.8, optax 0.2.8, equinox 0.13.8, as pinned):

  - each parameter the real one takes by keyword, the shim takes (by name, or `**kwargs`);
  - the shim takes at least as many positional arguments (or `*args`);
  - each parameter the shim requires, the real one requires too.

Usage: python shim_signatures.py SHIMS_DIR   (exit 1, with the list, if any differ)
It runs itself twice: once with SHIMS_DIR first on the path (the shims), once without (the
real libraries), and compares what each saw. Shims are imported as plain Python, never run.
"""

import inspect
import json
import os
import subprocess
import sys

MODULES = [
    "flax.nnx",
    "flax.linen",
    "flax.struct",
    "flax.training.train_state",
    "optax",
    "optax.losses",
    "optax.schedules",
    "optax.tree_utils",
    "equinox",
    "equinox.nn",
]

# `name` and `parent` of a linen Module are the interpreter's (`Module` fields it adds, as
# flax's metaclass does), not the shim class's.
INTERPRETER_FIELDS = {"flax.linen": {"name", "parent"}}

# The differences not closed yet: each line `module.name: difference`. The check fails on a
# difference not listed here, and on a listed one that is gone (so the list stays true).
GAPS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim-signature-gaps.txt")


def describe(obj):
    """Parameters of a callable: [(name, kind, has_default)], or None if it has none to read.
    A class is described by its `__init__` (a metaclass `__call__` that takes anything hides
    it from `inspect.signature`), without `self`."""
    try:
        if inspect.isclass(obj):
            init = obj.__init__
            if init is object.__init__:
                return None
            params = list(inspect.signature(init).parameters.values())[1:]
        else:
            params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind.name, p.default is not inspect.Parameter.empty) for p in params]


def dump(names_from):
    import jax.tree_util as tu

    # The shims pass the interpreter a key-name hint that real JAX does not take.
    real_register = tu.register_pytree_node

    def register(*args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if not k.startswith("_tracelens")}
        return real_register(*args, **kwargs)

    tu.register_pytree_node = register
    import importlib

    out = {}
    wanted = json.loads(names_from) if names_from else None
    for module in MODULES:
        try:
            m = importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            out[module] = {"__error__": f"{type(e).__name__}: {e}"}
            continue
        names = wanted.get(module, []) if wanted is not None else [n for n in dir(m) if not n.startswith("_")]
        entries = {}
        for name in names:
            obj = getattr(m, name, None)
            if obj is None or not callable(obj) or inspect.ismodule(obj):
                continue
            if wanted is None and getattr(obj, "__module__", "").split(".")[0] not in ("flax", "optax", "equinox"):
                continue  # re-exported from jax or typing: not the shim's own
            entries[name] = describe(obj)
        out[module] = entries
    print(json.dumps(out))


def accepted(params):
    keywords = {n for n, kind, _ in params if kind in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")}
    positional = sum(1 for _, kind, _ in params if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"))
    var_pos = any(kind == "VAR_POSITIONAL" for _, kind, _ in params)
    var_kw = any(kind == "VAR_KEYWORD" for _, kind, _ in params)
    return keywords, positional, var_pos, var_kw


def differences(shim, real):
    s_kw, s_pos, s_varpos, s_varkw = accepted(shim)
    r_kw, r_pos, r_varpos, r_varkw = accepted(real)
    out = []
    if not s_varkw:
        missing = sorted(r_kw - s_kw)
        if missing:
            out.append("does not take " + ", ".join(missing))
        if r_varkw:
            out.append("does not take **kwargs")
    if not s_varpos and (r_varpos or r_pos > s_pos):
        out.append(f"takes {s_pos} positional arguments, the library {'any number' if r_varpos else r_pos}")
    positional = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    s_order = [n for n, kind, _ in shim if kind in positional]
    r_order = [n for n, kind, _ in real if kind in positional]
    for i, (a, b) in enumerate(zip(s_order, r_order)):
        if a != b and b in s_kw:
            out.append(f"takes {a} as positional argument {i + 1}, the library {b}")
            break
    real_required = {n for n, kind, d in real if not d and kind not in ("VAR_POSITIONAL", "VAR_KEYWORD")}
    real_names = {n for n, _, _ in real}
    for i, (n, kind, d) in enumerate(shim):
        if d or kind in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        # A positional parameter named differently is the same argument at the same place.
        same_place = i < len(real) and real[i][1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") and kind != "KEYWORD_ONLY"
        required_by_name = n in real_names and n not in real_required
        required_by_place = n not in real_names and same_place and real[i][2]
        if required_by_name or required_by_place:
            out.append(f"requires {n}, which the library does not")
    return out


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--dump":
        dump(sys.argv[2] if len(sys.argv) > 2 else "")
        return
    shims = os.path.abspath(sys.argv[1])
    env = dict(os.environ, PYTHONPATH=shims)
    shim = json.loads(subprocess.run([sys.executable, __file__, "--dump"], env=env, capture_output=True, text=True, check=True, cwd="/").stdout)
    wanted = {m: sorted(v) for m, v in shim.items() if "__error__" not in v}
    real_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = json.loads(
        subprocess.run([sys.executable, __file__, "--dump", json.dumps(wanted)], env=real_env, capture_output=True, text=True, check=True, cwd="/").stdout
    )
    problems, compared = [], 0
    for module, entries in shim.items():
        if "__error__" in entries:
            problems.append(f"{module}: the shim does not import: {entries['__error__']}")
            continue
        for name, params in sorted(entries.items()):
            theirs = real.get(module, {}).get(name)
            if params is None or theirs is None:
                continue
            compared += 1
            drop = INTERPRETER_FIELDS.get(module, set())
            if drop and drop <= {p[0] for p in theirs}:
                theirs = [p for p in theirs if p[0] not in drop]
            for d in differences(params, theirs):
                problems.append(f"{module}.{name}: {d}")
    with open(GAPS_FILE) as f:
        known = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    new = [p for p in problems if p not in known]
    gone = sorted(known - set(problems))
    print(f"shim signatures: {compared} compared with the library, {len(problems)} differ ({len(known)} listed as gaps)")
    for p in new:
        print("  NEW  " + p)
    for p in gone:
        print("  GONE " + p + " (take it out of shim-signature-gaps.txt)")
    sys.exit(1 if new or gone else 0)


if __name__ == "__main__":
    main()
