"""Runs one conformance fixture under real JAX and prints what JAX saw, as one JSON object.

Usage: python oracle.py FIXTURE.py [--hover HOVER_ORACLE.py OUT.json]

With `--hover`, the hover oracle (hover_oracle.py) observes the same run of the fixture's
module beside this one and its JSON is written to OUT.json: `xtask conformance` stores it in
the cache `xtask hover` reads, so the fixture runs once for both suites.

The fixture runs as `__main__` (runpy.run_path) on CPU. Its own stdout is captured and
returned in the JSON as `stdout`; only the JSON is written to the real stdout.

How each field is observed:
- `annotations`: the fixture's `# error:`, `# warning:`, `# revealed:` and `# traces:`
  comments, read with `tokenize` (so `#` inside strings is never mistaken for one).
- `jit_traces`: JAX's own test hook `jax._src.util.test_event_listener` fires
  "trace_to_jaxpr" each time `pe.trace_to_jaxpr` really traces a function (its cache
  missed); JAX's test suite counts jit traces with the same event. The traced function's
  `debug_info.traced_for` tells jit apart from scan/cond/while/checkpoint bodies, and
  `make_jaxpr(jitted)`'s outer trace of the jitted object is left out. The output avals of
  each trace are read from trace_to_jaxpr's return value. With `jax_explain_cache_misses`,
  JAX's explanation of each miss is kept as `cause`.
- `calls`: `jax.jit` is replaced, before the fixture runs, by a factory that calls the real
  `jax.jit` exactly once per call (so caching is unchanged) and, for functions defined in
  the fixture, returns a thin recorder around the real jitted object that logs each call's
  line and output avals and forwards everything else.
- `revealed` and `line_hits`: `sys.settrace`, with line events only in the fixture's frames.
- `symbolic`: for each `# tracelens: trace f(f32[b,n])` comment, the outcome of exporting
  `f` with symbolic shapes (`trace_symbolically`): `ok`, `error` (then also the fixture's
  exception) or `inconclusive` (JAX's answer depends on the sizes).
"""

import ast
import contextlib
import functools
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
import tokenize
import traceback
import types

ANNOTATION = re.compile(r"#\s*(error|warning|revealed|traces):")
ERROR_BODY = re.compile(r'^(TL\d{3})\s+([A-Za-z_][A-Za-z0-9_.]*)(?:\s+"(.*)")?\s*$')
WARNING_BODY = re.compile(r'^(TL\d{3})(?:\s+"(.*)")?\s*$')
AVAL = re.compile(r"^~?[a-z][a-z0-9<>_]*\[[A-Za-z0-9_,*+ -]*\]$")
TRACE_COMMENT = re.compile(r"#\s*tracelens: trace ([A-Za-z_][A-Za-z0-9_]*)\((.*)\)\s*$", re.MULTILINE)
AVAL_SPEC = re.compile(r"^(~?)([a-z][a-z0-9]*)\[(.*)\]$")
SHORT_DTYPES = {
    "f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
    "i32": "int32", "i64": "int64", "i8": "int8", "u8": "uint8", "u32": "uint32", "bool": "bool",
}


def split_top_level(text):
    """`f32[b,4], i32[]` -> ["f32[b,4]", "i32[]"]."""
    parts, depth, current = [], 0, ""
    for c in text:
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += c
    if current.strip():
        parts.append(current.strip())
    return parts


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 4) or len(args) == 4 and args[1] != "--hover":
        print("usage: python oracle.py FIXTURE.py [--hover HOVER_ORACLE.py OUT.json]", file=sys.stderr)
        return 2
    fixture = os.path.abspath(args[0])
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    json_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    fd_capture = tempfile.TemporaryFile()
    os.dup2(fd_capture.fileno(), 1)
    oracle = None
    try:
        oracle = Oracle(fixture)
        if len(args) == 4:
            oracle.hover = load_module(args[2]).HoverOracle(fixture)
        result = oracle.run()
    except BaseException:
        result = {"fixture": fixture, "oracle_error": traceback.format_exc()}
        json_out.write(json.dumps(result))
        json_out.flush()
        return 3
    fd_capture.seek(0)
    result["stdout"] += fd_capture.read().decode("utf-8", "replace")
    if oracle.hover is not None:
        # What the hover oracle would have printed; nothing when it failed (`xtask hover`
        # then runs it alone, and says why).
        try:
            hover = json.dumps(oracle.hover.report(oracle.hover_raised))
        except Exception:
            hover = None
        if hover is not None:
            with open(args[3], "w", encoding="utf-8") as f:
                f.write(hover)
    json_out.write(json.dumps(result, indent=1))
    json_out.write("\n")
    json_out.flush()
    return 0


def load_module(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tracelens_hover_oracle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TracerPair:
    """Two `sys.settrace` tracers as one: this oracle's and the hover oracle's, each given the
    events it would be given alone (this one none of the opcode events the other turns on)
    and keeping, frame by frame, the local tracer it returned."""

    def __init__(self, first, second):
        self.first = first
        self.second = second

    def global_trace(self, frame, event, arg):
        first = self.first(frame, event, arg)
        second = self.second(frame, event, arg)
        if first is None or second is None:
            return first or second
        return self.local(first, second)

    @staticmethod
    def local(first, second):
        def trace(frame, event, arg):
            nonlocal first, second
            if first is not None and event != "opcode":
                first = first(frame, event, arg)
            if second is not None:
                second = second(frame, event, arg)
            return trace if first is not None or second is not None else None

        return trace


def enclosing_frame(function_name):
    """The nearest frame on the current stack running a function of that name (JAX's own
    internals, whose locals say what is being traced), or None."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != function_name:
        frame = frame.f_back
    return frame

class Oracle:
    def __init__(self, fixture):
        self.fixture = fixture
        with open(fixture, encoding="utf-8") as f:
            self.source = f.read()
        self.tree = ast.parse(self.source, fixture)
        self.annotations = parse_annotations(self.source)
        self.statements = statement_ranges(self.tree)
        shared_lines = lines_with_several_statements(self.tree)
        self.function_spans = function_spans(self.tree)
        for ann in self.annotations:
            counted = ann["kind"] == "revealed" or ann.get("code") == "TL201"
            if counted and ann["line"] in shared_lines and "problem" not in ann:
                ann["problem"] = (
                    f"line {ann['line']} holds several statements (e.g. `for ...: x = ...`), "
                    "so how often it ran is ambiguous; put the annotated statement on its own line"
                )
        self.reveal_targets = {}
        self.reveal_records = {}
        for ann in self.annotations:
            if ann["kind"] == "revealed" and ann["line"] not in self.reveal_records:
                target, target_line, problem = assignment_target(self.tree, ann["line"])
                self.reveal_records[ann["line"]] = {
                    "line": ann["line"],
                    "target": target,
                    "target_line": target_line,
                    "unsupported": problem,
                    "runs": 0,
                    "avals": [],
                    "untraced": [],
                }
                if target is not None:
                    start, _ = self.statements.get(ann["line"], (ann["line"], ann["line"]))
                    self.reveal_targets[start] = (ann["line"], target)
        self.hit_lines = {}
        for ann in self.annotations:
            if ann["kind"] == "warning" and ann["line"] is not None:
                start, _ = self.statements.get(ann["line"], (ann["line"], ann["line"]))
                self.hit_lines.setdefault(start, set()).add(ann["line"])
        self.stmt_of_start = {
            start: self.statements.get(start, (start, start)) for start in self.hit_lines
        }
        self.line_hits = {}
        self.frame_state = {}
        self.functions = {}
        self.open_traces = {}
        self.pending_causes = {}
        self.equinox_pending = []
        self.symbolic = []
        # The hover oracle run beside this one (`--hover`), and the class of the exception
        # the fixture's module raised (what it reports as `raised`).
        self.hover = None
        self.hover_raised = None

    def run(self):
        import jax
        from jax._src import util as jax_util
        from jax._src.interpreters import partial_eval as pe

        self.jax = jax
        self.pe = pe
        jax.config.update("jax_explain_cache_misses", True)
        explain_logger = logging.getLogger("jax._src.interpreters.partial_eval")
        explain_logger.addHandler(CauseHandler(self))
        explain_logger.propagate = False
        jax_util.test_event_listener = self.on_test_event
        self.real_jit = jax.jit
        jax.jit = self.make_jit_factory()

        stdout = io.StringIO()
        exception = None
        start = time.perf_counter()
        if self.hover is None:
            sys.settrace(self.global_trace)
        else:
            sys.settrace(TracerPair(self.global_trace, self.hover.global_trace).global_trace)
        try:
            with contextlib.redirect_stdout(stdout):
                import runpy

                try:
                    module_globals = runpy.run_path(self.fixture, run_name="__main__")
                except SystemExit:
                    raise
                except BaseException as e:
                    self.hover_raised = type(e).__name__
                    raise
                finally:
                    # The hover oracle sees the module run, as it does alone.
                    sys.settrace(self.global_trace)
                jax.effects_barrier()
                self.trace_symbolically(module_globals)
        except SystemExit as e:
            if e.code not in (None, 0):
                exception = self.describe_exception(e)
        except BaseException as e:
            exception = self.describe_exception(e)
        finally:
            sys.settrace(None)
            elapsed = time.perf_counter() - start
            jax_util.test_event_listener = None
            jax.jit = self.real_jit

        return {
            "fixture": self.fixture,
            "jax_version": jax.__version__,
            "python_version": sys.version.split()[0],
            "annotations": self.annotations,
            "exception": exception,
            "jit_traces": self.jit_traces_json(),
            "revealed": [self.reveal_records[line] for line in sorted(self.reveal_records)],
            "line_hits": {
                str(line): self.line_hits.get(line, 0)
                for line in sorted(
                    {a["line"] for a in self.annotations if a["kind"] == "warning" and a["line"]}
                )
            },
            "stdout": stdout.getvalue(),
            "run_seconds": round(elapsed, 4),
            "symbolic": self.symbolic,
        }

    def trace_symbolically(self, module_globals):
        """Each `# tracelens: trace f(f32[b,4], ...)` comment: `f` exported with `jax.export`
        and symbolic shapes (one scope for the whole fixture), as tracelens traces it from the
        comment. An error JAX raises there holds for every size of the named dimensions; it is
        then raised again with sizes for the names (tracelens' first instantiation: primes
        from 11 up that the file does not write), which gives the fixture's exception with the
        class and message a user's call would see, and must come from the same line.
        `InconclusiveDimensionOperation` means the outcome depends on the sizes: tracelens says
        nothing then, and it is recorded in `symbolic` only."""
        from jax import export
        from jax._src import util as jax_util

        scope = export.SymbolicScope()
        literals = {int(run) for run in re.findall(r"[0-9]+", self.source)}
        sizes = {}

        def size_of(name):
            if name not in sizes:
                n = 11
                while n in literals or n in sizes.values() or any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
                    n += 1
                sizes[name] = n
            return sizes[name]

        for match in TRACE_COMMENT.finditer(self.source):
            name, args = match.group(1), split_top_level(match.group(2))
            symbolic, concrete = [], []
            for arg in args:
                m = AVAL_SPEC.match(arg.strip())
                dtype, dims, weak = SHORT_DTYPES[m.group(2)], m.group(3).strip(), bool(m.group(1))
                shape = export.symbolic_shape(dims, scope=scope) if dims else ()
                symbolic.append(self.jax.ShapeDtypeStruct(shape, dtype, weak_type=weak))
                sized = [int(d) if d.strip().isdigit() else size_of(d.strip()) for d in dims.split(",")] if dims else []
                concrete.append(self.jax.ShapeDtypeStruct(tuple(sized), dtype, weak_type=weak))
            outcome = {"function": name, "args": args}
            self.symbolic.append(outcome)
            fun = module_globals[name]
            try:
                export.export(self.real_jit(fun))(*symbolic)
                outcome["outcome"] = "ok"
                continue
            except Exception as e:
                if type(e).__name__ == "InconclusiveDimensionOperation":
                    outcome.update(outcome="inconclusive", message=clean_message(str(e)))
                    continue
                outcome.update(outcome="error", exception=self.describe_exception(e))
            # Raised for every size: raise it with the sizes, untraced and uncounted.
            tracer, listener = sys.gettrace(), jax_util.test_event_listener
            sys.settrace(None)
            jax_util.test_event_listener = None
            try:
                self.real_jit(fun).lower(*concrete)
            except Exception as e:
                if self.describe_exception(e)["line"] != outcome["exception"]["line"]:
                    raise AssertionError(f"{name}: jax.export raised at another line than the call with sizes {sizes}") from e
                raise
            finally:
                sys.settrace(tracer)
                jax_util.test_event_listener = listener
            raise AssertionError(f"{name}: jax.export raised, the call with sizes {sizes} did not")

    def describe_exception(self, exc):
        line = None
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == self.fixture:
                line = tb.tb_lineno
                frames.append({"line": tb.tb_lineno, "function": tb.tb_frame.f_code.co_name})
            tb = tb.tb_next
        return {
            "class": type(exc).__name__,
            "message": clean_message(str(exc)),
            "line": line,
            "frames": frames,
        }

    # --- jit traces -------------------------------------------------------------------

    def on_test_event(self, name, *args):
        if name != "trace_to_jaxpr":
            return
        frame = enclosing_frame("trace_to_jaxpr")
        if frame is None:
            return
        debug_info = frame.f_locals.get("debug_info")
        fun = frame.f_locals.get("fun")
        if debug_info is None or debug_info.traced_for != "jit":
            return
        if is_equinox_jit(debug_info.func_filename):
            # equinox's filter_jit traces its own wrapper around the fixture's function: the
            # trace is the function's, named when the wrapper calls it (`global_trace`).
            in_avals = frame.f_locals.get("in_avals")
            record = {"call_line": self.innermost_fixture_line(frame), "args": [], "outputs": None, "cause": None, "equinox": True}
            self.equinox_pending.append(record)
            self.open_traces[id(frame)] = record
            frame.f_trace_lines = False
            frame.f_trace = self.trace_to_jaxpr_return
            return
        if not self.is_fixture_path(debug_info.func_filename):
            return
        if is_jitted_object(fun):
            return
        in_avals = frame.f_locals.get("in_avals")
        record = {
            "call_line": self.innermost_fixture_line(frame),
            "args": [aval_str(aval) for aval in in_avals] if in_avals is not None else [],
            # Each leaf's path as JAX's debug info names it (`params['w']`, `result[1].mu`).
            # flax's nnx.jit traces its own wrapper (a `JitFn`), whose leaves JAX names by
            # flax's internals (`model.states[0][3]`): tracelens names them by the state's
            # path (`model['linear/kernel']`) and they are not compared.
            "arg_paths": [] if type(fun).__module__.startswith("flax") else list(debug_info.arg_names or ()),
            "out_paths": None,
            "outputs": None,
            "cause": self.pending_causes.pop(id(fun), None),
        }
        entry = self.function_entry(debug_info.func_name, debug_info.func_lineno)
        entry["per_trace"].append(record)
        self.open_traces[id(frame)] = record
        frame.f_trace_lines = False
        frame.f_trace = self.trace_to_jaxpr_return

    def trace_to_jaxpr_return(self, frame, event, arg):
        if event == "return":
            record = self.open_traces.pop(id(frame), None)
            if record is not None and arg is not None:
                try:
                    jaxpr, out_avals = arg
                    paths = getattr(getattr(jaxpr, "debug_info", None), "result_paths", None)
                    if "out_paths" in record and paths is not None and not callable(paths):
                        record["out_paths"] = list(paths)
                    if record.pop("equinox", False):
                        # filter_jit's marker output comes first; static outputs are not avals.
                        out_avals = list(out_avals)[1:]
                    record["outputs"] = [aval_str(aval) for aval in out_avals]
                except Exception as e:
                    record["outputs_error"] = repr(e)
        return self.trace_to_jaxpr_return

    def function_entry(self, name, def_line):
        key = (name, def_line)
        entry = self.functions.get(key)
        if entry is None:
            span = self.function_spans.get(def_line, [def_line, def_line])
            entry = {
                "name": name,
                "def_line": def_line,
                "def_lines_span": span,
                "traces": 0,
                "per_trace": [],
                "calls": [],
            }
            self.functions[key] = entry
        return entry

    def jit_traces_json(self):
        out = []
        for entry in self.functions.values():
            entry["traces"] = len(entry["per_trace"])
            out.append(entry)
        out.sort(key=lambda e: (e["def_line"] or 0, e["name"]))
        return out

    def make_jit_factory(self):
        oracle = self
        real_jit = self.real_jit

        def jit(*args, **kwargs):
            if not args:
                return lambda fun: jit(fun, **kwargs)
            fun = args[0]
            jitted = real_jit(*args, **kwargs)
            source = oracle.fixture_source_of(fun)
            if source is None or is_jitted_object(fun):
                return jitted
            return JitRecorder(oracle, jitted, source)

        jit.__doc__ = real_jit.__doc__
        jit.__wrapped__ = real_jit
        return jit

    def fixture_source_of(self, fun):
        from jax._src import api_util

        try:
            info = api_util.fun_sourceinfo(fun)
        except Exception:
            return None
        match = re.match(r"^(\S+) at (.*):(\d+)$", info)
        if match is None or not self.is_fixture_path(match.group(2)):
            return None
        return match.group(1), int(match.group(3))

    def record_call(self, source, out):
        leaves = self.jax.tree_util.tree_leaves(out)
        entry = self.function_entry(*source)
        entry["calls"].append(
            {
                "call_line": self.innermost_fixture_line(sys._getframe(2)),
                "outputs": [value_aval(leaf) for leaf in leaves],
            }
        )

    def innermost_fixture_line(self, frame):
        while frame is not None:
            if frame.f_code.co_filename == self.fixture:
                return frame.f_lineno
            frame = frame.f_back
        return None

    def is_fixture_path(self, path):
        return path is not None and os.path.abspath(path) == self.fixture

    # --- line tracing -------------------------------------------------------------------

    def global_trace(self, frame, event, arg):
        if frame.f_code.co_filename != self.fixture:
            return None
        caller = frame.f_back
        if self.equinox_pending and caller is not None and is_equinox_jit(caller.f_code.co_filename):
            record = self.equinox_pending.pop()
            code = frame.f_code
            self.function_entry(code.co_name, code.co_firstlineno)["per_trace"].append(record)
        return self.local_trace

    def local_trace(self, frame, event, arg):
        key = id(frame)
        state = self.frame_state.get(key)
        if state is None:
            state = self.frame_state[key] = [None, None]
        if event == "line":
            line = frame.f_lineno
            pending = state[1]
            if pending is not None:
                start, end = self.statements.get(pending, (pending, pending))
                if line < start or line > end or line == pending and state[0] == pending:
                    self.read_revealed(frame, pending)
                    state[1] = None
            if line in self.hit_lines:
                previous = state[0]
                start, end = self.stmt_of_start[line]
                if previous is None or previous == line or not (start < previous <= end):
                    self.line_hits_for_start(line)
            if line in self.reveal_targets and state[1] is None:
                state[1] = line
            state[0] = line
        elif event == "exception":
            state[1] = None
        elif event == "return":
            if state[1] is not None:
                self.read_revealed(frame, state[1])
            self.frame_state.pop(key, None)
        return self.local_trace

    def line_hits_for_start(self, start):
        for line in self.hit_lines[start]:
            self.line_hits[line] = self.line_hits.get(line, 0) + 1

    def read_revealed(self, frame, start):
        line, name = self.reveal_targets[start]
        record = self.reveal_records[line]
        local_vars = frame.f_locals
        if name not in local_vars:
            return
        value = local_vars[name]
        record["runs"] += 1
        if isinstance(value, self.jax.core.Tracer):
            aval = value_aval(value)
            if aval not in record["avals"]:
                record["avals"].append(aval)
        else:
            desc = value_aval(value)
            if desc not in record["untraced"]:
                record["untraced"].append(desc)


class CauseHandler(logging.Handler):
    def __init__(self, oracle):
        super().__init__(logging.WARNING)
        self.oracle = oracle

    def emit(self, record):
        frame = enclosing_frame("explain")
        if frame is None:
            return
        fun = frame.f_locals.get("fun")
        message = record.getMessage()
        lines = message.splitlines()
        self.oracle.pending_causes[id(fun)] = "\n".join(line.strip() for line in lines[1:])


class JitRecorder:
    """Stands for one real jitted object; records each call's outputs and forwards the rest."""

    def __init__(self, oracle, jitted, source):
        object.__setattr__(self, "_recorder_oracle", oracle)
        object.__setattr__(self, "_recorder_jitted", jitted)
        object.__setattr__(self, "_recorder_source", source)
        object.__setattr__(self, "__doc__", getattr(jitted, "__doc__", None))

    def __call__(self, *args, **kwargs):
        out = self._recorder_jitted(*args, **kwargs)
        try:
            self._recorder_oracle.record_call(self._recorder_source, out)
        except Exception:
            pass
        return out

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_recorder_jitted"), name)

    def __setattr__(self, name, value):
        setattr(self._recorder_jitted, name, value)

    def __repr__(self):
        return repr(self._recorder_jitted)


# --- helpers --------------------------------------------------------------------------


def is_equinox_jit(path):
    return path is not None and path.replace(os.sep, "/").endswith("equinox/_jit.py")


def is_jitted_object(fun):
    """Whether `fun` wraps a callable that is itself jitted.

    `make_jaxpr(f)`, `eval_shape(f)`, `jit(partial(f, w))` and `jit(grad(f))` of a jitted
    `f` trace a wrapper around `f`, which JAX names after `f`; only `f`'s own traces count.
    """
    for _ in range(100):
        if isinstance(fun, JitRecorder) or type(fun).__name__ == "PjitFunction":
            return True
        if isinstance(fun, functools.partial):
            fun = fun.func
            continue
        wrapped = getattr(fun, "__wrapped__", None)
        if wrapped is None:
            return False
        fun = wrapped
    return False


def aval_str(aval):
    text = aval.str_short(short_dtypes=True)
    if getattr(aval, "weak_type", False):
        text = "~" + text
    return text


def value_aval(value):
    import jax

    if isinstance(value, (jax.Array, jax.core.Tracer)):
        try:
            return aval_str(jax.typeof(value))
        except Exception:
            return "<" + type(value).__name__ + ">"
    return "<" + type(value).__name__ + ">"


def clean_message(message):
    lines = [line for line in message.split("\n") if not line.startswith("See https://docs.jax.dev")]
    return "\n".join(lines).rstrip("\n")


def parse_annotations(source):
    """The expectation comments, each attached to the line it speaks of."""
    comments = []
    code_lines = set()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    ignorable = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            comments.append(tok)
        elif tok.type not in ignorable:
            for line in range(tok.start[0], tok.end[0] + 1):
                code_lines.add(line)
    last_line = len(source.splitlines())
    annotations = []
    for tok in comments:
        line = tok.start[0]
        alone = line not in code_lines
        if alone:
            target = line + 1
            while target <= last_line and target not in code_lines:
                target += 1
            if target > last_line:
                target = None
        else:
            target = line
        matches = list(ANNOTATION.finditer(tok.string))
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(tok.string)
            body = tok.string[match.end() : end].strip()
            ann = parse_annotation(match.group(1), body)
            ann["comment_line"] = line
            ann["line"] = target
            if target is None:
                ann["problem"] = "annotation comment is not followed by a line of code"
            annotations.append(ann)
    return annotations


def parse_annotation(kind, body):
    ann = {"kind": kind, "text": body}
    if kind == "error":
        m = ERROR_BODY.match(body)
        if m is None:
            ann["problem"] = 'expected `# error: CODE ExceptionClass "substring"`'
        else:
            ann.update(code=m.group(1), exception=m.group(2), substring=m.group(3) or "")
    elif kind == "warning":
        m = WARNING_BODY.match(body)
        if m is None:
            ann["problem"] = 'expected `# warning: CODE "substring"`'
        else:
            ann.update(code=m.group(1), substring=m.group(2) or "")
    elif kind == "revealed":
        avals = [part.strip() for part in body.split("|")]
        bad = [a for a in avals if not AVAL.match(a)]
        if bad or not avals:
            ann["problem"] = "expected `# revealed: AVAL` or `AVAL | AVAL`, got " + repr(body)
        else:
            ann["avals"] = avals
    elif kind == "traces":
        if re.fullmatch(r"\d+", body):
            ann["count"] = int(body)
        else:
            ann["problem"] = "expected `# traces: N`"
    return ann


def statement_ranges(tree):
    """Line -> (first, last) line of the innermost simple statement or compound header there."""
    ranges = {}

    def header_end(node):
        for field in ("body", "handlers", "orelse", "finalbody", "cases"):
            children = getattr(node, field, None)
            if children:
                # A `match_case` has no line of its own: its pattern has.
                first = children[0].pattern if isinstance(children[0], ast.match_case) else children[0]
                return max(node.lineno, first.lineno - 1)
        return node.end_lineno

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                if isinstance(
                    child,
                    (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef),
                ):
                    start = child.lineno
                    end = start
                elif any(getattr(child, f, None) for f in ("body", "orelse", "handlers", "cases")):
                    start = child.lineno
                    end = header_end(child)
                else:
                    start = child.lineno
                    end = child.end_lineno
                for line in range(start, end + 1):
                    ranges[line] = (start, end)
            visit(child)

    visit(tree)
    return ranges


def function_spans(tree):
    """co_firstlineno -> [first decorator line, def line] for every def and lambda."""
    spans = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            spans[first] = [first, node.lineno]
        elif isinstance(node, ast.Lambda):
            spans.setdefault(node.lineno, [node.lineno, node.lineno])
    return spans


def lines_with_several_statements(tree):
    """Lines where two statements start (`a = 1; b = 2`, `for x in xs: y = x`)."""
    starts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            starts[node.lineno] = starts.get(node.lineno, 0) + 1
    return {line for line, count in starts.items() if count > 1}


def assignment_target(tree, line):
    """(name, line of the name, None) for the single Name assigned on `line`, or why not."""
    candidates = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and node.lineno <= line <= node.end_lineno
    ]
    if not candidates:
        return None, None, f"line {line} has no assignment"
    node = max(candidates, key=lambda n: n.lineno)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if len(targets) != 1:
        return None, None, f"line {line}: chained assignment is not supported by `# revealed:`"
    target = targets[0]
    if not isinstance(target, ast.Name):
        return None, None, (
            f"line {line}: `# revealed:` needs a single name as the assignment target, "
            f"got `{ast.unparse(target)}`"
        )
    return target.id, target.lineno, None


if __name__ == "__main__":
    sys.exit(main())
