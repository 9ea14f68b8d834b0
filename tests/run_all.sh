#!/usr/bin/env bash
# Every test tracelens has, in the order CI runs them (README's second command; .ci/run calls
# it after the formatting check). Each step installs what it needs the first time:
#   1. cargo build --workspace --release --bins --tests, then the unit and integration tests
#      (cargo nextest run where cargo-nextest is installed, cargo test otherwise), no Python;
#   2. xtask conformance: every fixture against real JAX 0.10.2 (a venv in target/),
#      xtask tf-conformance: every TensorFlow fixture against real TensorFlow 2.21.0
#      (another venv in target/), xtask hover: hover coverage against real JAX
#      (docs/hover.md), then xtask fuzz: 36 batches on every core with a fixed seed (the xtask binary of
#      step 1's build: what `cargo xtask` runs, without building it again), then the golden
#      tables' check, which has run beside step 1 since the start;
#   3. tests/run_editor_tests.sh: `tracelens lsp` over stdio (pytest-lsp) and in headless Neovim;
#   4. tests/editors/vscode/run.sh: the VS Code extension in the real workbench.
# (3 and 4 run beside the fuzzer; their output follows the golden tables'.)
# (What steps 2-4 install, TensorFlow's venv and the editors' tools, installs in the background
# during step 1.)
# Stops at the first step that fails, and says which.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says how long it took, in wall time and in CPU time of the processes it started
# (a CI log then shows where its time goes; CPU time moves less with the machine's load).
step() {
    echo "== $1"
    shift
    local TIMEFORMAT="== took %0R s; CPU %0U s user, %0S s system"
    time "$@" || { echo "tests/run_all.sh: failed: $*" >&2; exit 1; }
}

# Graphviz draws the trace graph (`trace --format svg`, the editors' graph view); the tests
# that check the SVG need it (they fail under CI=true without it).
if ! command -v dot >/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        step "apt-get install graphviz" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends graphviz >/dev/null'
    else
        echo "note: Graphviz's dot is missing and cannot be installed here (needs root and apt-get): the SVG checks are skipped outside CI"
    fi
fi
# TensorFlow's venv installs in the background while the unit tests run: it is network and
# unpacking (about 40 s here, longer on a slow mirror), and the tests are about 20 minutes.
# The pin is read from the xtask, its one source; the TensorFlow step waits for the install,
# and its xtask completes (or redoes) a venv this left unfinished.
tf_venv_pid=
tf_pin=$(sed -n 's/^pub const TF_PACKAGE: &str = "\(.*\)";$/\1/p' xtask/src/tf_conformance.rs)
if [[ -z ${TRACELENS_TF_PYTHON:-} && -n $tf_pin && ! -e target/tf-venv ]]; then
    mkdir -p target
    set -m # its own process group, so the trap below stops pip too
    ( "${PYTHON:-python3}" -m venv target/tf-venv \
        && target/tf-venv/bin/python -m pip install --disable-pip-version-check --quiet "$tf_pin" ) \
        >target/tf-venv-install.log 2>&1 &
    tf_venv_pid=$!
    set +m
fi
# The golden tables' check (xtask/src/golden.rs: each generator of tests/conformance/ re-run
# with --check against real JAX) is Python alone, about 16 minutes of CPU, most of it XLA
# compiling eager ops. It needs no tracelens, so it runs here, beside the build, which leaves
# about half of a 2-core machine idle (its CPU time was 1.1 times its wall time), instead of
# beside the fixtures, which keep both cores busy. It makes (or completes) JAX's venv first,
# with the pins of xtask/src/python_env.rs, their one source; the conformance step waits for
# the venv, and the golden step after the fuzzer waits for the check and shows what it said.
jax_python=${TRACELENS_JAX_PYTHON:-target/jax-venv/bin/python}
jax_pins="jax==$(sed -n 's/^pub const JAX_VERSION: &str = "\(.*\)";$/\1/p' xtask/src/python_env.rs)"
jax_pins+=" $(grep -o '("[A-Za-z0-9_.-]*", "[0-9][0-9.]*")' xtask/src/python_env.rs | sed 's/("\(.*\)", "\(.*\)")/\1==\2/' | tr '\n' ' ')"
goldens=$(grep '^const GENERATORS' xtask/src/golden.rs | grep -o '"[a-z_]*\.py"' | tr -d '"')
mkdir -p target
rm -f target/jax-venv.ready target/golden-check.status
set -m
(
    if [[ -z ${TRACELENS_JAX_PYTHON:-} ]]; then
        [[ -x target/jax-venv/bin/python ]] || "${PYTHON:-python3}" -m venv target/jax-venv
        # shellcheck disable=SC2086 # one pip argument per pin
        target/jax-venv/bin/python -m pip install --disable-pip-version-check --quiet $jax_pins
    fi
    touch target/jax-venv.ready
    status=0
    for generator in $goldens; do
        echo "golden $generator:"
        JAX_PLATFORMS=cpu timeout 3600 "$jax_python" "tests/conformance/$generator" --check || status=1
    done
    echo "$status" >target/golden-check.status
) >target/golden-check.log 2>&1 &
golden_pid=$!
set +m
# So do the editor tests' tools (pytest-lsp's venv, Neovim 0.11, Chromium, code-server, the
# extension's npm packages): network and unpacking, minutes on a fresh machine, that would
# otherwise wait for the build and the conformance runs, which keep both cores busy. The
# editor steps wait for it, and install again whatever it left unfinished.
mkdir -p target
set -m
{ bash tests/run_editor_tests.sh --prepare; bash tests/editors/vscode/run.sh --prepare; } \
    >target/editor-prepare.log 2>&1 &
editors_pid=$!
set +m
trap 'for pid in $tf_venv_pid $editors_pid $golden_pid ${editor_steps_pid:-}; do kill -- "-$pid" 2>/dev/null || true; done' EXIT
# The build first, then the tests: one build makes both the tests and the binaries the tasks
# below run, so xtask's binary links while the rest compiles instead of alone after the tests
# (28 s of one core, the other idle). `cargo xtask` (`cargo run -p xtask`) and
# `cargo build -p tracelens` would each resolve the features without the workspace's
# dev-dependencies and compile gemm, tracer-core and tracelens again, for the same code (10
# and 16 minutes of a loaded 2-core machine); built with the tests, they are built once.
# (So the tracelens these tasks run has the `check-ir` feature, as the editor tests' has.)
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir == /* ]] || target_dir=$PWD/$target_dir
step "build: the tests and the tasks' binaries (target/release/xtask, target/release/tracelens)" \
    cargo build --workspace --release --bins --tests
# cargo-nextest, where the machine has it, runs the test binaries side by side (one process per
# test, a test per core); `cargo test` runs them one after the other, and most are too small to
# fill two cores: its step used one core and a tenth for its 3 minutes.
unit_and_integration_tests() {
    if cargo nextest --version >/dev/null 2>&1; then
        cargo nextest run --workspace --release --no-fail-fast --hide-progress-bar
    else
        cargo test --workspace --release
    fi
}
step "unit and integration tests (cargo nextest run, or cargo test without it)" unit_and_integration_tests
export TRACELENS_BIN=${TRACELENS_BIN:-$target_dir/release/tracelens}
xtask=$target_dir/release/xtask
# The venv the golden check made (or is making) is the conformance step's.
while [[ ! -e target/jax-venv.ready ]] && kill -0 "$golden_pid" 2>/dev/null; do sleep 1; done
step "conformance against real JAX (installs jax==0.10.2 into target/jax-venv; the golden tables run beside the build)" \
    "$xtask" conformance --no-golden
step "library shims take every argument flax, optax and equinox take (tests/conformance/shim_signatures.py)" \
    "${TRACELENS_JAX_PYTHON:-$target_dir/jax-venv/bin/python}" tests/conformance/shim_signatures.py tracer-core/shims
if [[ -n $tf_venv_pid ]]; then
    wait "$tf_venv_pid" || echo "note: the background install of $tf_pin failed (target/tf-venv-install.log); the TensorFlow step installs it again"
    tf_venv_pid=
fi
step "conformance against real TensorFlow (installs tensorflow-cpu==2.21.0 into target/tf-venv)" "$xtask" tf-conformance
step "hover coverage: every place JAX had an array in the fixtures, hovered in tracelens lsp (>= 95 %)" "$xtask" hover
# The editor steps run beside the fuzzer: they spend most of their minute and a half waiting
# (for Chromium, code-server, Neovim, the language server's answers): 48 s of CPU in 82 s
# (ci-run60 here), and the fuzzer, at the lowest priority, takes the CPU they leave. It runs a fixed set
# of batches, not for a fixed time: beside the editors, 90 s ran 14 batches instead of 36
# (ci-run59 here), and a set of batches is the same inputs on every machine. Their output is
# shown after the fuzzer's.
if [[ -n $editors_pid ]]; then
    wait "$editors_pid" || echo "note: the background install of the editor tools failed (target/editor-prepare.log); the editor steps install them again"
    editors_pid=
fi
set -m
(
    step "editor tests: tracelens lsp over stdio (pytest-lsp) and in headless Neovim" bash tests/run_editor_tests.sh
    step "VS Code extension in the real workbench (code-server + Chromium; installs them, packages tracelens.vsix)" \
        bash tests/editors/vscode/run.sh
) >target/editor-steps.log 2>&1 &
editor_steps_pid=$!
set +m
# Fails only on a crash that happens again when its input runs alone (a hang on a loaded
# machine that does not is reported and ignored); crashes are written to tests/fuzz/crashes/.
# One child process per core, each on its own batch: the 36 batches that 90 s on CI's two
# cores ran alone (3 minutes on one core before).
step "fuzzer: batches 0-35 of mutated fixtures through check, trace, repro and run (seed 1; beside the editor steps, at the lowest priority)" \
    nice -n 19 "$xtask" fuzz --batches 36 --seed 1 --no-write
golden_check() {
    wait "$golden_pid" || true
    golden_pid=
    cat target/golden-check.log
    [[ $(cat target/golden-check.status 2>/dev/null) == 0 ]]
}
step "golden tables: each generator's --check against real JAX (tests/conformance/gen_*.py, run since the build began)" golden_check
editor_steps() {
    local status=0
    wait "$editor_steps_pid" || status=$?
    editor_steps_pid=
    cat target/editor-steps.log
    return "$status"
}
step "the editor steps, run beside the fuzzer (their output and times follow)" editor_steps
echo "== all tests passed"
