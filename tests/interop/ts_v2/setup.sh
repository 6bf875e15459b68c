#!/usr/bin/env bash
# Install the official TypeScript SDK v2 server and client packages
# (@modelcontextprotocol/server, @modelcontextprotocol/client) and zod, pinned exactly with
# every transitive dependency, cached under $REPO/.cache/ts-v2/ (git-ignored), for the
# interop peers in tests/interop/ts_v2/ (server.cjs, skills_server.cjs, skills_client.cjs).
# Idempotent: does no npm work when the pinned tree is already installed.
#
#   tests/interop/ts_v2/setup.sh           # install if needed; print the paths on stdout
#   tests/interop/ts_v2/setup.sh --quiet   # same, without progress lines on stderr
#   tests/interop/ts_v2/setup.sh --relock  # re-resolve and rewrite tests/interop/ts_v2/package-lock.json
#
# stdout carries only shell assignments (TS_V2_NODE=..., TS_V2_NODE_PATH=..., TS_V2_SERVER=...,
# TS_V2_PEERS=<the folder of the peer scripts>), so `eval "$(tests/interop/ts_v2/setup.sh --quiet)"`
# works. Run a peer as `NODE_PATH=$TS_V2_NODE_PATH $TS_V2_NODE $TS_V2_SERVER [http]`. Only the npm registry is
# used, through npm itself. Node >= 20 (the node on PATH, else the conformance suite's).
set -euo pipefail

PKG=@modelcontextprotocol/server
CLIENT_PKG=@modelcontextprotocol/client  # the same release: its ./ext/skills is the Skills host side
VERSION=2.4.0
ZOD_VERSION=4.6.7  # what the package's zod ^4.2.0 resolved to; the fixture imports zod/v4
MIN_NODE_MAJOR=20

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
CACHE=${TRIMCP_TS_V2_CACHE:-$REPO/.cache/ts-v2}
LOCK=$HERE/package-lock.json

SETUP_NAME=ts-v2-setup
. "$REPO/tests/npm_setup_lib.sh" "$@"
# The physical path: through a symlinked .cache (a git worktree sharing one), npm ci takes
# the install folder for a linked package and refuses the lock ("Missing: sdk-2.4.0@").
CACHE=$(cd -P "$CACHE" && pwd)
PREFIX=$CACHE/sdk-$VERSION
PKG_DIR=$PREFIX/node_modules/$PKG

use_node_at_least "$MIN_NODE_MAJOR"

write_manifest() {
    mkdir -p "$PREFIX"
    printf '{\n  "name": "trimcp-ts-v2",\n  "private": true,\n  "dependencies": {\n    "%s": "%s",\n    "%s": "%s",\n    "zod": "%s"\n  }\n}\n' \
        "$CLIENT_PKG" "$VERSION" "$PKG" "$VERSION" "$ZOD_VERSION" >"$PREFIX/package.json"
}
installed_ok() {
    [ -f "$PKG_DIR/package.json" ] && [ -d "$PREFIX/node_modules/zod" ] &&
        [ -f "$PREFIX/node_modules/$CLIENT_PKG/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        locked_ok "$PREFIX"
}
install_locked "$PREFIX" "$PKG@$VERSION" installed_ok write_manifest

echo "TS_V2_NODE=$NODE_BIN"
echo "TS_V2_NODE_PATH=$PREFIX/node_modules"
echo "TS_V2_SERVER=$HERE/server.cjs"
echo "TS_V2_PEERS=$HERE"
