"""The Python surface tracelens must never fail on, recorded from CPython 3.11.

Run with CPython 3.11 (any venv; only the standard library is imported):

    python3 tests/conformance/gen_python_surface.py

It writes tracer-core/src/interp/stdlib/python311.tsv. The interpreter reads that table to
tell a name CPython has but tracelens does not model (an unknown value) from a name CPython
does not have (a real NameError or AttributeError); tracer-core/tests/python_surface.rs
names, calls and subclasses every row and checks that tracelens reports nothing.

TSV columns (tab separated, `#` lines are comments):

    kind  owner  name  info  probe

* kind: `builtin` (a name of `builtins`), `attr` (a public attribute of a modelled standard
  library module) or `typeattr` (an attribute of a builtin type, `int.from_bytes`).
* owner: `builtins`, the module (`math`, `os.path`) or the type (`int`, `property`).
* info: `exception:<base>` for exception and warning classes (their first base),
  `alias:<name>` for a builtin that is another one under a second name (`IOError`),
  `class`, `function`, `module` or `constant`.
* probe: Python statements (`;`-separated, with `\\n` for a newline) that run without an
  error under CPython 3.11 after `import <owner>`: a call with plausible arguments, and for a
  class that CPython lets one subclass, a subclass. Empty when no candidate worked or the
  name has effects outside the program (`exit`, `input`, `os.remove`).
"""

import builtins
import importlib
import inspect
import os
import sys
import warnings

MODULES = [
    "abc",
    "collections",
    "dataclasses",
    "enum",
    "functools",
    "itertools",
    "logging",
    "math",
    "operator",
    "os",
    "os.path",
    "random",
    "sys",
    "time",
    "types",
    "typing",
    "warnings",
]

TYPES = [
    "bool",
    "bytearray",
    "bytes",
    "classmethod",
    "complex",
    "dict",
    "float",
    "frozenset",
    "int",
    "list",
    "object",
    "property",
    "range",
    "set",
    "slice",
    "staticmethod",
    "str",
    "tuple",
    "type",
]

# Argument lists tried in order; the first that CPython accepts is the probe.
CANDIDATES = [
    "",
    "1",
    "1.0",
    "[1, 2]",
    "lambda x: x, [1, 2]",
    "'a'",
    "1, 2",
    "[1, 2], 1",
    "lambda x, y: x, [1, 2]",
    "'a', 'b'",
    "'a', [1, 2]",
    "1, 1, 1",
]

# Names whose calls reach outside the program (files, the terminal, the process).
NEVER_CALL = {
    "builtins": {"breakpoint", "copyright", "credits", "exit", "help", "license", "input", "open", "quit", "__import__", "exec", "eval", "compile", "print"},
    "sys": None,
    "os": {"getenv", "getcwd", "cpu_count", "fspath", "fsencode", "fsdecode", "get_terminal_size"},
    "time": {"sleep", "pthread_getcpuclockid", "clock_settime", "clock_settime_ns", "tzset"},
    "logging": {"FileHandler", "RotatingFileHandler", "WatchedFileHandler", "shutdown", "basicConfig", "disable", "captureWarnings", "setLoggerClass", "setLogRecordFactory", "raiseExceptions"},
    "warnings": {"showwarning", "resetwarnings", "simplefilter", "filterwarnings"},
    "random": {"seed", "setstate"},
}


def callable_allowed(owner, name):
    never = NEVER_CALL.get(owner, set())
    if owner == "os":
        return name in never  # os: only the listed harmless calls
    if never is None:
        return False
    return name not in never


def info_of(value, name=None):
    if inspect.isclass(value) and name is not None and value.__name__ != name and name.isidentifier():
        return f"alias:{value.__name__}"
    if inspect.isclass(value):
        if issubclass(value, BaseException):
            return f"exception:{value.__mro__[1].__name__}"
        return "class"
    if inspect.ismodule(value):
        return "module"
    if callable(value):
        return "function"
    return "constant"


def works(code, env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(code, dict(env))
            return True
        except BaseException:
            return False


def probe(owner, name, value, env):
    ref = name if owner == "builtins" else f"{owner}.{name}"
    statements = []
    if callable(value) and callable_allowed(owner, name):
        for args in CANDIDATES:
            call = f"_x = {ref}({args})"
            if works(call, env):
                statements.append(call)
                break
    if inspect.isclass(value) and works(f"class _Sub({ref}):\n    pass", env):
        statements.append(f"class _Sub({ref}):\\n    pass")
    if not statements and works(f"_x = {ref}", env):
        statements.append(f"_x = {ref}")
    return "; ".join(statements)


def main():
    assert sys.version_info[:2] == (3, 11), "run with CPython 3.11"
    rows = []
    env = {}
    for name in sorted(dir(builtins)):
        if name.startswith("_") and name not in ("__build_class__", "__debug__", "__import__", "__name__"):
            continue
        value = getattr(builtins, name)
        rows.append(("builtin", "builtins", name, info_of(value, name), probe("builtins", name, value, env)))
    for module in MODULES:
        m = importlib.import_module(module)
        env = {module.split(".")[0]: importlib.import_module(module.split(".")[0])}
        for name in sorted(dir(m)):
            if name.startswith("_") and name not in ("__all__", "__name__", "__doc__", "__file__"):
                continue
            value = getattr(m, name)
            rows.append(("attr", module, name, info_of(value), probe(module, name, value, env)))
    for type_name in TYPES:
        t = getattr(builtins, type_name)
        for name in sorted(dir(t)):
            rows.append(("typeattr", type_name, name, info_of(getattr(t, name, None)), ""))
    out = os.path.join(os.path.dirname(__file__), "..", "..", "tracer-core", "src", "interp", "stdlib", "python311.tsv")
    with open(out, "w") as f:
        f.write(f"# Generated by tests/conformance/gen_python_surface.py from CPython {sys.version.split()[0]}.\n")
        f.write("# kind\towner\tname\tinfo\tprobe\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    print(f"{len(rows)} rows -> {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
