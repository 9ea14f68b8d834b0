#!/usr/bin/env bash
# Builds the VS Code extension and packages it, with the linux-x64 server binary inside, as
# editors/vscode/tracelens.vsix (path printed last).
#   bash editors/vscode/package.sh            # cargo build --release, npm ci, bundle, vsce package
#   TRACELENS_BIN=/path/to/tracelens bash editors/vscode/package.sh   # ship that binary instead
#   TRACELENS_NO_BIN=1 bash editors/vscode/package.sh                  # ship no binary (PATH / setting)
#   bash editors/vscode/package.sh --npm-only   # only npm ci (when the lock file changed), no package
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"

# npm ci starts from an empty node_modules every time: skip it while the lock file is the one
# node_modules was installed from.
npm_ci() {
  local lock_sum
  lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [ "$(cat node_modules/.tracelens-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
    echo "== npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_sum" >node_modules/.tracelens-lock-sha256
  fi
}
if [ "${1:-}" = "--npm-only" ]; then
  npm_ci
  exit 0
fi

rm -rf server dist tracelens.vsix
mkdir -p server
if [ -z "${TRACELENS_NO_BIN:-}" ]; then
  bin="${TRACELENS_BIN:-}"
  if [ -z "$bin" ]; then
    echo "== cargo build --release -p tracelens"
    (cd "$root" && cargo build --release -p tracelens --bin tracelens)
    bin="$root/target/release/tracelens"
  fi
  if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
    # Stripped of its symbol table: the shipped copy needs none.
    cp "$bin" server/tracelens
    strip server/tracelens 2>/dev/null || true
    chmod 755 server/tracelens
  else
    echo "not on linux-x64: the .vsix ships no server binary" >&2
  fi
fi

npm_ci
echo "== typecheck and bundle"
npx --no-install tsc --noEmit -p .
node esbuild.mjs
echo "== vsce package"
# Everything the extension needs is bundled in dist/extension.js: no node_modules in the .vsix.
# The README's image link is relative (images/hover.png). A marketplace page needs it absolute:
# VSCE_BASE_IMAGES_URL (where editors/vscode/ is served, e.g. a repository's raw URL) makes it so.
if [ -n "${VSCE_BASE_IMAGES_URL:-}" ]; then
  links=(--baseImagesUrl "$VSCE_BASE_IMAGES_URL")
else
  links=(--no-rewrite-relative-links)
fi
npx --no-install vsce package --allow-missing-repository --skip-license --no-dependencies \
  "${links[@]}" -o tracelens.vsix
echo "$here/tracelens.vsix"
