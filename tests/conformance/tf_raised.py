"""Runs programs under real TensorFlow and prints what each one raised, for the reproducer
check of `cargo xtask tf-conformance` (`xtask/src/tf_repro.rs`).

Usage: python tf_raised.py PROGRAM...

TensorFlow is imported once; each program then runs as `__main__` in a child process forked
from this one, in the program's own folder, with a 60 s limit. One JSON object per program
is printed on a line of its own:
`{"program": P, "class": C, "message": M}` (`class` is null when it raised nothing), where
the message is the one `tf_oracle.py` records: for an error raised while tracing, which
AutoGraph wraps as `in user code: File "...", line N ...`, the last paragraph's message,
otherwise `str(exception)`.
"""

import json
import os
import re
import runpy
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow  # noqa: E402,F401  (imported once, before the forks)

LAST_PARAGRAPH = re.compile(r"\n\n    ([A-Za-z_][A-Za-z0-9_.]*): (.*)$", re.S)


def message_of(exc):
    message = str(exc)
    if "in user code:" in message:
        last = LAST_PARAGRAPH.search(message.rstrip("\n"))
        if last is not None:
            return last.group(2).strip()
    return message


def run_child(program, write_end):
    os.chdir(os.path.dirname(os.path.abspath(program)))
    sys.argv = [program]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    result = {"program": program, "class": None, "message": None}
    try:
        runpy.run_path(program, run_name="__main__")
    except BaseException as e:  # noqa: BLE001  (what the program raised is the result)
        result["class"] = type(e).__name__
        result["message"] = message_of(e)
    with os.fdopen(write_end, "w") as f:
        json.dump(result, f)
    os._exit(0)


def run(program):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        run_child(program, write_end)
    os.close(write_end)

    def timed_out(signum, frame):
        os.kill(pid, signal.SIGKILL)

    signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(60)
    with os.fdopen(read_end) as f:
        text = f.read()
    os.waitpid(pid, 0)
    signal.alarm(0)
    try:
        return json.loads(text)
    except ValueError:
        return {"program": program, "class": None, "message": None, "error": "the program did not finish in 60 s"}


def main():
    for program in sys.argv[1:]:
        print(json.dumps(run(program)), flush=True)


if __name__ == "__main__":
    main()
