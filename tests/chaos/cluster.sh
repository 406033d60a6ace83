#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, for the chaos scenarios (issue 21) and by hand:
# three private nodes of scripts/services/rabbitmq.sh sharing one Erlang cookie and one epmd,
# joined into one cluster, so a quorum queue gets a replica on each node; plus the faults a
# scenario injects into one node (stop, start, kill -9, SIGSTOP, SIGCONT).
#
# Usage: tests/chaos/cluster.sh COMMAND DIR [ARG]
#   start DIR            starts (or restarts) the cluster whose state lives in DIR and waits until
#                        all three nodes report running in cluster_status; writes DIR/env
#   stop DIR             stops every node and the epmd; DIR is kept (a later start restarts the
#                        same cluster with its durable queues and messages)
#   env DIR              prints DIR/env
#   status DIR           prints the running nodes, as cluster_status on any live node sees them
#   node-start DIR N     starts node N (1-3) again and waits until the cluster runs it
#   node-stop DIR N      stops node N gracefully
#   kill DIR N           kill -9 of node N's broker (its launcher and epmd entry go with it)
#   freeze DIR N         SIGSTOP of node N's broker: it keeps its sockets open and answers nothing
#   thaw DIR N           SIGCONT of node N's broker
#   leader DIR QUEUE     prints N of the node leading quorum queue QUEUE (vhost "/")
#   pid DIR N            prints the pid of node N's broker (beam.smp)
# or: source tests/chaos/cluster.sh; cluster_start DIR; cluster_freeze DIR 2; ...
# A single node is scripts/services/rabbitmq.sh's (start|stop DIR), which this script builds on.
#
# DIR/env (source it) exports, besides what scripts/services/rabbitmq.sh writes for one node
# (WARREN_TEST_AMQP_URI etc., here for node 1, so the integration fixtures run on the cluster):
#   WARREN_CLUSTER_DIR, WARREN_CLUSTER_SCRIPT     DIR and this script (for the CLI above)
#   WARREN_CLUSTER_NODES                          "warren1@localhost warren2@localhost warren3@localhost"
#   WARREN_CLUSTER_AMQP_PORTS                     "P1 P2 P3", in node order
#   WARREN_CLUSTER_AMQP_URIS                      "amqp://guest:guest@127.0.0.1:P1/ ..." in node order
#   WARREN_CLUSTER_NODE{1,2,3}_NAME, _AMQP_PORT, _AMQP_URI, _RABBITMQCTL (rabbitmqctl bound to it)
#   WARREN_CLUSTER_RABBITMQCTL                    DIR/rabbitmqctl: rabbitmqctl on the first live node
#   WARREN_CLUSTER_RABBITMQ_QUEUES                DIR/rabbitmq-queues: the same for rabbitmq-queues
# Each node's own state is DIR/nodeN (a scripts/services/rabbitmq.sh directory: logs in
# DIR/nodeN/log/warrenN@localhost.log); the shared epmd's is DIR/epmd.sid.
#
# Settings, read at the first start of DIR: CLUSTER_NODE_PREFIX (node names PREFIX1..3, default
# warren; each cluster has its own epmd, so two clusters on one machine may use the same names),
# CLUSTER_PARTITION_HANDLING (default pause_minority: a node frozen for longer than the
# net_ticktime, 60 s, pauses itself after SIGCONT and rejoins, instead of staying partitioned),
# RABBITMQ_CONSUMER_TIMEOUT_MS (as in rabbitmq.sh), CLUSTER_EXTRA_CONF (more rabbitmq.conf lines).
# Footprint: each node runs one Erlang scheduler (+S 1:1, unbound), and quorum queues' write-ahead
# log is capped at 64 MB (raft.wal_max_size_bytes), so three idle nodes take about 3 x 120 MB and
# little CPU on a shared 2-core machine.

_cluster_script=$(realpath "${BASH_SOURCE[0]}")
_cluster_repo=$(cd "$(dirname "$_cluster_script")/../.." && pwd)
# shellcheck source=scripts/services/rabbitmq.sh
source "$_cluster_repo/scripts/services/rabbitmq.sh"

CLUSTER_SIZE=3

# cluster_start DIR: starts the three nodes (configuring DIR on first use), joins nodes 2 and 3 to
# node 1 the first time, waits until cluster_status lists all three as running, writes DIR/env.
cluster_start() {
  local dir n pids=() failed=0
  dir=$(realpath -m "${1:?cluster_start: state directory required}")
  [[ -f $dir/cluster.env ]] || _cluster_configure "$dir" || return 1
  _cluster_start_epmd "$dir" || return 1
  # In parallel: a restarted node waits for its peers' tables, and boots take 6-10 s each.
  for n in $(seq "$CLUSTER_SIZE"); do
    _cluster_node_start_quiet "$dir" "$n" &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || failed=1; done
  if ((failed)); then
    echo "cluster_start: a node of $dir did not start (logs: $dir/node*/log/)" >&2
    return 1
  fi
  if [[ ! -f $dir/joined ]]; then
    for n in $(seq 2 "$CLUSTER_SIZE"); do
      _cluster_join "$dir" "$n" || return 1
    done
    : >"$dir/joined"
  fi
  _cluster_await_running "$dir" "$CLUSTER_SIZE" 60 || return 1
  _cluster_write_env "$dir"
}

# cluster_stop DIR: stops every node (node 1 last, so it remembers the others as the last ones
# seen) and the shared epmd. Safe to call when nothing runs.
cluster_stop() {
  local dir n
  dir=$(realpath -m "${1:?cluster_stop: state directory required}")
  for n in $(seq "$CLUSTER_SIZE" -1 1); do
    # A frozen node would never act on SIGTERM.
    _cluster_signal "$dir" "$n" CONT 2>/dev/null || true
    [[ -d $dir/node$n ]] && { rabbitmq_stop "$dir/node$n" || return 1; }
  done
  if [[ -f $dir/epmd.sid ]]; then
    kill_session "$(<"$dir/epmd.sid")" 5 || return 1
    rm -f "$dir/epmd.sid"
  fi
}

cluster_env() {
  cat "$(realpath -m "${1:?cluster_env: state directory required}")/env"
}

# cluster_status DIR: the running nodes, one per line, as the first live node sees them.
cluster_status() {
  local dir
  dir=$(realpath -m "${1:?cluster_status: state directory required}")
  _cluster_running_nodes "$dir"
}

# cluster_node_start DIR N: starts node N again (same name, ports, data) and waits until the
# cluster lists it as running.
cluster_node_start() {
  local dir n=${2:?cluster_node_start: node number required}
  dir=$(realpath -m "${1:?cluster_node_start: state directory required}")
  _cluster_start_epmd "$dir" || return 1
  rabbitmq_start "$dir/node$n" || return 1
  _cluster_await_node_running "$dir" "$n" 60
}

# cluster_node_stop DIR N: stops node N gracefully (its queues' leadership moves first).
cluster_node_stop() {
  local dir n=${2:?cluster_node_stop: node number required}
  dir=$(realpath -m "${1:?cluster_node_stop: state directory required}")
  _cluster_signal "$dir" "$n" CONT 2>/dev/null || true
  rabbitmq_stop "$dir/node$n"
}

# cluster_kill DIR N: kill -9 of node N's broker, then of what is left of its session.
cluster_kill() {
  local dir n=${2:?cluster_kill: node number required}
  dir=$(realpath -m "${1:?cluster_kill: state directory required}")
  _cluster_signal "$dir" "$n" KILL || return 1
  local sid_file=$dir/node$n/server.sid
  if [[ -f $sid_file ]]; then
    kill_session "$(<"$sid_file")" 0 >/dev/null 2>&1 || true
    rm -f "$sid_file" "$dir/node$n/rabbitmq.pid"
  fi
}

# cluster_freeze DIR N / cluster_thaw DIR N: SIGSTOP / SIGCONT of node N's broker.
cluster_freeze() {
  _cluster_signal "$(realpath -m "${1:?cluster_freeze: state directory required}")" \
    "${2:?cluster_freeze: node number required}" STOP
}

cluster_thaw() {
  _cluster_signal "$(realpath -m "${1:?cluster_thaw: state directory required}")" \
    "${2:?cluster_thaw: node number required}" CONT
}

# cluster_pid DIR N: the pid of node N's broker (beam.smp).
cluster_pid() {
  local dir n=${2:?cluster_pid: node number required}
  dir=$(realpath -m "${1:?cluster_pid: state directory required}")
  local pid_file=$dir/node$n/rabbitmq.pid
  if [[ ! -s $pid_file ]] || ! pid_alive "$(<"$pid_file")"; then
    echo "cluster: node $n of $dir is not running" >&2
    return 1
  fi
  cat "$pid_file"
}

# cluster_leader DIR QUEUE: N of the node whose replica of quorum queue QUEUE is the leader.
cluster_leader() {
  local dir queue=${2:?cluster_leader: queue name required} n status leader
  dir=$(realpath -m "${1:?cluster_leader: state directory required}")
  for n in $(_cluster_live_nodes "$dir"); do
    status=$(timeout 15 "$dir/node$n/rabbitmq-queues" quorum_status "$queue" --formatter json \
      2>/dev/null) || continue
    leader=$("$WARREN_SYSTEM_PYTHON" -c '
import json, sys
rows = json.load(sys.stdin)
print(next((row["Node Name"] for row in rows if row.get("Raft State") == "leader"), ""))
' <<<"$status") || continue
    if [[ -n $leader ]]; then
      _cluster_node_number "$dir" "$leader"
      return
    fi
  done
  echo "cluster_leader: no live node of $dir names a leader of quorum queue $queue" >&2
  return 1
}

# -- internals -----------------------------------------------------------------------------------

_cluster_configure() {
  local dir=$1 epmd_port cookie n
  mkdir -p "$dir/log" || return 1
  epmd_port=$(free_ports 1) || return 1
  cookie=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  for n in $(seq "$CLUSTER_SIZE"); do
    RABBITMQ_NODE_NAME="${CLUSTER_NODE_PREFIX:-warren}$n@localhost" \
      RABBITMQ_EPMD_PORT=$epmd_port RABBITMQ_COOKIE=$cookie \
      RABBITMQ_EXTRA_ERL_ARGS="+S 1:1 +stbt u" \
      RABBITMQ_EXTRA_CONF="# A member of the cluster in $dir (tests/chaos/cluster.sh).
cluster_partition_handling = ${CLUSTER_PARTITION_HANDLING:-pause_minority}
raft.wal_max_size_bytes = 64000000
${CLUSTER_EXTRA_CONF:-}" \
      _rabbitmq_configure "$dir/node$n" || return 1
    _write_wrapper "$dir/node$n/rabbitmq-queues" "rabbitmq-queues bound to node $n of $dir" \
      "set -a; source $(printf %q "$dir/node$n/server.env"); set +a" \
      "exec $(printf %q "$RABBITMQ_BIN_DIR/rabbitmq-queues") -n \"\$RABBITMQ_NODENAME\" \"\$@\""
  done
  _write_wrapper "$dir/rabbitmqctl" "rabbitmqctl on the first live node of $dir" \
    "exec $(printf %q "$_cluster_script") ctl $(printf %q "$dir") rabbitmqctl \"\$@\""
  _write_wrapper "$dir/rabbitmq-queues" "rabbitmq-queues on the first live node of $dir" \
    "exec $(printf %q "$_cluster_script") ctl $(printf %q "$dir") rabbitmq-queues \"\$@\""
  _env_line WARREN_CLUSTER_EPMD_PORT "$epmd_port" >"$dir/cluster.env"
}

_cluster_start_epmd() {
  local dir=$1 WARREN_CLUSTER_EPMD_PORT
  # shellcheck disable=SC1091
  source "$dir/cluster.env"
  if [[ -f $dir/epmd.sid && -n $(session_pids "$(<"$dir/epmd.sid")") ]]; then
    return 0
  fi
  start_in_session "$dir/epmd.sid" "$dir/log/epmd.log" \
    epmd -port "$WARREN_CLUSTER_EPMD_PORT" -address 127.0.0.1 || return 1
  wait_for 10 "epmd on 127.0.0.1:$WARREN_CLUSTER_EPMD_PORT" \
    epmd -port "$WARREN_CLUSTER_EPMD_PORT" -names
}

# Starts node N unless it already runs; output to DIR/log/startN.log (the nodes start in parallel).
_cluster_node_start_quiet() {
  local dir=$1 n=$2
  _rabbitmq_running "$dir/node$n" && return 0
  if ! rabbitmq_start "$dir/node$n" >"$dir/log/start$n.log" 2>&1; then
    echo "cluster_start: node $n:" >&2
    cat "$dir/log/start$n.log" >&2
    return 1
  fi
}

_cluster_join() {
  local dir=$1 n=$2 first
  first=$(_cluster_node_name "$dir" 1)
  if ! { "$dir/node$n/rabbitmqctl" stop_app >/dev/null &&
    "$dir/node$n/rabbitmqctl" join_cluster "$first" >/dev/null &&
    "$dir/node$n/rabbitmqctl" start_app >/dev/null; }; then
    echo "cluster_start: node $n of $dir could not join $first" >&2
    return 1
  fi
}

_cluster_node_name() {
  (
    # shellcheck disable=SC1090,SC1091
    source "$1/node$2/server.env" && echo "$RABBITMQ_NODENAME"
  )
}

_cluster_node_port() {
  (
    # shellcheck disable=SC1090,SC1091
    source "$1/node$2/server.env" && echo "$RABBITMQ_NODE_PORT"
  )
}

_cluster_node_number() {
  local dir=$1 name=$2 n
  for n in $(seq "$CLUSTER_SIZE"); do
    [[ $(_cluster_node_name "$dir" "$n") == "$name" ]] && { echo "$n"; return 0; }
  done
  echo "cluster: $name is no node of $dir" >&2
  return 1
}

# Numbers of the nodes whose broker process exists and is not stopped (SIGSTOP).
_cluster_live_nodes() {
  local dir=$1 n pid state
  for n in $(seq "$CLUSTER_SIZE"); do
    pid=$(cluster_pid "$dir" "$n" 2>/dev/null) || continue
    state=$(ps -o stat= -p "$pid" 2>/dev/null) || continue
    [[ $state == T* ]] || echo "$n"
  done
}

_cluster_running_nodes() {
  local dir=$1 n status
  for n in $(_cluster_live_nodes "$dir"); do
    status=$(timeout 15 "$dir/node$n/rabbitmqctl" cluster_status --formatter json 2>/dev/null) ||
      continue
    "$WARREN_SYSTEM_PYTHON" -c '
import json, sys
print("\n".join(sorted(json.load(sys.stdin).get("running_nodes", []))))
' <<<"$status" && return 0
  done
  echo "cluster: no live node of $dir answers cluster_status" >&2
  return 1
}

_cluster_await_running() {
  local dir=$1 count=$2 seconds=$3
  local deadline=$((SECONDS + seconds)) running=""
  while ((SECONDS < deadline)); do
    running=$(_cluster_running_nodes "$dir" 2>/dev/null) || running=""
    [[ $(grep -c . <<<"$running") -ge $count ]] && return 0
    sleep 0.5
  done
  echo "cluster: timed out after ${seconds}s waiting for $count running nodes in $dir; running:" \
    "${running:-none}" >&2
  return 1
}

_cluster_await_node_running() {
  local dir=$1 n=$2 seconds=$3 name
  name=$(_cluster_node_name "$dir" "$n")
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    _cluster_running_nodes "$dir" 2>/dev/null | grep -qxF "$name" && return 0
    sleep 0.5
  done
  echo "cluster: timed out after ${seconds}s waiting for $name to run in the cluster" >&2
  return 1
}

_cluster_signal() {
  local dir=$1 n=$2 signal=$3 pid
  pid=$(cluster_pid "$dir" "$n") || return 1
  kill -"$signal" "$pid"
}

_cluster_write_env() {
  local dir=$1 n name port uri names=() ports=() uris=()
  {
    echo "# Client environment of the RabbitMQ cluster in $dir (tests/chaos/cluster.sh)."
    # Node 1 as the single broker of the integration fixtures.
    grep '^export ' "$dir/node1/env"
    _env_line WARREN_CLUSTER_DIR "$dir" export
    _env_line WARREN_CLUSTER_SCRIPT "$_cluster_script" export
    _env_line WARREN_CLUSTER_RABBITMQCTL "$dir/rabbitmqctl" export
    _env_line WARREN_CLUSTER_RABBITMQ_QUEUES "$dir/rabbitmq-queues" export
    for n in $(seq "$CLUSTER_SIZE"); do
      name=$(_cluster_node_name "$dir" "$n")
      port=$(_cluster_node_port "$dir" "$n")
      uri="amqp://guest:guest@127.0.0.1:$port/"
      names+=("$name") ports+=("$port") uris+=("$uri")
      _env_line "WARREN_CLUSTER_NODE${n}_NAME" "$name" export
      _env_line "WARREN_CLUSTER_NODE${n}_AMQP_PORT" "$port" export
      _env_line "WARREN_CLUSTER_NODE${n}_AMQP_URI" "$uri" export
      _env_line "WARREN_CLUSTER_NODE${n}_RABBITMQCTL" "$dir/node$n/rabbitmqctl" export
    done
    _env_line WARREN_CLUSTER_NODES "${names[*]}" export
    _env_line WARREN_CLUSTER_AMQP_PORTS "${ports[*]}" export
    _env_line WARREN_CLUSTER_AMQP_URIS "${uris[*]}" export
  } >"$dir/env"
}

# cluster_ctl DIR TOOL ARGS...: rabbitmqctl or rabbitmq-queues on the first live node.
cluster_ctl() {
  local dir tool=${2:?cluster_ctl: tool required} n
  dir=$(realpath -m "${1:?cluster_ctl: state directory required}")
  shift 2
  n=$(_cluster_live_nodes "$dir")
  n=${n%%$'\n'*} # the first (no `head`: its early exit fails the pipe under pipefail)
  [[ -n $n ]] || { echo "cluster: no live node in $dir" >&2; return 1; }
  case $tool in
    rabbitmqctl | rabbitmq-queues) "$dir/node$n/$tool" "$@" ;;
    *) echo "cluster_ctl: unknown tool $tool" >&2; return 2 ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  usage="usage: $0 start|stop|env|status DIR | node-start|node-stop|kill|freeze|thaw|pid DIR N"
  usage+=" | leader DIR QUEUE | ctl DIR rabbitmqctl|rabbitmq-queues ARGS..."
  command=${1:-}
  shift || true
  case $command in
    start | stop | env | status)
      [[ $# -eq 1 ]] || { echo "$usage" >&2; exit 2; }
      "cluster_$command" "$1"
      ;;
    node-start | node-stop | kill | freeze | thaw | pid)
      [[ $# -eq 2 && $2 =~ ^[1-3]$ ]] || { echo "$usage" >&2; exit 2; }
      "cluster_${command//-/_}" "$1" "$2"
      ;;
    leader)
      [[ $# -eq 2 ]] || { echo "$usage" >&2; exit 2; }
      cluster_leader "$1" "$2"
      ;;
    ctl)
      [[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
      cluster_ctl "$@"
      ;;
    *)
      echo "$usage" >&2
      exit 2
      ;;
  esac
fi
