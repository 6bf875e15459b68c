#!/usr/bin/env bash
# Install oidc-provider (an OpenID Certified authorization server for Node), pinned exactly
# with every transitive dependency, cached under $REPO/.cache/oidc-provider/ (git-ignored).
# examples/oidc/provider.mjs runs it on 127.0.0.1: the authorization server of the loopback
# recipe in docs/authorization.md and of the authorization tests. Idempotent.
#
#   examples/oidc/setup.sh           # install if needed; print the paths on stdout
#   examples/oidc/setup.sh --quiet   # same, without progress lines on stderr
#   examples/oidc/setup.sh --relock  # re-resolve and rewrite examples/oidc/package-lock.json
#
# stdout carries only shell assignments (OIDC_NODE=..., OIDC_MODULES=...).
# Node: oidc-provider 9 supports Node 22 LTS and later (it warns on 20); the node on PATH is
# used when it is that recent, else the Node 22 that tests/conformance/setup.sh installs.
set -euo pipefail

PKG=oidc-provider
VERSION=9.13.3

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${TRIMCP_OIDC_CACHE:-$REPO/.cache/oidc-provider}
PREFIX=$CACHE/oidc-provider-$VERSION
PKG_DIR=$PREFIX/node_modules/$PKG
LOCK=$HERE/package-lock.json

SETUP_NAME=oidc-provider-setup
. "$REPO/tests/npm_setup_lib.sh" "$@"

node_recent() { "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>=22?0:1)' 2>/dev/null; }
NODE_BIN=$(command -v node || true)
if [ -z "$NODE_BIN" ] || ! node_recent "$NODE_BIN"; then
    log "node on PATH is missing or older than v22; reusing the conformance suite's Node"
    assignments=$("$REPO/tests/conformance/setup.sh" --quiet) || die "tests/conformance/setup.sh failed"
    NODE_BIN=$(printf '%s\n' "$assignments" | sed -n 's/^CONFORMANCE_NODE=//p')
    [ -x "$NODE_BIN" ] || die "tests/conformance/setup.sh printed no usable CONFORMANCE_NODE"
fi
NPM_PATH="$(dirname "$NODE_BIN"):$PATH"

installed_ok() {
    [ -f "$PKG_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        { [ ! -f "$LOCK" ] || [ "$(cat "$PREFIX/.lock-sha" 2>/dev/null)" = "$(lock_sha)" ]; }
}
if [ "$relock" = 1 ]; then
    log "re-resolving $PKG@$VERSION and rewriting $LOCK"
    rm -rf "$PREFIX"
    write_pkg_json "$PREFIX" trimcp-oidc-provider "$PKG" "$VERSION"
    PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact "$PKG@$VERSION" ||
        die "npm install $PKG@$VERSION failed"
    cp "$PREFIX/package-lock.json" "$LOCK"
    lock_sha >"$PREFIX/.lock-sha"
elif installed_ok; then
    log "$PKG@$VERSION already installed"
else
    log "installing $PKG@$VERSION into $PREFIX"
    rm -rf "$PREFIX"
    write_pkg_json "$PREFIX" trimcp-oidc-provider "$PKG" "$VERSION"
    if [ -f "$LOCK" ]; then
        cp "$LOCK" "$PREFIX/package-lock.json"
        PATH=$NPM_PATH npm_quiet ci --prefix "$PREFIX" ||
            die "npm ci of $PKG@$VERSION failed (lock out of date? run $0 --relock)"
        lock_sha >"$PREFIX/.lock-sha"
    else
        PATH=$NPM_PATH npm_quiet install --prefix "$PREFIX" --save-exact "$PKG@$VERSION" ||
            die "npm install $PKG@$VERSION failed"
    fi
    installed_ok || die "$PKG_DIR missing or not $VERSION after install"
fi

echo "OIDC_NODE=$NODE_BIN"
echo "OIDC_MODULES=$PREFIX/node_modules"
