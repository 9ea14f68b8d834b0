"""Runs TensorFlow conformance fixtures under real TensorFlow and writes what it saw, one
JSON object per fixture, in the shape `oracle.py` gives for JAX (so `xtask/src/compare.rs`
compares both the same way).

Usage: python tf_oracle.py FIXTURE.py [--extra-frames N]   ->   one JSON object on stdout

With `--extra-frames N` the fixture runs under N more Python frames than it would (each a
call of a function that calls the next): where TensorFlow raises for a recursion between
`tf.function`s depends on how deep the stack is when the recursion starts (`xtask
tf-conformance` runs a fixture stating `# stack depths:` once per depth it names).

The fixture runs as `__main__`; what it prints is kept in the object's `stdout`. `xtask
tf-conformance` runs this script under `forkserver.py`, which imports TensorFlow once (about
two seconds) and forks a child per fixture, with a 60 s limit.

How each field is observed:
- `annotations`: the fixture's `# error:`, `# warning:`, `# revealed:`, `# traces:`
  comments, read as oracle.py reads them.
- `jit_traces`: every `tf.function` trace. TensorFlow traces a Python function in
  `tracing_compilation._create_concrete_function` (once per cache miss, and again for the
  second trace of a function that created variables); it is wrapped to record the traced
  Python function (unwrapped to the fixture's own), the fixture line that called it, the
  argument and output TensorSpecs as avals (`f32[2,3]`, `f32[?,3]` for a `None`
  dimension) and whether tracing raised, and the concrete function's `input_parameters`
  as `pretty_printed_concrete_signatures()` prints them (name, kind, type). A trace begun
  inside a running trace of the same function (a recursive tf.function, which TensorFlow
  traces again at each level until Python's recursion limit: a number that depends on the
  stack, not on the program) is counted in `reentrant_traces`, not in `traces`.
- `exception`: the uncaught exception's class and message; an error raised while tracing
  is wrapped by AutoGraph as `in user code: File "...", line N ...`: its line is the
  innermost fixture line named there and its message the last paragraph's.
- `line_hits` and `revealed`: `sys.settrace` over the fixture's frames and the frames of
  the code AutoGraph generates from them, whose lines are mapped back to the fixture's
  through AutoGraph's source maps.
"""

import io
import json
import os
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle as jax_oracle  # noqa: E402  (the annotation parser and AST helpers)

USER_CODE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
LAST_PARAGRAPH = re.compile(r"\n\n    ([A-Za-z_][A-Za-z0-9_.]*): (.*)$", re.S)


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--extra-frames" and sys.argv[3].isdigit():
        extra_frames = int(sys.argv[3])
    elif len(sys.argv) == 2:
        extra_frames = 0
    else:
        print("usage: python tf_oracle.py FIXTURE.py [--extra-frames N]", file=sys.stderr)
        return 2
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    fixture = os.path.abspath(sys.argv[1])
    # The JSON goes to this script's standard output; what the fixture or TensorFlow's C++
    # writes there directly, nowhere (its `print`s are captured by the run itself).
    json_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    code = 0
    try:
        run = FixtureRun(fixture)
        run.extra_frames = extra_frames
        result = run.run()
    except BaseException:
        result = {"fixture": fixture, "oracle_error": traceback.format_exc()}
        code = 3
    json_out.write(json.dumps(result, indent=1) + "\n")
    json_out.flush()
    return code


class FixtureRun(jax_oracle.Oracle):
    """oracle.Oracle's line and reveal tracking, with tf.function traces in place of jit's."""

    def __init__(self, fixture):
        super().__init__(fixture)
        self.source_maps = {}
        self.generated_state = {}
        # The fixture functions being traced now, innermost last.
        self.tracing = []
        # Python frames the fixture runs under beyond its own (`--extra-frames`).
        self.extra_frames = 0

    def run(self):
        import tensorflow as tf
        from tensorflow.python.autograph.pyct import transpiler
        from tensorflow.python.eager.polymorphic_function import tracing_compilation

        self.tf = tf
        real_create = tracing_compilation._create_concrete_function
        real_transform = transpiler.PyToPy.transform_function
        oracle = self

        def create(function_type, type_context, func_graph, tracing_options):
            record = oracle.start_trace(tracing_options.python_function)
            try:
                concrete = real_create(function_type, type_context, func_graph, tracing_options)
            finally:
                if record is not None:
                    oracle.tracing.pop()
            if record is not None:
                oracle.finish_trace(record, concrete)
            return concrete

        def transform_function(self_, fn, user_context):
            result = real_transform(self_, fn, user_context)
            try:
                _, module, source_map = result
                oracle.source_maps[os.path.abspath(module.__file__)] = source_map
            except Exception:
                pass
            return result

        tracing_compilation._create_concrete_function = create
        transpiler.PyToPy.transform_function = transform_function
        stdout = io.StringIO()
        exception = None
        start = time.perf_counter()
        real_stdout = sys.stdout
        sys.stdout = stdout
        sys.settrace(self.global_trace)
        try:
            import runpy

            under_frames(self.extra_frames, lambda: runpy.run_path(self.fixture, run_name="__main__"))
        except SystemExit as e:
            if e.code not in (None, 0):
                exception = self.describe_exception(e)
        except BaseException as e:
            exception = self.describe_exception(e)
        finally:
            sys.settrace(None)
            sys.stdout = real_stdout
            elapsed = time.perf_counter() - start
            tracing_compilation._create_concrete_function = real_create
            transpiler.PyToPy.transform_function = real_transform
        return {
            "fixture": self.fixture,
            "jax_version": "tensorflow " + tf.__version__,
            "python_version": sys.version.split()[0],
            "annotations": self.annotations,
            "exception": exception,
            "jit_traces": self.jit_traces_json(),
            "revealed": [self.reveal_records[line] for line in sorted(self.reveal_records)],
            "line_hits": {
                str(line): self.line_hits.get(line, 0)
                for line in sorted({a["line"] for a in self.annotations if a["kind"] == "warning" and a["line"]})
            },
            "stdout": stdout.getvalue(),
            "run_seconds": round(elapsed, 4),
        }

    # --- tf.function traces -------------------------------------------------------------

    def start_trace(self, python_function):
        fn = python_function
        for _ in range(20):
            inner = getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
            if inner is None:
                break
            fn = inner
        code = getattr(fn, "__code__", None)
        if code is None or not self.is_fixture_path(code.co_filename):
            return None
        entry = self.function_entry(fn.__name__, code.co_firstlineno)
        if code in self.tracing:
            entry["reentrant_traces"] = entry.get("reentrant_traces", 0) + 1
            return None
        record = {"call_line": self.innermost_fixture_line(sys._getframe(2)), "args": [], "outputs": None, "cause": None}
        entry["per_trace"].append(record)
        self.tracing.append(code)
        return record

    def finish_trace(self, record, concrete):
        tf = self.tf
        try:
            args, kwargs = concrete.structured_input_signature
            specs = [s for s in tf.nest.flatten((args, kwargs)) if isinstance(s, tf.TensorSpec)]
            record["args"] = [spec_aval(s) for s in specs]
            outputs = [o for o in tf.nest.flatten(concrete.structured_outputs) if isinstance(o, tf.Tensor)]
            record["outputs"] = [spec_aval(tf.TensorSpec.from_tensor(o)) for o in outputs]
        except Exception as e:
            record["outputs_error"] = repr(e)
        try:
            record["input_parameters"] = [
                {"name": p.name, "kind": p.kind.name, "type": str(p.type_constraint)}
                for p in concrete.function_type.parameters.values()
            ]
        except Exception as e:
            record["input_parameters_error"] = repr(e)

    def describe_exception(self, exc):
        described = super().describe_exception(exc)
        message = str(exc)
        if "in user code:" in message:
            lines = [int(n) for path, n in USER_CODE_FRAME.findall(message) if self.is_fixture_path(path)]
            if lines:
                described["line"] = lines[-1]
            last = LAST_PARAGRAPH.search(message.rstrip("\n"))
            if last is not None:
                described["message"] = last.group(2).strip()
        return described

    # --- line tracing, through AutoGraph's generated code ---------------------------------

    def global_trace(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if filename == self.fixture:
            return self.local_trace
        source_map = self.source_maps.get(os.path.abspath(filename))
        if source_map is not None:
            return self.generated_trace
        return None

    def generated_trace(self, frame, event, arg):
        """Line events of AutoGraph's code for a fixture function, as fixture lines."""
        from tensorflow.python.autograph.pyct import origin_info

        key = id(frame)
        if event == "line":
            source_map = self.source_maps.get(os.path.abspath(frame.f_code.co_filename), {})
            origin = source_map.get(origin_info.LineLocation(frame.f_code.co_filename, frame.f_lineno))
            if origin is None or not self.is_fixture_path(origin.loc.filename):
                return self.generated_trace
            line = origin.loc.lineno
            previous = self.generated_state.get(key)
            if previous is not None and previous != line and previous in self.reveal_targets:
                self.read_revealed(frame, previous)
            if previous != line and line in self.hit_lines:
                self.line_hits_for_start(line)
            self.generated_state[key] = line
        elif event == "return":
            previous = self.generated_state.pop(key, None)
            if previous is not None and previous in self.reveal_targets:
                self.read_revealed(frame, previous)
        return self.generated_trace

    def read_revealed(self, frame, start):
        line, name = self.reveal_targets[start]
        record = self.reveal_records[line]
        value = frame.f_locals.get(name, _MISSING)
        if value is _MISSING:
            return
        record["runs"] += 1
        tf = self.tf
        if isinstance(value, tf.Tensor) and tf.is_symbolic_tensor(value):
            aval = spec_aval(tf.TensorSpec.from_tensor(value))
            if aval not in record["avals"]:
                record["avals"].append(aval)
        else:
            desc = "<" + type(value).__name__ + ">"
            if desc not in record["untraced"]:
                record["untraced"].append(desc)


_MISSING = object()


def under_frames(n, run):
    """`run()` called under `n` more Python frames."""
    if n <= 0:
        return run()
    return under_frames(n - 1, run)


SHORT = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "bool",
    "complex64": "c64",
    "complex128": "c128",
}


def spec_aval(spec):
    """`f32[2,3]`; `f32[?,3]` for a `None` dimension; `f32[*]` for an unknown rank."""
    dtype = SHORT.get(spec.dtype.name, spec.dtype.name)
    if spec.shape.rank is None:
        return dtype + "[*]"
    return dtype + "[" + ",".join("?" if d is None else str(d) for d in spec.shape.as_list()) + "]"


if __name__ == "__main__":
    sys.exit(main())
