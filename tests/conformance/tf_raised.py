"""Runs a program under real TensorFlow and prints what it raised, for the reproducer check
of `cargo xtask tf-conformance` (`xtask/src/tf_repro.rs`).

Usage: python tf_raised.py PROGRAM

PROGRAM runs as `__main__`, in its own folder, as `python PROGRAM` would run it; the xtask
runs this script under `forkserver.py` with TensorFlow imported once before the forks. One
JSON object is printed on a line of its own: `{"program": P, "class": C, "message": M}`
(`class` is null when it raised nothing), where the message is the one `tf_oracle.py`
records: for an error raised while tracing, which AutoGraph wraps as `in user code: File
"...", line N ...`, the last paragraph's message, otherwise `str(exception)`.
"""

import json
import os
import re
import runpy
import sys

LAST_PARAGRAPH = re.compile(r"\n\n    ([A-Za-z_][A-Za-z0-9_.]*): (.*)$", re.S)


def message_of(exc):
    message = str(exc)
    if "in user code:" in message:
        last = LAST_PARAGRAPH.search(message.rstrip("\n"))
        if last is not None:
            return last.group(2).strip()
    return message


def main():
    if len(sys.argv) != 2:
        print("usage: python tf_raised.py PROGRAM", file=sys.stderr)
        return 2
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    program = os.path.abspath(sys.argv[1])
    # The answer goes to this script's standard output; what the program prints, nowhere.
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    folder = os.path.dirname(program)
    os.chdir(folder)
    sys.argv = [program]
    sys.path[0] = folder
    result = {"program": sys.argv[0], "class": None, "message": None}
    try:
        runpy.run_path(program, run_name="__main__")
    except BaseException as e:  # noqa: BLE001  (what the program raised is the result)
        result["class"] = type(e).__name__
        result["message"] = message_of(e)
    answer.write(json.dumps(result) + "\n")
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
