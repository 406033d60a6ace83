# shellcheck shell=bash
# Shared helpers for the service scripts (rabbitmq.sh, postgres.sh, prometheus.sh): picking free
# loopback ports, waiting for a condition, and stopping a process tree without leaving anything
# behind. Sourced, never run; works under `set -euo pipefail`.

# The Debian interpreter (python3-pika etc. live there), not whatever python3 is first on PATH.
WARREN_SYSTEM_PYTHON=${WARREN_SYSTEM_PYTHON:-/usr/bin/python3}

# free_ports N: prints N distinct TCP ports that are free on 127.0.0.1, one per line.
# Ports come from 20000-32767, below Linux's ephemeral range (32768-60999), so an outgoing
# connection cannot grab one between this check and the server's bind.
free_ports() {
  "$WARREN_SYSTEM_PYTHON" - "$1" <<'PY'
import random, socket, sys
wanted, chosen, held = int(sys.argv[1]), [], []
candidates = random.sample(range(20000, 32768), 2000)
for port in candidates:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    held.append(s)
    chosen.append(port)
    if len(chosen) == wanted:
        break
for s in held:
    s.close()
if len(chosen) < wanted:
    sys.exit(f"free_ports: found only {len(chosen)} free ports of {wanted} in 20000-32767")
print("\n".join(map(str, chosen)))
PY
}

# http_ok URL: succeeds when URL answers 200 within 2 s.
http_ok() {
  "$WARREN_SYSTEM_PYTHON" - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every 0.2 s until it succeeds; fails with
# DESCRIPTION after SECONDS.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "timed out after ${seconds}s waiting for ${what}" >&2
      return 1
    fi
    sleep 0.2
  done
}

# pid_alive PID: succeeds while PID exists (and is not a zombie).
pid_alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# session_pids SID: pids of the live (not zombie) processes in session SID (a service started
# with setsid).
session_pids() {
  ps -e -o pid=,sid=,stat= | awk -v sid="$1" '$2 == sid && $3 !~ /^Z/ { print $1 }'
}

# kill_session SID [GRACE_SECONDS]: SIGTERM every process of session SID, wait up to GRACE
# seconds (default 10), then SIGKILL what is left. Succeeds when nothing of the session remains.
kill_session() {
  local sid=$1 grace=${2:-10} pids
  pids=$(session_pids "$sid")
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  _wait_session_gone "$sid" "$grace" && return 0
  pids=$(session_pids "$sid")
  # shellcheck disable=SC2086
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null
  _wait_session_gone "$sid" 5
}

# stop_session SID MAIN_PID [GRACE_SECONDS]: the graceful way: SIGTERM only MAIN_PID (the server,
# which then shuts its own helpers down), wait up to GRACE seconds (default 30) for the whole
# session to end, then kill_session whatever is left.
stop_session() {
  local sid=$1 main_pid=$2 grace=${3:-30}
  [[ -n $main_pid ]] && kill -TERM "$main_pid" 2>/dev/null
  _wait_session_gone "$sid" "$grace" && return 0
  echo "warning: session $sid did not end within ${grace}s of SIGTERM to $main_pid; killing it" >&2
  kill_session "$sid" 5
}

_wait_session_gone() {
  local sid=$1 deadline=$((SECONDS + $2))
  while [[ -n $(session_pids "$sid") ]]; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.1
  done
}

# kill_tree PID [GRACE_SECONDS]: SIGTERM PID and all its descendants (a snapshot taken now), wait
# up to GRACE seconds (default 10), then SIGKILL what is left.
kill_tree() {
  local root=$1 grace=${2:-10} pids pid
  pids=$(ps -e -o pid=,ppid= | awk -v root="$root" '
    { parent[$1] = $2 }
    END { for (p in parent) { q = p; while (q != root && q in parent && q > 1) q = parent[q]; if (q == root) print p } }')
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  local deadline=$((SECONDS + grace))
  for pid in $pids; do
    while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  done
  for pid in $pids; do
    pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
  done
  return 0
}

# start_in_session PIDFILE LOGFILE COMMAND...: starts COMMAND in the background in a new session
# (so Ctrl-C in the caller's terminal does not reach it and the whole tree can be found by its
# session id), stdin from /dev/null, output to LOGFILE. Writes the session id to PIDFILE.
start_in_session() {
  local pidfile=$1 logfile=$2
  shift 2
  rm -f "$pidfile"
  # `setsid` forks when it is already a group leader (job control on); the inner shell records
  # its own pid, which is the session id in both cases, then becomes COMMAND.
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" </dev/null >>"$logfile" 2>&1 &
  local deadline=$((SECONDS + 5))
  until [[ -s $pidfile ]]; do
    if ((SECONDS >= deadline)); then
      echo "start_in_session: $1 did not record its pid in $pidfile" >&2
      return 1
    fi
    sleep 0.05
  done
}
