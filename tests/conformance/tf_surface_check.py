"""Checks the modelled TensorFlow surface against real TensorFlow: every row of
`tracer-core/src/tf/surface.rs` (`Variant = "name" in ["module", ...],`, commented-out rows
too) names an attribute that each of its modules has in the installed TensorFlow.

Usage: python tf_surface_check.py tracer-core/src/tf/surface.rs
Prints one line per problem and a summary; exit status 1 when a row is wrong.
"""

import re
import sys

ROW = re.compile(r'^\s*(?://\s*)?(\w+)\s*=\s*"([^"]+)"\s+in\s+\[([^\]]*)\],')


def main():
    import tensorflow as tf

    rows = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                modules = [x.strip().strip('"') for x in m.group(3).split(",") if x.strip()]
                rows.append((m.group(1), m.group(2), modules, line.lstrip().startswith("//")))
    problems = 0
    for variant, name, modules, commented in rows:
        for module in modules:
            target = tf
            for part in module.split(".")[1:]:
                target = getattr(target, part, None)
            if target is None or not hasattr(target, name):
                print(f"surface.rs: {variant}: {module}.{name} does not exist in TensorFlow {tf.__version__}")
                problems += 1
    modelled = sum(1 for r in rows if not r[3])
    print(f"tf surface: {modelled} modelled rows ({len(rows) - modelled} planned) checked against TensorFlow {tf.__version__}: {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
