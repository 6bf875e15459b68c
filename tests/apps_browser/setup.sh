#!/usr/bin/env bash
# Prepare the MCP Apps browser test (tests/apps_browser/test_browser_host.py): the official
# @modelcontextprotocol/ext-apps package with the TypeScript SDK's client, pinned exactly with
# every transitive dependency, bundled with esbuild into one script for the host page; and
# Chromium (the Debian package), installed with apt-get when missing. Cached under
# $REPO/.cache/apps-browser/ (git-ignored). Idempotent: no npm work when the pinned tree and
# the bundle of the current host.js are there, no apt work when chromium is on PATH.
#
#   tests/apps_browser/setup.sh           # install if needed; print the paths on stdout
#   tests/apps_browser/setup.sh --quiet   # same, without progress lines on stderr
#   tests/apps_browser/setup.sh --relock  # re-resolve and rewrite tests/apps_browser/package-lock.json
#
# stdout carries only shell assignments (APPS_BROWSER_CHROMIUM=..., APPS_BROWSER_SITE=...),
# so `eval "$(tests/apps_browser/setup.sh --quiet)"` works. APPS_BROWSER_SITE is a folder
# holding host.html and host.bundle.js. Only the npm registry (through npm) and Debian's
# archive (through apt-get, as root) are used. Node >= 20 (the node on PATH, else the
# conformance suite's).
set -euo pipefail

EXT_APPS_VERSION=2.0.4
CLIENT_VERSION=2.4.0   # @modelcontextprotocol/client: ext-apps' ^2.0.0 peer
ZOD_VERSION=4.6.7      # ext-apps' zod ^4.2.0 peer, as in tests/interop/ts_v2
ESBUILD_VERSION=0.28.2
MIN_NODE_MAJOR=20

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${TRIMCP_APPS_BROWSER_CACHE:-$REPO/.cache/apps-browser}
# npm records paths relative to the real folder: through a symlinked .cache (a git worktree
# sharing one) the lock it writes, and the one it checks, would name the link's target.
mkdir -p "$CACHE"
CACHE=$(cd -P "$CACHE" && pwd)
PREFIX=$CACHE/ext-apps-$EXT_APPS_VERSION
PKG_DIR=$PREFIX/node_modules/@modelcontextprotocol/ext-apps
SITE=$PREFIX/site
LOCK=$HERE/package-lock.json

SETUP_NAME=apps-browser-setup
. "$REPO/tests/npm_setup_lib.sh" "$@"

# --- (a) Chromium, the Debian package ---------------------------------------------------------
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
    [ "$(id -u)" = 0 ] || die "chromium is missing: run 'sudo apt-get install chromium'"
    command -v apt-get >/dev/null || die "chromium is missing and there is no apt-get to install it"
    log "installing chromium (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || die "apt-get update failed"
    apt-get install -y -qq chromium >&2 || die "apt-get install chromium failed"
    CHROMIUM=$(command -v chromium || true)
    [ -n "$CHROMIUM" ] || die "chromium is still not on PATH after apt-get install chromium"
fi
log "$("$CHROMIUM" --version 2>/dev/null || echo chromium) at $CHROMIUM"

# --- (b) a Node for npm and esbuild ---------------------------------------------------------
use_node_at_least "$MIN_NODE_MAJOR"

# --- (c) the packages, pinned exactly ---------------------------------------------------------
write_package_json() {
    mkdir -p "$PREFIX"
    cat >"$PREFIX/package.json" <<JSON
{
  "name": "trimcp-apps-browser",
  "private": true,
  "dependencies": {
    "@modelcontextprotocol/client": "$CLIENT_VERSION",
    "@modelcontextprotocol/ext-apps": "$EXT_APPS_VERSION",
    "esbuild": "$ESBUILD_VERSION",
    "zod": "$ZOD_VERSION"
  }
}
JSON
}
installed_ok() {
    [ -f "$PKG_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$EXT_APPS_VERSION" ] &&
        locked_ok "$PREFIX"
}
install_locked "$PREFIX" "@modelcontextprotocol/ext-apps@$EXT_APPS_VERSION" installed_ok \
    write_package_json

# --- (d) the host page: host.js bundled for the browser -------------------------------------------
# Rebuilt when host.js changes (its digest is kept next to the bundle). esbuild's binary
# comes from its platform package (@esbuild/linux-x64), so its install script is not needed.
source_sha=$(cat "$HERE/host.js" "$HERE/host.html" | sha256sum | cut -c1-16)
if [ "$(cat "$SITE/.source-sha" 2>/dev/null)" != "$source_sha" ] || [ ! -f "$SITE/host.bundle.js" ]; then
    log "bundling host.js with esbuild $ESBUILD_VERSION"
    mkdir -p "$SITE"
    (cd "$PREFIX" && "$NODE_BIN" -e '
        require("esbuild").build({
            entryPoints: [process.argv[1]], outfile: process.argv[2], bundle: true,
            nodePaths: [process.argv[3]], format: "iife", platform: "browser",
            target: "es2022", logLevel: "warning",
        }).catch(() => process.exit(1));' "$HERE/host.js" "$SITE/host.bundle.js" "$PREFIX/node_modules") ||
        die "esbuild could not bundle $HERE/host.js"
    cp "$HERE/host.html" "$SITE/host.html"
    echo "$source_sha" >"$SITE/.source-sha"
fi

echo "APPS_BROWSER_CHROMIUM=$CHROMIUM"
echo "APPS_BROWSER_SITE=$SITE"
