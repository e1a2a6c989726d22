#!/usr/bin/env bash
# Smoke test of a built binary: serve a fresh file, log in, PUT a port, GET it back.
# Usage: packaging/smoke-test.sh [BINARY]   (default dist/quayside)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-dist/quayside}
command -v curl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }

work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

QUAYSIDE_ADMIN_PASSWORD=smoke-test-password "$binary" serve --data "$work/smoke.db" \
    --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
server_pid=$!
for _ in $(seq 100); do
    grep -q 'listening on' "$work/out" 2>/dev/null && break
    sleep 0.1
done
base=$(sed -n 's/^quayside listening on //p' "$work/out")
[ -n "$base" ] || { echo "smoke: server did not start"; cat "$work/err"; exit 1; }

key=$(curl -sf -X POST --data-urlencode password=smoke-test-password \
    "$base/api/rest/1.0/sessions/admin" | sed -n 's/.*"sessionId":"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "smoke: login failed"; exit 1; }

status=$(curl -s -o "$work/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' \
    -d '{"name":"Rotterdam","countryCode":"NL","latitudeDeg":51,"latitudeMin":55,"latitudeNs":"N"}' \
    "$base/api/rest/1.0/ports/NLRTM")
[ "$status" = 201 ] || { echo "smoke: PUT answered $status: $(cat "$work/put")"; exit 1; }

curl -sf -H "Authorization: Bearer $key" "$base/api/rest/1.0/ports/NLRTM" >"$work/get"
grep -q '"clientCode":"NLRTM"' "$work/get" && grep -q '"name":"Rotterdam"' "$work/get" \
    || { echo "smoke: GET answered $(cat "$work/get")"; exit 1; }

kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""
echo "smoke: $binary served login, PUT (201) and GET; stopped cleanly"
