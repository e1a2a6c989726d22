#!/usr/bin/env bash
# End-to-end tests of the browser console on a clean Debian machine: installs
# Chromium (Debian's package) if /usr/bin/chromium is missing, installs the
# pinned playwright-core with `npm ci`, builds the debug binary, and runs the
# tests with node's test runner. Screenshots go to target/e2e-screenshots/.
#
# Needs node >= 20 and npm. QUAYSIDE_BIN overrides the binary under test
# (default: the debug build of this checkout, under $CARGO_TARGET_DIR if set).
#
# `run.sh --repeat N` runs the whole suite N times in a row and stops at the
# first failing run: a flaky test is a bug, and this is how one is found.
set -euo pipefail

repeat=1
while [ $# -gt 0 ]; do
    case "$1" in
        --repeat)
            repeat="${2:?--repeat needs a count}"
            shift 2
            ;;
        --repeat=*)
            repeat="${1#--repeat=}"
            shift
            ;;
        *)
            echo "run.sh: unknown argument $1 (usage: run.sh [--repeat N])" >&2
            exit 2
            ;;
    esac
done
case "$repeat" in
    '' | *[!0-9]* | 0)
        echo "run.sh: --repeat takes a whole number of runs, 1 or more (got $repeat)" >&2
        exit 2
        ;;
esac
cd "$(dirname "$0")"
root="$(cd ../.. && pwd)"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "run.sh: need root (or sudo) to run: $*" >&2
        exit 1
    fi
}

if [ ! -x /usr/bin/chromium ]; then
    echo "== installing chromium (Debian package)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        chromium fonts-dejavu-core
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "run.sh: node (>= 20) and npm are needed" >&2
    exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
    echo "run.sh: node >= 20 is needed (found $(node --version))" >&2
    exit 1
fi

echo "== npm ci (tests/e2e)"
npm ci --no-audit --no-fund

echo "== cargo build"
(cd "$root" && cargo build --locked)

if [ -z "${QUAYSIDE_BIN:-}" ]; then
    target="${CARGO_TARGET_DIR:-target}"
    case "$target" in
        /*) ;;
        *) target="$root/$target" ;;
    esac
    export QUAYSIDE_BIN="$target/debug/quayside"
fi

for run in $(seq 1 "$repeat"); do
    echo "== node --test (console end-to-end, $QUAYSIDE_BIN): run $run of $repeat"
    if ! node --test --test-concurrency=1 format.test.js events.test.js console.test.js record.test.js invite.test.js content.test.js; then
        echo "== run $run of $repeat failed, after $((run - 1)) green runs in a row" >&2
        exit 1
    fi
done
echo "== $repeat of $repeat runs passed in a row"
