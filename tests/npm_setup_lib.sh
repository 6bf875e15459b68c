# Shared by the npm-installing setup scripts (tests/conformance, tests/interop/ts_everything,
# tests/interop/ts_v2, tests/apps_browser, examples/oidc). Source it after setting
# SETUP_NAME (for messages), REPO, CACHE (the install folder) and LOCK (the lock file kept
# in the repo), passing the script's arguments:  . "$REPO/tests/npm_setup_lib.sh" "$@"
#
# It parses --quiet / --relock (into $quiet / $relock), defines log, die, npm_quiet,
# write_pkg_json, lock_sha, locked_ok, use_node_at_least and install_locked, checks npm is
# there, and takes the cache's install lock (one installer at a time: parallel test runs
# on a cold cache would race).

quiet=0 relock=0
for arg in "$@"; do
    case "$arg" in
        --quiet) quiet=1 ;;
        --relock) relock=1 ;;
        *) echo "usage: $0 [--quiet] [--relock]" >&2; exit 2 ;;
    esac
done
log() { [ "$quiet" = 1 ] || echo "$SETUP_NAME: $*" >&2; }
die() { echo "$SETUP_NAME: $*" >&2; exit 1; }

command -v npm >/dev/null || die "npm not found on PATH"

mkdir -p "$CACHE"
if command -v flock >/dev/null; then
    exec 9>"$CACHE/.setup.lock"
    flock 9
fi

# npm chatter goes to stderr so stdout stays machine-readable. The grep drops a warning
# about this machine's ~/.npmrc that has nothing to do with us.
npm_quiet() {
    npm "$@" --no-audit --no-fund --no-progress --loglevel=error 2>&1 |
        { grep -v 'Unknown user config "nodedir"\|will stop working in the next major' || true; } >&2
    return "${PIPESTATUS[0]}"
}

write_pkg_json() { # dir name dep version
    mkdir -p "$1"
    printf '{\n  "name": "%s",\n  "private": true,\n  "dependencies": {\n    "%s": "%s"\n  }\n}\n' \
        "$2" "$3" "$4" >"$1/package.json"
}

lock_sha() { sha256sum "$LOCK" | cut -c1-16; }

# Whether the tree in folder $1 was installed from the lock file as it is now (or there is
# no lock file to match).
locked_ok() { [ ! -f "$LOCK" ] || [ "$(cat "$1/.lock-sha" 2>/dev/null)" = "$(lock_sha)" ]; }

# NODE_BIN: the node on PATH when it is v$1 or newer, else the Node 22 that
# tests/conformance/setup.sh installs; NPM_PATH: a PATH whose npm runs under it (so engine
# checks and install scripts see the runtime the tests use).
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
use_node_at_least() {
    NODE_BIN=$(command -v node || true)
    if [ -z "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt "$1" ]; then
        log "node on PATH is missing or older than v$1; reusing the conformance suite's Node"
        local assignments
        assignments=$("$REPO/tests/conformance/setup.sh" --quiet) ||
            die "tests/conformance/setup.sh failed"
        NODE_BIN=$(printf '%s\n' "$assignments" | sed -n 's/^CONFORMANCE_NODE=//p')
        [ -x "$NODE_BIN" ] || die "tests/conformance/setup.sh printed no usable CONFORMANCE_NODE"
    fi
    NPM_PATH="$(dirname "$NODE_BIN"):$PATH"
}

# install_locked PREFIX WHAT READY WRITE [SPEC]: the packages of PREFIX/package.json exactly
# as $LOCK records them (npm ci), unless READY (a command) says they already are; with
# --relock, re-resolved and $LOCK rewritten; without a lock file, a plain install. WRITE (a
# command) writes PREFIX/package.json; SPEC is what `npm install` adds besides (e.g.
# pkg@version, saved exactly); WHAT names it all in messages. npm runs with $NPM_PATH
# (default: PATH).
install_locked() {
    local prefix=$1 what=$2 ready=$3 write=$4 spec=${5:-}
    local path=${NPM_PATH:-$PATH}
    local add=()
    [ -z "$spec" ] || add=(--save-exact "$spec")
    if [ "$relock" = 1 ]; then
        log "re-resolving $what and rewriting $LOCK"
        rm -rf "$prefix"
        "$write"
        PATH=$path npm_quiet install --prefix "$prefix" "${add[@]}" || die "npm install of $what failed"
        cp "$prefix/package-lock.json" "$LOCK"
        lock_sha >"$prefix/.lock-sha"
    elif "$ready"; then
        log "$what already installed"
    else
        log "installing $what into $prefix"
        rm -rf "$prefix"
        "$write"
        if [ -f "$LOCK" ]; then
            # Reproducible: exactly the tree the lock file records.
            cp "$LOCK" "$prefix/package-lock.json"
            PATH=$path npm_quiet ci --prefix "$prefix" ||
                die "npm ci of $what failed (lock out of date? run $0 --relock)"
            lock_sha >"$prefix/.lock-sha"
        else
            PATH=$path npm_quiet install --prefix "$prefix" "${add[@]}" || die "npm install of $what failed"
        fi
        "$ready" || die "$what is not complete in $prefix after npm ran"
    fi
}
