#!/usr/bin/env bash
# The VS Code extension end to end in the real workbench (see shared/reference/editor-e2e.md):
# installs what it needs (Debian's chromium, ripgrep and libkrb5-dev; code-server 4.100.3 and
# playwright-core from npm), packages editors/vscode into tracelens.vsix with the release
# binary, installs it into a fresh code-server profile, opens a copy of the fixture workspace
# and runs e2e.mjs. Screenshots and logs go to target/editor-artifacts/vscode/.
#
# The npm tools are kept in a cache folder outside the work tree (TRACELENS_E2E_CACHE, default
# ~/.cache/tracelens-e2e) so that a fresh clone on the same machine does not install them again.
#
# `run.sh --prepare` only installs (the system packages, the tools, the extension's npm
# packages) and stops: tests/run_all.sh runs it in the background while it builds.
set -euo pipefail
prepare=""
[ "${1:-}" = "--prepare" ] && prepare=1
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
start=$(date +%s)
say() { echo "[vscode-e2e $(($(date +%s) - start))s] $*"; }

CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_VERSION=1.65.1
cache="${TRACELENS_E2E_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tracelens-e2e}"
tools="$cache/vscode-tools-cs$CODE_SERVER_VERSION-pw$PLAYWRIGHT_VERSION"
run="$root/target/editor-e2e/vscode"
artifacts="$root/target/editor-artifacts/vscode"

# ---- system packages ----------------------------------------------------------------------------
if ! command -v chromium >/dev/null || ! command -v rg >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  say "apt-get install chromium ripgrep libkrb5-dev"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium ripgrep libkrb5-dev >/dev/null
fi

if [ -n "$prepare" ]; then
  say "npm ci for the extension (editors/vscode/package.sh --npm-only)"
  bash "$root/editors/vscode/package.sh" --npm-only
else
  rm -rf "$run" "$artifacts"
  mkdir -p "$run" "$artifacts"
fi

# ---- the extension (packaged while the tools install) -------------------------------------------
package_pid=""
if [ -z "$prepare" ]; then
  say "package the extension (editors/vscode/package.sh)"
  bash "$root/editors/vscode/package.sh" >"$artifacts/package.log" 2>&1 &
  package_pid=$!
fi
cs_pid=""
profile="$run/profile"
cleanup() {
  for pid in $package_pid $cs_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # The extension host's logs, with the tracelens output channel, for whoever reads the artifacts.
  if [ -d "$profile/user/logs" ]; then
    cp -r "$profile/user/logs" "$artifacts/code-logs" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# ---- code-server and playwright-core ------------------------------------------------------------
if [ ! -x "$tools/node_modules/.bin/code-server" ] || [ ! -f "$tools/.complete" ]; then
  say "npm install code-server@$CODE_SERVER_VERSION playwright-core@$PLAYWRIGHT_VERSION into $tools"
  rm -rf "$tools"
  mkdir -p "$tools/tmp"
  # code-server's postinstall fetches ripgrep from GitHub unless this cache has it: seed it with
  # Debian's rg.
  rgcache="$tools/tmp/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rgcache"
  tar czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  echo '{"name": "tracelens-vscode-e2e-tools", "private": true}' >"$tools/package.json"
  # npm 11 skips dependencies' install scripts unless allowed; code-server needs its own and
  # those of the VS Code it bundles (native modules), run by a nested npm install. Its
  # postinstall refuses to run as root without unsafe-perm.
  (cd "$tools" && TMPDIR="$tools/tmp" npm_config_yes=true npm_config_unsafe_perm=true npm_config_dangerously_allow_all_scripts=true \
    npm install --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" >"$tools/install.log" 2>&1) || {
    tail -40 "$tools/install.log"
    exit 1
  }
  touch "$tools/.complete"
fi
code_server="$tools/node_modules/.bin/code-server"
if [ -n "$prepare" ]; then
  say "prepared"
  exit 0
fi

if ! wait "$package_pid"; then
  package_pid=""
  tail -40 "$artifacts/package.log"
  exit 1
fi
package_pid=""
vsix="$root/editors/vscode/tracelens.vsix"

mkdir -p "$profile/user/User" "$profile/ext"
touch "$profile/config.yaml"
cat >"$profile/user/User/settings.json" <<'EOF'
{
  "git.openRepositoryInParentFolders": "never",
  "workbench.startupEditor": "none",
  "workbench.colorTheme": "Default Dark Modern",
  "workbench.tips.enabled": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "editor.minimap.enabled": false,
  "window.commandCenter": false
}
EOF
cs_args=(--config "$profile/config.yaml" --user-data-dir "$profile/user" --extensions-dir "$profile/ext")
say "install tracelens.vsix"
"$code_server" "${cs_args[@]}" --install-extension "$vsix" >"$artifacts/install-extension.log" 2>&1

cp -r "$here/workspace" "$run/workspace"
# Enough files for the workspace scan to take a moment, so that its progress shows.
mkdir -p "$run/workspace/scan"
for i in $(seq 400); do cp "$here/scan_file.py" "$run/workspace/scan/clean_$i.py"; done

# ---- code-server --------------------------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "start code-server on 127.0.0.1:$port"
"$code_server" "${cs_args[@]}" --bind-addr "127.0.0.1:$port" --auth none --disable-telemetry \
  --disable-update-check --disable-workspace-trust "$run/workspace" >"$artifacts/code-server.log" 2>&1 &
cs_pid=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$cs_pid" 2>/dev/null || { cat "$artifacts/code-server.log"; exit 1; }
  sleep 0.2
done

say "run e2e.mjs"
CODE_SERVER_URL="http://127.0.0.1:$port" WORKSPACE="$run/workspace" ARTIFACTS="$artifacts" TOOLS="$tools" \
  MACHINE_SETTINGS="$profile/user/Machine/settings.json" CHROMIUM="$(command -v chromium)" timeout 240 node "$here/e2e.mjs"
say "done"
