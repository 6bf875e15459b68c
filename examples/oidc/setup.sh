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

use_node_at_least 22

installed_ok() {
    [ -f "$PKG_DIR/package.json" ] &&
        [ "$("$NODE_BIN" -p "require(process.argv[1]).version" "$PKG_DIR/package.json" 2>/dev/null)" = "$VERSION" ] &&
        locked_ok "$PREFIX"
}
manifest() { write_pkg_json "$PREFIX" trimcp-oidc-provider "$PKG" "$VERSION"; }
install_locked "$PREFIX" "$PKG@$VERSION" installed_ok manifest "$PKG@$VERSION"

echo "OIDC_NODE=$NODE_BIN"
echo "OIDC_MODULES=$PREFIX/node_modules"
