#!/usr/bin/env bash
# A private PostgreSQL server for tests: its own cluster, unix socket dir and loopback port under
# one state directory, run as the `postgres` user when we are root (initdb and postgres refuse
# root), else as the calling user.
#
# Usage: scripts/services/postgres.sh start|stop|env DIR
#    or: source scripts/services/postgres.sh; postgres_start DIR; ...; postgres_stop DIR
#
# `start` creates the cluster on first use (trust authentication, user `postgres`, a database
# `warren_test`) and writes DIR/env (source it) exporting
#   WARREN_TEST_PG_DSN        postgresql://postgres@127.0.0.1:PORT/warren_test
#   WARREN_TEST_PG_ADMIN_DSN  the same server, database `postgres`
#   WARREN_TEST_PG_HOST, WARREN_TEST_PG_PORT, WARREN_TEST_PG_SOCKET_DIR, WARREN_TEST_PSQL
# `stop` stops the server and leaves no process behind; DIR is kept, so `start DIR` again brings
# back the same data on the same port.
#
# As root, DIR and every directory above it must be traversable by the `postgres` user (o+x); a
# `mktemp -d` directory is not (mode 700): `chmod 711` it.
#
# Durability is traded for speed (fsync, synchronous_commit and full_page_writes off): this server
# exists for tests. Measured on a 2-core Debian 12 machine (PostgreSQL 15): first start (initdb
# included) 0.9-1.2 s, restart 0.2 s, stop 0.15 s.

_postgres_script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/services/common.sh
source "$_postgres_script_dir/common.sh"

# shellcheck disable=SC2012 # the paths are fixed and plain
POSTGRES_BIN_DIR=${POSTGRES_BIN_DIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)}
POSTGRES_DATABASE=${POSTGRES_DATABASE:-warren_test}

# postgres_start DIR: starts the server (creating the cluster on first use), waits until it
# accepts connections and the test database exists.
postgres_start() {
  local dir port
  dir=$(realpath -m "${1:?postgres_start: state directory required}")
  if [[ -z $POSTGRES_BIN_DIR || ! -x $POSTGRES_BIN_DIR/initdb ]]; then
    echo "postgres_start: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin;" \
      "run scripts/bootstrap" >&2
    return 1
  fi
  mkdir -p "$dir" || return 1
  if ! _pg_as_owner test -x "$dir"; then
    echo "postgres_start: the postgres user cannot reach $dir; make it and its parents" \
      "traversable (chmod o+x)" >&2
    return 1
  fi
  if _postgres_running "$dir"; then
    echo "postgres_start: a server is already running from $dir; stop it first" >&2
    return 1
  fi
  [[ -d $dir/pgdata ]] || _postgres_init "$dir" || return 1
  port=$(<"$dir/port")

  # setsid: the server gets a session of its own, so Ctrl-C in the caller's terminal does not
  # reach it and stop can find every process it left.
  if ! setsid -w "${_pg_owner_prefix[@]}" "$POSTGRES_BIN_DIR/pg_ctl" -D "$dir/pgdata" \
    -l "$dir/log/postgres.log" -w -t 60 -s start; then
    echo "postgres_start: server in $dir did not start; last lines of its log:" >&2
    tail -n 30 "$dir/log/postgres.log" >&2 || true
    return 1
  fi
  local postmaster_pid
  postmaster_pid=$(head -n 1 "$dir/pgdata/postmaster.pid") || return 1
  ps -o sid= -p "$postmaster_pid" | tr -d ' ' >"$dir/server.sid" || return 1

  if [[ -z $("$POSTGRES_BIN_DIR/psql" "postgresql://postgres@127.0.0.1:$port/postgres" -Atqc \
    "SELECT 1 FROM pg_database WHERE datname = '$POSTGRES_DATABASE'") ]]; then
    "$POSTGRES_BIN_DIR/psql" "postgresql://postgres@127.0.0.1:$port/postgres" -v ON_ERROR_STOP=1 \
      -qc "CREATE DATABASE $POSTGRES_DATABASE" || {
      postgres_stop "$dir"
      return 1
    }
  fi
}

# postgres_stop DIR: fast shutdown (disconnects clients), then anything left of the process tree.
# Safe to call when nothing runs.
postgres_stop() {
  local dir
  dir=$(realpath -m "${1:?postgres_stop: state directory required}")
  [[ -f $dir/server.sid ]] || return 0
  if [[ -f $dir/pgdata/postmaster.pid ]]; then
    _pg_as_owner "$POSTGRES_BIN_DIR/pg_ctl" -D "$dir/pgdata" -m fast -w -t 30 -s stop ||
      echo "postgres_stop: pg_ctl stop failed for $dir; killing the server" >&2
  fi
  kill_session "$(<"$dir/server.sid")" 5 || return 1
  rm -f "$dir/server.sid"
}

# postgres_env DIR: prints the client environment file written by postgres_start.
postgres_env() {
  cat "$(realpath -m "${1:?postgres_env: state directory required}")/env"
}

# The server runs as `postgres` when we are root (it refuses root), else as ourselves.
if ((EUID == 0)); then _pg_owner_prefix=(runuser -u postgres --); else _pg_owner_prefix=(); fi
_pg_as_owner() { "${_pg_owner_prefix[@]}" "$@"; }

_postgres_running() {
  local dir=$1
  [[ -f $dir/server.sid ]] && [[ -n $(session_pids "$(<"$dir/server.sid")") ]]
}

# Creates the cluster, its configuration and DIR/env.
_postgres_init() {
  local dir=$1 port
  port=$(free_ports 1) || return 1
  mkdir -p "$dir/pgdata" "$dir/socket" "$dir/log" || return 1
  ((EUID == 0)) && chown postgres:postgres "$dir/pgdata" "$dir/socket" "$dir/log"
  chmod 700 "$dir/pgdata"
  if ! _pg_as_owner "$POSTGRES_BIN_DIR/initdb" -D "$dir/pgdata" -A trust -U postgres \
    -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/log/initdb.log" 2>&1; then
    echo "postgres_start: initdb failed in $dir/pgdata:" >&2
    cat "$dir/log/initdb.log" >&2
    rm -rf "${dir:?}/pgdata"
    return 1
  fi
  cat >>"$dir/pgdata/postgresql.conf" <<EOF

# Private test server (scripts/services/postgres.sh).
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/socket'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  echo "$port" >"$dir/port"
  {
    echo "# Client environment of the private PostgreSQL server in $dir (scripts/services/postgres.sh)."
    printf 'export %s=%q\n' \
      WARREN_TEST_PG_DSN "postgresql://postgres@127.0.0.1:$port/$POSTGRES_DATABASE" \
      WARREN_TEST_PG_ADMIN_DSN "postgresql://postgres@127.0.0.1:$port/postgres" \
      WARREN_TEST_PG_HOST 127.0.0.1 \
      WARREN_TEST_PG_PORT "$port" \
      WARREN_TEST_PG_SOCKET_DIR "$dir/socket" \
      WARREN_TEST_PSQL "$POSTGRES_BIN_DIR/psql"
  } >"$dir/env"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    start | stop | env)
      [[ $# -eq 2 ]] || { echo "usage: $0 start|stop|env DIR" >&2; exit 2; }
      "postgres_$1" "$2"
      ;;
    *)
      echo "usage: $0 start|stop|env DIR" >&2
      exit 2
      ;;
  esac
fi
