# Shared by the npm-installing test setup scripts (tests/conformance/setup.sh,
# tests/interop/ts_everything/setup.sh). Source it after setting SETUP_NAME (for messages),
# CACHE (the install folder) and LOCK (the lock file kept in the repo), passing the
# script's arguments:  . "$REPO/tests/npm_setup_lib.sh" "$@"
#
# It parses --quiet / --relock (into $quiet / $relock), defines log, die, npm_quiet,
# write_pkg_json and lock_sha, checks npm is there, and takes the cache's install lock
# (one installer at a time: parallel test runs on a cold cache would race).

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
