#!/usr/bin/env bash
# A private Prometheus server that scrapes one target, for tests of Warren's /metrics endpoint
# (real scrapes, real parsing, rules evaluated by the real engine).
#
# Usage: scripts/services/prometheus.sh start DIR PORT SCRAPE_TARGET [INTERVAL] | stop DIR | env DIR
#    or: source scripts/services/prometheus.sh
#        prometheus_start DIR PORT SCRAPE_TARGET [INTERVAL]; ...; prometheus_stop DIR
#
# PORT is Prometheus' own listen port on 127.0.0.1 (0 or "auto": pick a free one); SCRAPE_TARGET
# is host:port of the endpoint to scrape (path /metrics); INTERVAL defaults to 1s (scrape and rule
# evaluation). Rule files listed (space-separated) in WARREN_PROMETHEUS_RULE_FILES are loaded.
# `start` waits for /-/ready and writes DIR/env (source it) exporting WARREN_TEST_PROMETHEUS_URL
# (http://127.0.0.1:PORT) and WARREN_TEST_PROMETHEUS_PORT. `stop` leaves no process behind.
#
# Measured on a 2-core Debian 12 machine (Prometheus 2.42): start (to /-/ready) about 0.2 s, stop
# under 0.1 s. The first scrape happens about 5 s after ready (service discovery hands targets to
# the scrape manager in 5 s batches): tests must await the series they want, not sleep.

_prometheus_script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/services/common.sh
source "$_prometheus_script_dir/common.sh"

PROMETHEUS_BIN=${PROMETHEUS_BIN:-/usr/bin/prometheus}

# prometheus_start DIR PORT SCRAPE_TARGET [INTERVAL]
prometheus_start() {
  local dir port=${2:?prometheus_start: port required (0 for any free port)}
  local target=${3:?prometheus_start: scrape target host:port required} interval=${4:-1s}
  dir=$(realpath -m "${1:?prometheus_start: state directory required}")
  if [[ ! -x $PROMETHEUS_BIN ]]; then
    echo "prometheus_start: $PROMETHEUS_BIN not found; run scripts/bootstrap" >&2
    return 1
  fi
  if [[ -f $dir/server.sid ]] && [[ -n $(session_pids "$(<"$dir/server.sid")") ]]; then
    echo "prometheus_start: a server is already running from $dir; stop it first" >&2
    return 1
  fi
  if [[ $port == 0 || $port == auto ]]; then port=$(free_ports 1) || return 1; fi
  mkdir -p "$dir/data" "$dir/log" || return 1

  {
    echo "# Private test Prometheus (scripts/services/prometheus.sh)."
    echo "global:"
    echo "  scrape_interval: $interval"
    echo "  scrape_timeout: $interval"
    echo "  evaluation_interval: $interval"
    if [[ -n ${WARREN_PROMETHEUS_RULE_FILES:-} ]]; then
      echo "rule_files:"
      local rules
      for rules in $WARREN_PROMETHEUS_RULE_FILES; do echo "  - \"$(realpath "$rules")\""; done
    fi
    echo "scrape_configs:"
    echo "  - job_name: warren"
    echo "    static_configs:"
    echo "      - targets: [\"$target\"]"
  } >"$dir/prometheus.yml"

  start_in_session "$dir/server.sid" "$dir/log/prometheus.log" "$PROMETHEUS_BIN" \
    --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn || return 1
  if ! wait_for 30 "Prometheus /-/ready on 127.0.0.1:$port" http_ok "http://127.0.0.1:$port/-/ready"; then
    echo "prometheus_start: last lines of $dir/log/prometheus.log:" >&2
    tail -n 30 "$dir/log/prometheus.log" >&2 || true
    prometheus_stop "$dir"
    return 1
  fi
  printf 'export %s=%q\n' WARREN_TEST_PROMETHEUS_URL "http://127.0.0.1:$port" \
    WARREN_TEST_PROMETHEUS_PORT "$port" >"$dir/env"
}

# prometheus_stop DIR: SIGTERM, then SIGKILL after 10 s. Safe to call when nothing runs.
prometheus_stop() {
  local dir
  dir=$(realpath -m "${1:?prometheus_stop: state directory required}")
  [[ -f $dir/server.sid ]] || return 0
  kill_session "$(<"$dir/server.sid")" 10 || return 1
  rm -f "$dir/server.sid"
}

# prometheus_env DIR: prints the client environment file written by prometheus_start.
prometheus_env() {
  cat "$(realpath -m "${1:?prometheus_env: state directory required}")/env"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  usage="usage: $0 start DIR PORT SCRAPE_TARGET [INTERVAL] | stop DIR | env DIR"
  case "${1:-}" in
    start)
      [[ $# -ge 4 && $# -le 5 ]] || { echo "$usage" >&2; exit 2; }
      shift
      prometheus_start "$@"
      ;;
    stop | env)
      [[ $# -eq 2 ]] || { echo "$usage" >&2; exit 2; }
      "prometheus_$1" "$2"
      ;;
    *)
      echo "$usage" >&2
      exit 2
      ;;
  esac
fi
