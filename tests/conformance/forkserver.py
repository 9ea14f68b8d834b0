"""Runs Python programs as `python PROGRAM ARGS...` would, each in a child forked from one
process that has imported the heavy modules once (`xtask/src/forkserver.rs` drives it).

Usage: python forkserver.py [MODULE ...]

Imports each MODULE (e.g. `jax`, `tensorflow`), then reads requests from standard input, one
JSON object a line:

    {"argv": [PROGRAM, ARG, ...], "cwd": DIR, "stdout": FILE, "stderr": FILE, "limit": SECONDS}

(or `"argv": ["-c", CODE, ARG, ...]`, as on Python's command line)
and answers each with one line on standard output once the child has ended:

    {"status": CODE or null, "timed_out": BOOL, "seconds": WALL, "cpu_seconds": CPU}

The child is what `python PROGRAM ARGS...` started in DIR would be, less the imports: its
own process group, standard input from /dev/null, standard output and error written to the
two files, `sys.argv` and `sys.path[0]` as Python sets them, PROGRAM run as `__main__`, an
uncaught exception printed by `sys.excepthook` from PROGRAM's frame on (exit status 1),
`SystemExit` as Python exits, then the `atexit` functions. The environment is this process's:
one server serves one environment. A child past its limit is killed with its group
(`status` null, `timed_out` true). What a program does to the modules' state (JAX's caches,
its config) stays in its child.
"""

import atexit
import builtins
import json
import os
import select
import signal
import sys
import threading
import time
import types


def main():
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    # What the imports or a stray write would print must not reach the replies.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    for name in sys.argv[1:]:
        __import__(name)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = serve(json.loads(line))
        except Exception as e:  # a bad request, or a fork that failed: answered, not fatal
            reply = {"status": None, "timed_out": False, "seconds": 0.0, "cpu_seconds": 0.0, "error": repr(e)}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


def serve(request):
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        status = 70  # EX_SOFTWARE, should the child's own setup fail
        try:
            status = run_child(request)
        finally:
            os._exit(status)
    return wait_for(pid, start, float(request.get("limit", 120)))


def wait_for(pid, start, limit):
    deadline = start + limit
    while True:
        done, wait_status, usage = os.wait4(pid, os.WNOHANG)
        if done == pid:
            return {
                "status": os.waitstatus_to_exitcode(wait_status) if os.WIFEXITED(wait_status) else None,
                "timed_out": False,
                "seconds": time.monotonic() - start,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
            }
        if time.monotonic() > deadline:
            for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    target()
                except OSError:
                    pass
            _, _, usage = os.wait4(pid, 0)
            return {
                "status": None,
                "timed_out": True,
                "seconds": time.monotonic() - start,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
            }
        select.select([], [], [], 0.01)


def run_child(request):
    os.setpgid(0, 0)
    argv = [str(a) for a in request["argv"]]
    os.chdir(request["cwd"])
    stdin = os.open(os.devnull, os.O_RDONLY)
    stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for source, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(source, target)
        os.close(source)
    # The server's own stdin may hold requests read ahead: the program reads /dev/null.
    sys.stdin = open(0, closefd=False)
    if argv[0] == "-c":
        # `python -c CODE ARG...`: `sys.argv` is ['-c', ARG...] and the working directory
        # comes first on the path.
        sys.argv = ["-c"] + argv[2:]
        sys.path[0] = ""
        status = run_as_main("<string>", argv[1])
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        with open(argv[0], "rb") as f:
            source = f.read()
        status = run_as_main(argv[0], source)
    try:
        atexit._run_exitfuncs()
        threading._shutdown()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status


def run_as_main(filename, source):
    """SOURCE as `__main__`; the exit status `python FILENAME` would have."""
    main_module = types.ModuleType("__main__")
    if filename != "<string>":
        main_module.__file__ = filename
    main_module.__builtins__ = builtins
    # This server's own module stays referenced: a module freed has its globals wiped.
    global SERVER_MODULE
    SERVER_MODULE = sys.modules["__main__"]
    sys.modules["__main__"] = main_module
    this_file = sys._getframe().f_code.co_filename
    try:
        code = compile(source, filename, "exec")
        exec(code, main_module.__dict__)
        return 0
    except SystemExit as e:
        return exit_status(e.code)
    except BaseException as e:
        traceback = e.__traceback__
        # Python's own traceback starts at the program's frame: drop this file's frames.
        while traceback is not None and traceback.tb_frame.f_code.co_filename == this_file:
            traceback = traceback.tb_next
        sys.excepthook(type(e), e.with_traceback(traceback), traceback)
        return 1


def exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
