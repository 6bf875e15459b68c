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
# TS_EVERYTHING_PRELOAD=...), so `eval "$(tests/interop/ts_everything/setup.sh --quiet)"` works.
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
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NODE_BIN=$(command -v node || true)
if [ -z "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt "$MIN_NODE_MAJOR" ]; then
    log "node on PATH is missing or older than v$MIN_NODE_MAJOR; reusing the conformance suite's Node"
    assignments=$("$REPO/tests/conformance/setup.sh" --quiet) ||
        die "tests/conformance/setup.sh failed"
    NODE_BIN=$(printf '%s\n' "$assignments" | sed -n 's/^CONFORMANCE_NODE=//p')
    [ -x "$NODE_BIN" ] || die "tests/conformance/setup.sh printed no usable CONFORMANCE_NODE"
fi
log "node $("$NODE_BIN" --version) at $NODE_BIN"
# npm runs under that node, so engine checks see the runtime we use.
NPM_PATH="$(dirname "$NODE_BIN"):$PATH"

# --- (b) the server, pinned exactly ---------------------------------------------------------
installed_ok() {
    [ -f "$ENTRY" ] && [ -f "$PKG_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        { [ ! -f "$LOCK" ] || [ "$(cat "$PREFIX/.lock-sha" 2>/dev/null)" = "$(lock_sha)" ]; }
}
if [ "$relock" = 1 ]; then
    log "re-resolving $PKG@$VERSION and rewriting $LOCK"
    rm -rf "$PREFIX"
    write_pkg_json "$PREFIX" trimcp-ts-everything "$PKG" "$VERSION"
    PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact "$PKG@$VERSION" ||
        die "npm install $PKG@$VERSION failed"
    cp "$PREFIX/package-lock.json" "$LOCK"
    lock_sha >"$PREFIX/.lock-sha"
elif installed_ok; then
    log "$PKG@$VERSION already installed"
else
    log "installing $PKG@$VERSION into $PREFIX"
    rm -rf "$PREFIX"
    write_pkg_json "$PREFIX" trimcp-ts-everything "$PKG" "$VERSION"
    if [ -f "$LOCK" ]; then
        # Reproducible: exactly the tree recorded in package-lock.json.
        cp "$LOCK" "$PREFIX/package-lock.json"
        PATH=$NPM_PATH npm_quiet ci --prefix "$PREFIX" ||
            die "npm ci of $PKG@$VERSION failed (lock out of date? run $0 --relock)"
        lock_sha >"$PREFIX/.lock-sha"
    else
        PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact "$PKG@$VERSION" ||
            die "npm install $PKG@$VERSION failed"
    fi
    installed_ok || die "$ENTRY missing or not $VERSION after install"
fi

echo "TS_EVERYTHING_NODE=$NODE_BIN"
echo "TS_EVERYTHING_JS=$ENTRY"
echo "TS_EVERYTHING_PRELOAD=$PRELOAD"
