#!/usr/bin/env bash
# Builds the one static binary: a static-pie executable (glibc, +crt-static) with
# SQLite compiled in, that runs on a machine with no SQLite and no other library.
# Output: dist/quayside. Fails if the result has any dynamic dependency.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked --target "$target"
binary="target/$target/release/quayside"

# ldd prints "statically linked" (or "not a dynamic executable") for a static
# binary, and one "lib => path" line per library for a dynamic one.
ldd_output=$(ldd "$binary" 2>&1 || true)
if grep -q '=>' <<<"$ldd_output"; then
    echo "build-static: $binary has dynamic dependencies:" >&2
    echo "$ldd_output" >&2
    exit 1
fi
if command -v readelf >/dev/null 2>&1 && readelf -d "$binary" | grep -q NEEDED; then
    echo "build-static: $binary declares NEEDED libraries" >&2
    readelf -d "$binary" | grep NEEDED >&2
    exit 1
fi

mkdir -p dist
cp "$binary" dist/quayside
echo "build-static: dist/quayside ($(du -h dist/quayside | cut -f1)); ldd: $ldd_output"
