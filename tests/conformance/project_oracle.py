"""Runs one project fixture (tests/fixtures/_projects/NAME/) under its real runner and prints,
as one JSON object, every exception real JAX raised there and how often each jitted function
of the project was traced.

Usage: python project_oracle.py PROJECT_DIR

The runner is chosen as a user would run the project:
- pytest, when the folder has a `conftest.py` or a test file that imports pytest:
  `pytest.main([dir, "-q", "-p", "no:cacheprovider"])`, every failing test's exception kept;
- unittest, when a `*_test.py`/`test_*.py` file defines `TestCase`s (absltest's included):
  each such module's tests loaded and run, every error kept;
- otherwise `main.py` as `__main__` (an absl `app.run(main)` reads its flags from
  `sys.argv = ["main.py"]`, so they keep their defaults).

An exception is described at the innermost traceback frame in a file of the project: the
file (relative to the project), the line, the class and the message. Traces are counted with
JAX's own test hook, as oracle.py does: `jax._src.util.test_event_listener` fires
"trace_to_jaxpr" each time a function is really traced (a cache miss); only `jit` traces of
functions defined in the project are counted, keyed by file and `def` line.
"""

import contextlib
import io
import json
import os
import re
import runpy
import sys
import traceback


def main():
    if len(sys.argv) != 2:
        print("usage: python project_oracle.py PROJECT_DIR", file=sys.stderr)
        return 2
    project = os.path.abspath(sys.argv[1])
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.chdir(project)
    sys.path.insert(0, project)
    real_stdout = sys.stdout
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            result = ProjectOracle(project).run()
    except BaseException:
        result = {"project": project, "oracle_error": traceback.format_exc()}
    result["stdout"] = captured.getvalue()
    real_stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


class ProjectOracle:
    def __init__(self, project):
        self.project = project
        self.errors = []
        self.traces = {}

    def in_project(self, path):
        path = os.path.abspath(path)
        return path.startswith(self.project + os.sep) and "site-packages" not in path

    def relative(self, path):
        return os.path.relpath(os.path.abspath(path), self.project)

    def run(self):
        import jax  # noqa: F401  (imported before the hook is set, as the project would)
        from jax._src import util as jax_util

        jax_util.test_event_listener = self.on_test_event
        try:
            runner = self.runner()
            getattr(self, "run_" + runner)()
        finally:
            jax_util.test_event_listener = None
        return {
            "project": self.project,
            "runner": runner,
            "jax_version": jax.__version__,
            "errors": self.errors,
            "traces": [{"path": p, "line": line, "name": name, "traces": n} for (p, line, name), n in sorted(self.traces.items())],
        }

    def python_files(self):
        return sorted(f for f in os.listdir(self.project) if f.endswith(".py"))

    def test_files(self):
        return [f for f in self.python_files() if f.startswith("test_") or f.endswith("_test.py")]

    def runner(self):
        files = self.python_files()
        sources = {f: open(os.path.join(self.project, f), encoding="utf-8").read() for f in files}
        if "conftest.py" in files or any(re.search(r"^\s*import pytest", sources[f], re.M) for f in self.test_files()):
            return "pytest"
        if any("TestCase" in sources[f] for f in self.test_files()):
            return "unittest"
        return "main"

    def record(self, exc):
        where = None
        tb = exc.__traceback__
        while tb is not None:
            if self.in_project(tb.tb_frame.f_code.co_filename):
                where = (self.relative(tb.tb_frame.f_code.co_filename), tb.tb_lineno)
            tb = tb.tb_next
        entry = {
            "path": where[0] if where else None,
            "line": where[1] if where else None,
            "class": type(exc).__name__,
            "message": str(exc).split("\n")[0],
        }
        if entry not in self.errors:
            self.errors.append(entry)

    def run_main(self):
        sys.argv = ["main.py"]
        try:
            runpy.run_path(os.path.join(self.project, "main.py"), run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                self.record(e)
        except Exception as e:
            self.record(e)

    def run_unittest(self):
        import importlib
        import unittest

        result = unittest.TestResult()
        for f in self.test_files():
            module = importlib.import_module(f[:-3])
            unittest.defaultTestLoader.loadTestsFromModule(module).run(result)
        # TestResult keeps formatted tracebacks only; install_unittest_capture kept the
        # exception objects (errors, not assertion failures: those are the tests' own).
        for exc in getattr(result, "_tracelens_excs", []):
            self.record(exc)

    def run_pytest(self):
        import pytest

        oracle = self

        class Collector:
            @pytest.hookimpl(hookwrapper=True)
            def pytest_runtest_makereport(self, item, call):
                yield
                if call.excinfo is not None and call.when in ("setup", "call"):
                    oracle.record(call.excinfo.value)

        pytest.main([self.project, "-q", "-p", "no:cacheprovider"], plugins=[Collector()])

    def on_test_event(self, name, *args):
        if name != "trace_to_jaxpr":
            return
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "trace_to_jaxpr":
            frame = frame.f_back
        if frame is None:
            return
        debug_info = frame.f_locals.get("debug_info")
        if debug_info is None or debug_info.traced_for != "jit" or not debug_info.func_filename:
            return
        if not self.in_project(debug_info.func_filename):
            return
        key = (self.relative(debug_info.func_filename), debug_info.func_lineno, debug_info.func_name)
        self.traces[key] = self.traces.get(key, 0) + 1


def install_unittest_capture():
    """unittest's TestResult formats exceptions into strings; keep the exception objects too."""
    import unittest

    original = unittest.TestResult.addError

    def add_error(self, test, err):
        if not hasattr(self, "_tracelens_excs"):
            self._tracelens_excs = []
        self._tracelens_excs.append(err[1])
        return original(self, test, err)

    unittest.TestResult.addError = add_error


if __name__ == "__main__":
    install_unittest_capture()
    sys.exit(main())
