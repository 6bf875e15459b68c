#!/usr/bin/env bash
# Install the peers the replica tests start themselves: redis-server and nginx (Debian
# packages). Idempotent: does nothing when both are on PATH (or in /usr/sbin).
#
#   tests/scale/setup.sh           # install what is missing; print the paths on stdout
#   tests/scale/setup.sh --quiet   # same, without progress lines on stderr
#
# stdout carries only shell assignments (SCALE_REDIS=..., SCALE_NGINX=...), so
# `eval "$(tests/scale/setup.sh --quiet)"` works. Installing needs root (CI runs as root);
# without it the script says which packages to install and fails.
set -euo pipefail
quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1
log() { [ "$quiet" = 1 ] || echo "scale-setup: $*" >&2; }
die() { echo "scale-setup: $*" >&2; exit 1; }
find_tool() { PATH="$PATH:/usr/sbin:/sbin" command -v "$1" 2>/dev/null || true; }

missing=()
[ -n "$(find_tool redis-server)" ] || missing+=(redis-server)
[ -n "$(find_tool nginx)" ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run 'sudo apt-get install ${missing[*]}'"
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    exec 9>/tmp/trimcp-scale-setup.lock
    command -v flock >/dev/null && flock 9
    log "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || die "apt-get update failed"
    # policy-rc.d 101: the packages must not start system-wide services; tests start their own.
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || {
        [ "$own_policy" = 1 ] && rm -f "$policy"
        die "apt-get install ${missing[*]} failed"
    }
    [ "$own_policy" = 1 ] && rm -f "$policy"
fi
redis=$(find_tool redis-server)
nginx=$(find_tool nginx)
[ -n "$redis" ] || die "redis-server is still missing after install"
[ -n "$nginx" ] || die "nginx is still missing after install"
log "redis-server: $redis; nginx: $nginx"
echo "SCALE_REDIS=$redis"
echo "SCALE_NGINX=$nginx"
