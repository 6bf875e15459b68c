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

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NODE_BIN=$(command -v node || true)
if [ -z "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt "$MIN_NODE_MAJOR" ]; then
    log "node on PATH is missing or older than v$MIN_NODE_MAJOR; reusing the conformance suite's Node"
    assignments=$("$REPO/tests/conformance/setup.sh" --quiet) || die "tests/conformance/setup.sh failed"
    NODE_BIN=$(printf '%s\n' "$assignments" | sed -n 's/^CONFORMANCE_NODE=//p')
    [ -x "$NODE_BIN" ] || die "tests/conformance/setup.sh printed no usable CONFORMANCE_NODE"
fi
NPM_PATH="$(dirname "$NODE_BIN"):$PATH"

write_manifest() {
    mkdir -p "$PREFIX"
    printf '{\n  "name": "trimcp-ts-v2",\n  "private": true,\n  "dependencies": {\n    "%s": "%s",\n    "%s": "%s",\n    "zod": "%s"\n  }\n}\n' \
        "$CLIENT_PKG" "$VERSION" "$PKG" "$VERSION" "$ZOD_VERSION" >"$PREFIX/package.json"
}
installed_ok() {
    [ -f "$PKG_DIR/package.json" ] && [ -d "$PREFIX/node_modules/zod" ] &&
        [ -f "$PREFIX/node_modules/$CLIENT_PKG/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        { [ ! -f "$LOCK" ] || [ "$(cat "$PREFIX/.lock-sha" 2>/dev/null)" = "$(lock_sha)" ]; }
}
if [ "$relock" = 1 ]; then
    log "re-resolving $PKG@$VERSION and rewriting $LOCK"
    rm -rf "$PREFIX"
    write_manifest
    PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact || die "npm install failed"
    cp "$PREFIX/package-lock.json" "$LOCK"
    lock_sha >"$PREFIX/.lock-sha"
elif installed_ok; then
    log "$PKG@$VERSION already installed"
else
    log "installing $PKG@$VERSION into $PREFIX"
    rm -rf "$PREFIX"
    write_manifest
    if [ -f "$LOCK" ]; then
        cp "$LOCK" "$PREFIX/package-lock.json"
        PATH=$NPM_PATH npm_quiet ci --prefix "$PREFIX" ||
            die "npm ci of $PKG@$VERSION failed (lock out of date? run $0 --relock)"
        lock_sha >"$PREFIX/.lock-sha"
    else
        PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact || die "npm install failed"
    fi
    installed_ok || die "$PKG_DIR missing or not $VERSION after install"
fi

echo "TS_V2_NODE=$NODE_BIN"
echo "TS_V2_NODE_PATH=$PREFIX/node_modules"
echo "TS_V2_SERVER=$HERE/server.cjs"
echo "TS_V2_PEERS=$HERE"
