#!/usr/bin/env bash
# make bench-k6: starts the embedded default (as `make run` does, but with a
# fresh data dir under .cache/k6 and a free loopback port), runs
# bench/k6/transfer.js against it with k6, stops the service, and exits with
# k6's status (99 when a threshold is crossed).
#   K6=path/to/k6 (default .cache/bin/k6)  BIN=bin/txengine
#   RATE (requests/s, default 500)  DURATION (default 30s)  VUS (default 64)
set -euo pipefail
cd "$(dirname "$0")/.."
K6=${K6:-.cache/bin/k6}
BIN=${BIN:-bin/txengine}
[ -x "$K6" ] || { echo "bench-k6: no k6 at $K6 (make bench-k6 installs it)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "bench-k6: no $BIN (make build)" >&2; exit 1; }

dir=.cache/k6
rm -rf "$dir" && mkdir -p "$dir"
TXENGINE_DATA_DIR="$dir/data" TXENGINE_LISTEN=127.0.0.1:0 "./$BIN" serve >"$dir/stdout" 2>"$dir/service.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT INT TERM

url='' token=''
for _ in $(seq 1 600); do
  url=$(sed -n 's/^txengine is listening on //p' "$dir/stdout")
  token=$(sed -n 's/^operator token: //p' "$dir/stdout")
  [ -n "$url" ] && [ -n "$token" ] && break
  kill -0 $pid 2>/dev/null || { echo "bench-k6: txengine exited; log:" >&2; tail -n 20 "$dir/service.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$token" ] || { echo "bench-k6: txengine did not start in 60 s" >&2; exit 1; }
token_id=$(curl -fsS -H "Authorization: Bearer $token" "$url/tokens" | sed -E 's/.*"id":"([^"]+)".*/\1/')
echo "bench-k6: txengine on $url (data in $dir), token $token_id; k6 at ${RATE:-500}/s for ${DURATION:-30s}" >&2
status=0
"$K6" run --quiet -e URL="$url" -e TOKEN="$token" -e TOKEN_ID="$token_id" \
  -e RATE="${RATE:-500}" -e DURATION="${DURATION:-30s}" -e VUS="${VUS:-64}" \
  bench/k6/transfer.js || status=$?
exit $status
