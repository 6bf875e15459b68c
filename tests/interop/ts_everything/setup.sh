#!/usr/bin/env bash
# Install the official TypeScript "everything" MCP server (@modelcontextprotocol/server-everything),
# pinned exactly with every transitive dependency, cached under $REPO/.cache/ts-everything/
# (git-ignored). Idempotent: does no npm work when the pinned tree is already installed.
#
#   tests/interop/ts_everything/setup.sh           # install if needed; print the paths on stdout
#   tests/interop/ts_everything/setup.sh --quiet   # same, without progress lines on stderr
#   tests/interop/ts_everything/setup.sh --relock  # re-resolve the dependencies and rewrite
#                                                  # tests/interop/ts_everything/package-lock.json
#
# stdout carries only shell assignments (TS_EVERYTHING_NODE=..., TS_EVERYTHING_JS=...,
# TS_EVERYTHING_PRELOAD=..., TS_EVERYTHING_NODE_MODULES=... where the locked tree, the SDK v1
# @modelcontextprotocol/sdk among it, is installed: benchmarks/servers/ts_v1_server.cjs
# loads it from there), so `eval "$(tests/interop/ts_everything/setup.sh --quiet)"` works.
# Only the npm registry is used, through npm itself.
#
# Node: the package declares no engines; the highest any locked dependency asks for is
# Node >= 20 (@hono/node-server, pulled in by @modelcontextprotocol/sdk), so the node on PATH
# is used when it is that recent. Otherwise the Node 22 that tests/conformance/setup.sh
# installs is reused rather than a second copy.
set -euo pipefail

PKG=@modelcontextprotocol/server-everything
VERSION=2026.8.31
MIN_NODE_MAJOR=20  # the highest engines.node in package-lock.json

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
CACHE=${TRIMCP_TS_EVERYTHING_CACHE:-$REPO/.cache/ts-everything}
PREFIX=$CACHE/server-everything-$VERSION
PKG_DIR=$PREFIX/node_modules/$PKG
ENTRY=$PKG_DIR/dist/index.js
# Exact versions of every transitive dependency (the package's own package.json uses caret
# ranges, e.g. for @modelcontextprotocol/sdk, which implements every protocol detail).
LOCK=$HERE/package-lock.json
PRELOAD=$REPO/tests/conformance/localhost-preload.cjs

SETUP_NAME=ts-everything-setup
. "$REPO/tests/npm_setup_lib.sh" "$@"
[ -f "$PRELOAD" ] || die "$PRELOAD is missing"

# --- (a) a Node the server runs on ---------------------------------------------------------
use_node_at_least "$MIN_NODE_MAJOR"
log "node $("$NODE_BIN" --version) at $NODE_BIN"

# --- (b) the server, pinned exactly ---------------------------------------------------------
installed_ok() {
    [ -f "$ENTRY" ] && [ -f "$PKG_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        locked_ok "$PREFIX"
}
manifest() { write_pkg_json "$PREFIX" trimcp-ts-everything "$PKG" "$VERSION"; }
install_locked "$PREFIX" "$PKG@$VERSION" installed_ok manifest "$PKG@$VERSION"

echo "TS_EVERYTHING_NODE=$NODE_BIN"
echo "TS_EVERYTHING_JS=$ENTRY"
echo "TS_EVERYTHING_PRELOAD=$PRELOAD"
echo "TS_EVERYTHING_NODE_MODULES=$PREFIX/node_modules"
