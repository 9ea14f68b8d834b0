"""How close a float of the op table must be: the families of tracer-core/tests/data/ops_tolerances.tsv.

The same rules as tracer-core/tests/ops_golden.rs reads (column `kernel`); gen_ops_golden.py
--check uses column `drift` (JAX on this CPU against the recorded table). The file's header says
what each term means and why.
"""

import ast
import math
import os

TOLERANCES = os.path.join(os.path.dirname(__file__), "..", "..", "tracer-core", "tests", "data", "ops_tolerances.tsv")
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
TERMS = ("rel", "max", "one", "cond")
# The largest kappa used (ops_tolerances.tsv says why).
KAPPA_CAP = 64.0


def parse_rule(text, dtype):
    """`rel=1/4/16 max=8` -> {"rel": 4.0, "max": 8.0} for float32; {} for `exact`."""
    rule = {}
    if text.strip() == "exact":
        return rule
    for term in text.split():
        key, _, value = term.partition("=")
        if key not in TERMS:
            raise ValueError(f"{TOLERANCES}: unknown term {term!r}")
        parts = [float(p) for p in value.split("/")]
        if len(parts) == 3:
            parts = {"float16": parts[0], "bfloat16": parts[0], "float32": parts[1], "float64": parts[2]}[dtype]
        elif len(parts) == 1:
            parts = parts[0]
        else:
            raise ValueError(f"{TOLERANCES}: {term!r}: one value or three (16-bit/float32/float64)")
        rule[key] = parts
    return rule


def families(path=TOLERANCES):
    """The families in order: (name, groups or None, patterns or None, {column: rule text})."""
    out = []
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    header = lines[0].split("\t")
    for line in lines[1:]:
        cols = dict(zip(header, line.split("\t")))
        groups = None if cols["groups"] == "*" else cols["groups"].split(",")
        exprs = None if cols["exprs"] == "*" else cols["exprs"].split(",")
        out.append((cols["family"], groups, exprs, {"drift": cols["drift"], "kernel": cols["kernel"]}))
    return out


def matches(pattern, expr):
    return expr.startswith(pattern[1:]) if pattern.startswith("^") else pattern in expr


def family_of(fams, group, expr):
    for fam in fams:
        name, groups, exprs, _ = fam
        if (groups is None or group in groups) and (exprs is None or any(matches(p, expr) for p in exprs)):
            return fam
    raise ValueError(f"no tolerance family for [{group}] {expr}")


def parse_values(text):
    """A row's values as floats (None for NaN)."""
    return ast.literal_eval(text.replace("nan", "None").replace("inf", "1e999"))


def largest(values):
    return max((abs(v) for v in values if v is not None and math.isfinite(v)), default=0.0)


def twin_key(x64, expr, dtype):
    """The (x64, expr) of the row computing the same in the other float width, or None."""
    if dtype == "float32":
        return ("1", expr.replace("float32", "float64"))
    if dtype == "float64":
        return ("1", expr.replace("float64", "float32"))
    return None


def conditioning(rows):
    """kappa per (x64, expr) of float rows with a twin: how many ulp of its largest magnitude the
    float32 row is from the float64 one, i.e. how much the problem amplifies float32's rounding.
    `rows` are a table's columns [x64, group, expr, aval, values]: the reference side of the
    comparison (JAX's fresh values for --check, the recorded table for the kernel test)."""
    by_key = {(r[0], r[2]): r for r in rows}
    kappa = {}
    for r in rows:
        dtype = r[3].split(" ")[0]
        key = twin_key(r[0], r[2], dtype)
        twin = by_key.get(key) if key else None
        if twin is None or twin is r or twin[3].split(" ")[0] == dtype:
            continue
        f32, f64 = (r, twin) if dtype == "float32" else (twin, r)
        a, b = parse_values(f32[4]), parse_values(f64[4])
        scale = largest(a)
        if len(a) != len(b) or scale == 0.0:
            continue
        diffs = [abs(x - y) for x, y in zip(a, b) if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
        kappa[(r[0], r[2])] = min(KAPPA_CAP, max(diffs, default=0.0) / (EPS["float32"] * scale))
    return kappa


def agree(rule, dtype, want, got, kappa):
    """Whether `got` is within `rule` of JAX's `want` (lists of floats, None for NaN)."""
    eps = EPS[dtype]
    if len(want) != len(got):
        return False
    scale = largest(want)
    for w, g in zip(want, got):
        if w is None or g is None or not (math.isfinite(w) and math.isfinite(g)):
            if w != g:
                return False
            continue
        tol = eps * (rule.get("rel", 0.0) * abs(w) + rule.get("max", 0.0) * scale + rule.get("one", 0.0) + rule.get("cond", 0.0) * kappa * scale)
        if abs(g - w) > tol:
            return False
    return True
