#!/usr/bin/env bash
# A local PostgreSQL cluster for development, in .cache/pg (ignored by git).
#   scripts/pg-dev.sh start   start it (creating it on first use); prints its URL
#   scripts/pg-dev.sh stop    stop it
# PostgreSQL refuses to run as root: as root the cluster runs as the user
# "postgres" (or "nobody"). Port: PG_PORT (default 5433).
set -euo pipefail
cd "$(dirname "$0")/.."
PG_PORT=${PG_PORT:-5433}
DIR=$(pwd)/.cache/pg
BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$BIN" ] && command -v initdb >/dev/null; then BIN=$(dirname "$(command -v initdb)"); fi
[ -x "$BIN/initdb" ] || { echo "pg-dev: no PostgreSQL server binaries (install postgresql, or set PG_BIN)" >&2; exit 1; }

as=()
if [ "$(id -u)" = 0 ]; then
  user=postgres; id "$user" >/dev/null 2>&1 || user=nobody
  as=(runuser -u "$user" --)
fi

case "${1:-}" in
start)
  mkdir -p "$DIR"
  [ ${#as[@]} -eq 0 ] || chown "${as[2]}" "$DIR"
  if [ ! -f "$DIR/data/PG_VERSION" ]; then
    "${as[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U txengine >"$DIR/initdb.log"
  fi
  if ! "${as[@]}" "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
    "${as[@]}" "$BIN/pg_ctl" -D "$DIR/data" -w -l "$DIR/server.log" \
      -o "-p $PG_PORT -k $DIR -c listen_addresses=127.0.0.1" start >/dev/null
  fi
  "${as[@]}" "$BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U txengine -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'txengine'" | grep -q 1 ||
    "${as[@]}" "$BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U txengine -d postgres -qc "CREATE DATABASE txengine"
  echo "postgres://txengine@127.0.0.1:$PG_PORT/txengine?sslmode=disable"
  ;;
stop)
  [ -d "$DIR/data" ] && "${as[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m fast stop >/dev/null || true
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
