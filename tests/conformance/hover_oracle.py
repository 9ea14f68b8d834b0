"""The hover oracle: every place in a fixture where a user could put the cursor on a value,
with the avals that value really had there under JAX 0.10.2.

    python hover_oracle.py FIXTURE.py   ->   one JSON object on stdout

`xtask hover` runs it under `forkserver.py`, which imports jax, numpy, optax, flax and
equinox once and forks a child per fixture, so a run over every fixture pays the imports once.

The fixture runs as `__main__` (runpy) on CPU, with `sys.settrace` turned on, line and
opcode events, in the fixture's own frames only (JAX's internals are not traced). A
*site* is one of these, found in the fixture's AST:

- `name`: a name read (`x` in `y = x + 1`), at the instruction that loads it;
- `target`: a name assigned (`y`, a `for` or `with` target, a comprehension variable),
  read from the frame after the store;
- `parameter`: a parameter in a `def` or `lambda` line, read at the call;
- `attribute`: `self.w`, `state.params.w`, read where the attribute is loaded or stored;
- `item`: `params["w1"]`, `batch[0]` (a constant key on a name or attribute path).

A site counts when its value was, at least once, an array (a `jax.Array`, a tracer, a NumPy
array or scalar) or a pytree with array leaves; Python numbers, functions and modules are
not avals. For each such site the output has its hover position (1-based line, 0-based
UTF-16 column, on the name, the attribute's name or the item's key), the avals seen (sorted,
at most eight; a pytree as `path: aval` leaves) and whether any of them was a tracer.
`xtask hover` hovers every site in `tracelens lsp` and counts the hovers that show an aval.

The conformance oracle (`oracle.py FIXTURE --hover hover_oracle.py OUT`) also runs this
oracle beside its own, in the same run of the fixture (`TracerPair`): the conformance suite
then leaves `xtask hover` the results in its cache, and each fixture runs once, not twice.
"""

import ast
import dis
import json
import os
import sys
import tempfile
import traceback
import types

MAX_AVALS = 8
MAX_HITS = 40
MAX_LEAVES = 64
# Opcode events past which tracing stops (a fixture's long Python loop); the sites seen so
# far are kept and `truncated` says so.
MAX_EVENTS = 4_000_000

LOADS = {"LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE"}
STORES = {"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"}
ATTRIBUTE_LOADS = {"LOAD_ATTR", "LOAD_METHOD"}


def main():
    if len(sys.argv) != 2:
        print("usage: python hover_oracle.py FIXTURE.py", file=sys.stderr)
        return 2
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    fixture = os.path.abspath(sys.argv[1])
    json_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    capture = tempfile.TemporaryFile()
    os.dup2(capture.fileno(), 1)
    json_out.write(json.dumps(observe(fixture)))
    json_out.write("\n")
    json_out.flush()
    return 0


def observe(fixture):
    try:
        return HoverOracle(fixture).run()
    except BaseException:
        return {"fixture": fixture, "oracle_error": traceback.format_exc()}


def path_of(node):
    """`self.w`, `params["w1"]`, `a.b[0]`: a name followed by attributes and constant keys,
    as a list of steps, or None."""
    steps = []
    while True:
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr))
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, (str, int)):
            steps.append(("item", node.slice.value))
            node = node.value
        elif isinstance(node, ast.Name):
            steps.append(("name", node.id))
            return list(reversed(steps))
        else:
            return None


class Site:
    __slots__ = ("kind", "line", "col", "text", "path", "avals", "hits", "traced", "pytree", "scope")

    def __init__(self, kind, line, col, text, path, scope):
        self.kind = kind
        self.line = line
        self.col = col
        self.text = text
        self.path = path
        self.avals = set()
        self.hits = 0
        self.traced = False
        self.pytree = False
        self.scope = scope


class HoverOracle:
    def __init__(self, fixture):
        self.fixture = fixture
        with open(fixture, encoding="utf-8") as f:
            self.source = f.read()
        self.lines = self.source.split("\n")
        self.tree = ast.parse(self.source, fixture)
        # Sites by the span of the node whose instruction reads them.
        self.by_span = {}
        # Parameters by (function name, first line): [(parameter name, site)].
        self.parameters = {}
        self.lambdas = {}
        self.collect(self.tree, "<module>")
        self.instructions = {}
        self.pending = {}
        self.events = 0
        self.truncated = False

    # --- the sites, from the AST -------------------------------------------------------

    def span(self, node):
        return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)

    def add(self, kind, node, line, col, text, path, scope):
        site = Site(kind, line, col, text, path, scope)
        self.by_span.setdefault(self.span(node), site)
        return site

    def collect(self, node, scope, in_comprehension=False):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            name = node.name if not isinstance(node, ast.Lambda) else "<lambda>"
            first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
            params = []
            a = node.args
            for arg in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else []):
                kind = "parameter"
                site = Site(kind, arg.lineno, arg.col_offset, arg.arg, [("name", arg.arg)], name)
                params.append((arg.arg, site))
            if isinstance(node, ast.Lambda):
                self.lambdas.setdefault(node.lineno, []).append((node, params))
            else:
                self.parameters[(name, first)] = params
            for child in ast.iter_child_nodes(node):
                self.collect(child, name)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for child in ast.iter_child_nodes(node):
                self.collect(child, scope, True)
            return
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Del):
            kind = "name" if isinstance(node.ctx, ast.Load) else "target"
            self.add(kind, node, node.lineno, node.col_offset, node.id, [("name", node.id)], scope)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Del):
            path = path_of(node)
            if path is not None:
                text = ast.get_source_segment(self.source, node) or ""
                if isinstance(node, ast.Attribute):
                    # On the attribute's name: the end of the node, on its last line.
                    self.add("attribute", node, node.end_lineno, node.end_col_offset - len(node.attr), text, path, scope)
                else:
                    self.add("item", node, node.slice.lineno, node.slice.col_offset, text, path, scope)
        for child in ast.iter_child_nodes(node):
            self.collect(child, scope, in_comprehension)

    # --- running ----------------------------------------------------------------------

    def run(self):
        import jax  # noqa: F401  (imported before tracing starts)
        import numpy  # noqa: F401

        sys.settrace(self.global_trace)
        error = None
        try:
            import contextlib
            import io
            import runpy

            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_path(self.fixture, run_name="__main__")
        except SystemExit:
            pass
        except BaseException as e:
            error = type(e).__name__
        finally:
            sys.settrace(None)
        return self.report(error)

    def report(self, error):
        """The output: the sites where the fixture had an array, and the class of the
        exception it ended with (None when it ended normally or by `sys.exit`)."""
        sites = [s for s in self.all_sites() if s.avals]
        sites.sort(key=lambda s: (s.line, s.col))
        return {
            "fixture": self.fixture,
            "raised": error,
            "truncated": self.truncated,
            "sites": [
                {
                    "kind": s.kind,
                    "line": s.line,
                    "column": self.utf16_column(s.line, s.col),
                    "text": s.text,
                    "scope": s.scope,
                    "avals": sorted(s.avals),
                    "traced": s.traced,
                    "pytree": s.pytree,
                }
                for s in sites
            ],
        }

    def all_sites(self):
        seen = set()
        for site in self.by_span.values():
            seen.add(id(site))
            yield site
        for params in self.parameters.values():
            for _, site in params:
                if id(site) not in seen:
                    seen.add(id(site))
                    yield site
        for lambdas in self.lambdas.values():
            for _, params in lambdas:
                for _, site in params:
                    if id(site) not in seen:
                        seen.add(id(site))
                        yield site

    def utf16_column(self, line, byte_column):
        text = self.lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", "replace")
        return sum(2 if ord(c) > 0xFFFF else 1 for c in text)

    def global_trace(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename != self.fixture:
            return None
        self.on_call(frame)
        frame.f_trace_opcodes = True
        return self.local_trace

    def local_trace(self, frame, event, arg):
        self.events += 1
        if self.events > MAX_EVENTS:
            self.truncated = True
            frame.f_trace_opcodes = False
            return None
        pending = self.pending.pop(id(frame), None)
        if pending is not None:
            self.record(frame, *pending)
        if event != "opcode":
            return self.local_trace
        instruction = self.instruction(frame)
        if instruction is None or instruction.positions is None or instruction.positions.lineno is None:
            return self.local_trace
        p = instruction.positions
        site = self.by_span.get((p.lineno, p.col_offset, p.end_lineno, p.end_col_offset))
        if site is None or site.hits >= MAX_HITS:
            return self.local_trace
        op = instruction.opname
        if op in LOADS or op in ATTRIBUTE_LOADS or op == "BINARY_SUBSCR":
            self.record(frame, site)
        elif op in STORES or op in ("STORE_ATTR", "STORE_SUBSCR"):
            self.pending[id(frame)] = (site,)
        return self.local_trace

    def instruction(self, frame):
        code = frame.f_code
        table = self.instructions.get(code)
        if table is None:
            table = {i.offset: i for i in dis.get_instructions(code)}
            self.instructions[code] = table
        return table.get(frame.f_lasti)

    def on_call(self, frame):
        code = frame.f_code
        if code.co_name == "<lambda>":
            params = self.lambda_parameters(code)
        else:
            params = self.parameters.get((code.co_name, code.co_firstlineno))
        if not params:
            return
        for name, site in params:
            if site.hits < MAX_HITS and name in frame.f_locals:
                self.note(site, frame.f_locals[name])

    def lambda_parameters(self, code):
        candidates = self.lambdas.get(code.co_firstlineno, [])
        if len(candidates) == 1:
            return candidates[0][1]
        # Several lambdas on one line: the one whose body holds the code's instructions.
        for instruction in dis.get_instructions(code):
            p = instruction.positions
            if p is None or p.lineno is None:
                continue
            for node, params in candidates:
                b = node.body
                if (b.lineno, b.col_offset) <= (p.lineno, p.col_offset) and (p.end_lineno, p.end_col_offset) <= (b.end_lineno, b.end_col_offset):
                    return params
        return None

    def record(self, frame, site):
        missing = object()
        value = missing
        for kind, key in site.path:
            if kind == "name":
                value = self.lookup(frame, key, missing)
            elif kind == "attr":
                try:
                    value = getattr(value, key, missing)
                except Exception:
                    value = missing
            else:
                try:
                    value = value[key] if isinstance(value, (dict, list, tuple)) else missing
                except Exception:
                    value = missing
            if value is missing:
                return
        self.note(site, value)

    def lookup(self, frame, name, missing):
        if name in frame.f_locals:
            return frame.f_locals[name]
        if name in frame.f_globals:
            return frame.f_globals[name]
        return missing

    def note(self, site, value):
        site.hits += 1
        described = describe(value)
        if described is None:
            return
        text, traced, pytree = described
        site.traced |= traced
        site.pytree |= pytree
        if len(site.avals) < MAX_AVALS:
            site.avals.add(text)


def array_aval(value):
    """The aval of an array value as tracelens prints it (`f32[8,4]`), and whether it is a
    tracer; None when the value is not an array."""
    import jax
    import numpy as np

    if isinstance(value, jax.core.Tracer):
        try:
            return short(jax.typeof(value)), True
        except Exception:
            return None
    if isinstance(value, jax.Array):
        try:
            return short(jax.typeof(value)), False
        except Exception:
            return None
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biufc":
        from jax._src import core

        return short(core.ShapedArray(np.shape(value), value.dtype)), False
    return None


def short(aval):
    """`f32[8,4]`, `~f32[]` for a weakly typed aval: tracelens' notation."""
    text = aval.str_short(short_dtypes=True)
    return "~" + text if getattr(aval, "weak_type", False) else text


def describe(value):
    """(text, traced, pytree) for an array or a pytree with array leaves, else None."""
    found = array_aval(value)
    if found is not None:
        return found[0], found[1], False
    if isinstance(value, (int, float, complex, str, bytes, bool, type(None), type, types.ModuleType, types.FunctionType, types.MethodType)):
        return None
    import jax

    try:
        leaves, _ = jax.tree_util.tree_flatten_with_path(value)
    except Exception:
        return None
    if len(leaves) > MAX_LEAVES or (len(leaves) == 1 and leaves[0][1] is value):
        return None
    parts = []
    traced = False
    for path, leaf in leaves:
        leaf_aval = array_aval(leaf)
        if leaf_aval is None:
            continue
        traced |= leaf_aval[1]
        parts.append(f"{jax.tree_util.keystr(path)}: {leaf_aval[0]}")
    if not parts:
        return None
    return "{" + ", ".join(parts) + "}", traced, True


if __name__ == "__main__":
    sys.exit(main())
