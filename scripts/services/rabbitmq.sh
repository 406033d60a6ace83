#!/usr/bin/env bash
# A private RabbitMQ node for tests and scripts/run: its own node name, cookie, epmd, loopback
# ports and data, all under one state directory, so it never meets a system broker or another run.
#
# Usage: [WARREN_RABBITMQ_TLS=1 [WARREN_RABBITMQ_TLS_CLIENT=1]] scripts/services/rabbitmq.sh
#          start|stop|env DIR
#    or: source scripts/services/rabbitmq.sh; rabbitmq_start DIR; ...; rabbitmq_stop DIR
#
# `start` writes DIR/env (source it) exporting
#   WARREN_TEST_AMQP_URI       amqp://guest:guest@127.0.0.1:PORT/ (guest works from loopback)
#   WARREN_BROKER_URI          the same URI, for `warren run|publish|dlq` (it replaces [broker] uri)
#   WARREN_TEST_AMQP_PORT, WARREN_TEST_RABBITMQ_NODE
#   WARREN_TEST_RABBITMQCTL    DIR/rabbitmqctl: rabbitmqctl bound to this node
#   WARREN_TEST_RABBITMQ_STOP  DIR/stop, WARREN_TEST_RABBITMQ_START DIR/start: stop and start the
#                              same node again (same name, ports and data) for broker-restart tests.
# and, when WARREN_RABBITMQ_TLS=1 at the first start of DIR (it needs the openssl command):
#   WARREN_TEST_AMQPS_URI      amqps://guest:guest@localhost:TLS_PORT/
#   WARREN_TEST_AMQPS_PORT     a TLS listener on 127.0.0.1 (TLS 1.2 and 1.3; a client certificate
#                              is verified when one is sent, and not required)
#   WARREN_TEST_CA_FILE        DIR/tls/ca.pem: a throwaway CA made for this DIR, which signed the
#                              server certificate. That certificate names DNS:localhost only, so
#                              amqps://127.0.0.1:TLS_PORT/ fails hostname verification on purpose.
# and, when also WARREN_RABBITMQ_TLS_CLIENT=1 (tests/integration/test_tls_client_certs.py starts
# such a node of its own): the listener requires a client certificate from that CA
# (fail_if_no_peer_cert), and the CA also signed, before its key was deleted,
#   WARREN_TEST_CLIENT_CERT_FILE, WARREN_TEST_CLIENT_KEY_FILE  DIR/tls/client.{pem,key} (the key
#                              mode 0600): a client certificate for CN=warren-test-client, 30 days
#   WARREN_TEST_EXPIRED_CLIENT_CERT_FILE  DIR/tls/expired-client.pem: for the same key, a
#                              certificate whose validity ended a day before it was made
# `stop` stops the broker and its epmd and leaves no process behind; DIR is kept, so a later
# `start DIR` brings back the same node with its durable queues and messages.
#
# Measured on a 2-core Debian 12 machine (RabbitMQ 3.10.8): first start 6.5-8.5 s, restart of an
# existing DIR 4-5 s, stop 1.1-1.3 s.
#
# Broker settings (DIR/rabbitmq.conf): no plugins; consumer_timeout 600000 ms (10 min, so a test
# may hold a delivery in a long handler without the broker closing the channel); with
# WARREN_RABBITMQ_TLS=1 also a TLS listener (see above; certificates made in about 0.1 s), which
# requires client certificates with WARREN_RABBITMQ_TLS_CLIENT=1.
#
# For a node of a cluster (tests/chaos/cluster.sh), the first start of DIR also reads:
#   RABBITMQ_NODE_NAME       the node's full name (default warren-test-PID@localhost)
#   RABBITMQ_COOKIE          the Erlang cookie (default: random); cluster members share one
#   RABBITMQ_EPMD_PORT       an epmd the caller runs and stops (default: one of DIR's own); cluster
#                            members must register with the same epmd to find each other
#   RABBITMQ_EXTRA_CONF      lines appended to DIR/rabbitmq.conf
#   RABBITMQ_EXTRA_ERL_ARGS  Erlang VM flags appended to the server's (e.g. +S 1:1, one scheduler)

_rabbitmq_script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/services/common.sh
source "$_rabbitmq_script_dir/common.sh"

RABBITMQ_BIN_DIR=${RABBITMQ_BIN_DIR:-/usr/lib/rabbitmq/bin}
RABBITMQ_NODE_PREFIX=${RABBITMQ_NODE_PREFIX:-warren-test}
RABBITMQ_CONSUMER_TIMEOUT_MS=${RABBITMQ_CONSUMER_TIMEOUT_MS:-600000}

# rabbitmq_start DIR: starts the node (creating DIR's configuration on first use) and waits until
# it accepts clients.
rabbitmq_start() {
  local dir
  dir=$(realpath -m "${1:?rabbitmq_start: state directory required}")
  if _rabbitmq_running "$dir"; then
    echo "rabbitmq_start: a node is already running from $dir; stop it first" >&2
    return 1
  fi
  [[ -f $dir/server.env ]] || _rabbitmq_configure "$dir" || return 1

  # The server environment lives in a file so the wrappers and a restart use the very same one.
  (
    set -a
    # shellcheck disable=SC1091
    source "$dir/server.env"
    set +a
    if [[ ! -f $dir/epmd.external ]]; then
      start_in_session "$dir/epmd.sid" "$dir/log/epmd.log" \
        epmd -port "$ERL_EPMD_PORT" -address 127.0.0.1 || exit 1
    fi
    wait_for 10 "epmd on 127.0.0.1:$ERL_EPMD_PORT" epmd -port "$ERL_EPMD_PORT" -names || exit 1
    start_in_session "$dir/server.sid" "$dir/log/launcher.log" \
      "$RABBITMQ_BIN_DIR/rabbitmq-server" || exit 1
  ) || {
    _rabbitmq_kill_all "$dir"
    return 1
  }

  if ! _rabbitmq_await_startup "$dir"; then
    echo "rabbitmq_start: node in $dir did not start; last lines of its logs:" >&2
    tail -n 30 "$dir/log/launcher.log" "$dir"/log/*@localhost.log >&2 2>/dev/null || true
    _rabbitmq_kill_all "$dir"
    return 1
  fi
}

# rabbitmq_stop DIR: stops the node gracefully (SIGTERM to the broker, as its launcher would),
# then anything left of its process tree, then its epmd. Safe to call when nothing runs.
rabbitmq_stop() {
  local dir broker_pid=""
  dir=$(realpath -m "${1:?rabbitmq_stop: state directory required}")
  if [[ -f $dir/server.sid ]]; then
    [[ -s $dir/rabbitmq.pid ]] && broker_pid=$(<"$dir/rabbitmq.pid")
    # Without the broker's pid (it died early or never wrote it) the launcher relays SIGTERM.
    [[ -n $broker_pid ]] || broker_pid=$(<"$dir/server.sid")
    stop_session "$(<"$dir/server.sid")" "$broker_pid" 60 || return 1
    rm -f "$dir/server.sid" "$dir/rabbitmq.pid"
  fi
  if [[ -f $dir/epmd.sid ]]; then
    kill_session "$(<"$dir/epmd.sid")" 5 || return 1
    rm -f "$dir/epmd.sid"
  fi
}

# rabbitmq_env DIR: prints the client environment file written by rabbitmq_start.
rabbitmq_env() {
  cat "$(realpath -m "${1:?rabbitmq_env: state directory required}")/env"
}

_rabbitmq_running() {
  local dir=$1
  [[ -f $dir/server.sid ]] && [[ -n $(session_pids "$(<"$dir/server.sid")") ]]
}

_rabbitmq_kill_all() {
  local dir=$1 f
  for f in server.sid epmd.sid; do
    if [[ -f $dir/$f ]]; then
      kill_session "$(<"$dir/$f")" 5 || true
      rm -f "${dir:?}/$f"
    fi
  done
}

# Waits for the broker to boot; gives up early when its launcher has died.
_rabbitmq_await_startup() {
  local dir=$1 sid
  sid=$(<"$dir/server.sid")
  local deadline=$((SECONDS + 90))
  while ((SECONDS < deadline)); do
    if [[ -z $(session_pids "$sid") ]]; then
      echo "rabbitmq_start: the broker process exited during startup" >&2
      return 1
    fi
    # await_startup fails at once while the node is not yet registered with epmd: retry.
    if "$dir/rabbitmqctl" await_startup --timeout 30 >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "rabbitmq_start: timed out after 90s" >&2
  return 1
}

# Creates DIR's private configuration: ports, node name, cookie, config files, the client env
# file and the wrapper scripts. (Checks each step itself: the library may be called where errexit
# is ignored, e.g. `if rabbitmq_start DIR; then`.)
_rabbitmq_configure() {
  local dir=$1 amqp_port dist_port epmd_port node ports tls_port=""
  mkdir -p "$dir/home" "$dir/mnesia" "$dir/log" || return 1
  ports=$(free_ports 3) || return 1
  { read -r amqp_port && read -r dist_port && read -r epmd_port; } <<<"$ports"
  node=${RABBITMQ_NODE_NAME:-${RABBITMQ_NODE_PREFIX}-$$@localhost}
  if [[ -n ${RABBITMQ_EPMD_PORT:-} ]]; then
    epmd_port=$RABBITMQ_EPMD_PORT
    : >"$dir/epmd.external" # rabbitmq_start and rabbitmq_stop leave that epmd alone
  fi

  # Erlang distribution needs a cookie only the owner can read.
  (umask 077 && printf %s "${RABBITMQ_COOKIE:-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')}" \
    >"$dir/home/.erlang.cookie") || return 1
  chmod 400 "$dir/home/.erlang.cookie"

  cat >"$dir/rabbitmq.conf" <<EOF
# Private test broker (scripts/services/rabbitmq.sh). Port and address come from server.env.
consumer_timeout = $RABBITMQ_CONSUMER_TIMEOUT_MS
log.console = false
log.file.level = info
EOF
  [[ -z ${RABBITMQ_EXTRA_CONF:-} ]] || printf '%s\n' "$RABBITMQ_EXTRA_CONF" >>"$dir/rabbitmq.conf"
  echo '[].' >"$dir/enabled_plugins"
  local client_certificates=false
  [[ ${WARREN_RABBITMQ_TLS:-0} == 1 && ${WARREN_RABBITMQ_TLS_CLIENT:-0} == 1 ]] && client_certificates=true
  if [[ ${WARREN_RABBITMQ_TLS:-0} == 1 ]]; then
    tls_port=$(free_ports 1) || return 1
    _rabbitmq_make_certificates "$dir/tls" "$client_certificates" || return 1
    cat >>"$dir/rabbitmq.conf" <<EOF
# WARREN_RABBITMQ_TLS=1: a TLS listener with a server certificate from the throwaway CA.
listeners.ssl.default = 127.0.0.1:$tls_port
ssl_options.cacertfile = $dir/tls/ca.pem
ssl_options.certfile = $dir/tls/server.pem
ssl_options.keyfile = $dir/tls/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = $client_certificates
ssl_options.versions.1 = tlsv1.3
ssl_options.versions.2 = tlsv1.2
EOF
  fi
  : >"$dir/rabbitmq-env.conf" # replaces /etc/rabbitmq/rabbitmq-env.conf

  {
    echo "# Environment of the private RabbitMQ node; written by scripts/services/rabbitmq.sh."
    _env_line HOME "$dir/home"
    _env_line LANG C.UTF-8
    _env_line RABBITMQ_NODENAME "$node"
    _env_line RABBITMQ_NODE_IP_ADDRESS 127.0.0.1
    _env_line RABBITMQ_NODE_PORT "$amqp_port"
    _env_line RABBITMQ_DIST_PORT "$dist_port"
    _env_line ERL_EPMD_PORT "$epmd_port"
    _env_line ERL_EPMD_ADDRESS 127.0.0.1
    _env_line RABBITMQ_MNESIA_BASE "$dir/mnesia"
    _env_line RABBITMQ_LOG_BASE "$dir/log"
    _env_line RABBITMQ_PID_FILE "$dir/rabbitmq.pid"
    _env_line RABBITMQ_CONFIG_FILE "$dir/rabbitmq.conf"
    _env_line RABBITMQ_ADVANCED_CONFIG_FILE "$dir/advanced.config"
    _env_line RABBITMQ_CONF_ENV_FILE "$dir/rabbitmq-env.conf"
    _env_line RABBITMQ_ENABLED_PLUGINS_FILE "$dir/enabled_plugins"
    # Our epmd is already running; distribution only on loopback.
    _env_line RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS \
      "-start_epmd false -kernel inet_dist_use_interface {127,0,0,1} ${RABBITMQ_EXTRA_ERL_ARGS:-}"
  } >"$dir/server.env"

  {
    echo "# Client environment of the private RabbitMQ node in $dir (scripts/services/rabbitmq.sh)."
    _env_line WARREN_TEST_AMQP_URI "amqp://guest:guest@127.0.0.1:$amqp_port/" export
    # What `warren run` and `warren publish` read: source the file, then run warren against this
    # broker with any config (it replaces [broker] uri).
    _env_line WARREN_BROKER_URI "amqp://guest:guest@127.0.0.1:$amqp_port/" export
    _env_line WARREN_TEST_AMQP_PORT "$amqp_port" export
    _env_line WARREN_TEST_RABBITMQ_NODE "$node" export
    _env_line WARREN_TEST_RABBITMQCTL "$dir/rabbitmqctl" export
    _env_line WARREN_TEST_RABBITMQ_START "$dir/start" export
    _env_line WARREN_TEST_RABBITMQ_STOP "$dir/stop" export
    if [[ -n $tls_port ]]; then
      _env_line WARREN_TEST_AMQPS_URI "amqps://guest:guest@localhost:$tls_port/" export
      _env_line WARREN_TEST_AMQPS_PORT "$tls_port" export
      _env_line WARREN_TEST_CA_FILE "$dir/tls/ca.pem" export
    fi
    if [[ $client_certificates == true ]]; then
      _env_line WARREN_TEST_CLIENT_CERT_FILE "$dir/tls/client.pem" export
      _env_line WARREN_TEST_CLIENT_KEY_FILE "$dir/tls/client.key" export
      _env_line WARREN_TEST_EXPIRED_CLIENT_CERT_FILE "$dir/tls/expired-client.pem" export
    fi
  } >"$dir/env"

  _write_wrapper "$dir/rabbitmqctl" "rabbitmqctl bound to the private node in $dir" \
    "set -a; source $(printf %q "$dir/server.env"); set +a" \
    "exec $(printf %q "$RABBITMQ_BIN_DIR/rabbitmqctl") -n \"\$RABBITMQ_NODENAME\" \"\$@\""
  _write_wrapper "$dir/start" "starts the private node in $dir again (same name, ports, data)" \
    "exec $(printf %q "$_rabbitmq_script_dir/rabbitmq.sh") start $(printf %q "$dir")"
  _write_wrapper "$dir/stop" "stops the private node in $dir (data is kept)" \
    "exec $(printf %q "$_rabbitmq_script_dir/rabbitmq.sh") stop $(printf %q "$dir")"
}

# _rabbitmq_make_certificates DIR CLIENT: a throwaway CA (DIR/ca.pem, valid 30 days; its key is
# deleted once it has signed) and a server key and certificate for DNS:localhost
# (DIR/server.{key,pem}); with CLIENT=true also the client certificates described at the top.
_rabbitmq_make_certificates() {
  local dir=$1 client=$2
  if ! command -v openssl >/dev/null; then
    echo "rabbitmq_start: WARREN_RABBITMQ_TLS=1 needs the openssl command (apt-get install openssl)" >&2
    return 1
  fi
  mkdir -p "$dir" || return 1
  if ! (
    set -e
    cd "$dir"
    umask 077
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
      -keyout ca.key -out ca.pem -days 30 -subj "/CN=Warren throwaway test CA $RANDOM$RANDOM" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
      -keyout server.key -out server.csr -subj "/CN=localhost"
    printf '%s\n' "subjectAltName=DNS:localhost" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
      -extfile server.ext -out server.pem
    if [[ $client == true ]]; then
      openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
        -keyout client.key -out client.csr -subj "/CN=warren-test-client"
      printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=clientAuth" >client.ext
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
        -extfile client.ext -out client.pem
      # -days -1: notAfter a day in the past (OpenSSL 3.0 has no -not_after).
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days -1 \
        -extfile client.ext -out expired-client.pem
      rm -f client.csr client.ext
      chmod 644 client.pem expired-client.pem
    fi
    rm -f ca.key ca.srl server.csr server.ext
    chmod 644 ca.pem server.pem
  ) >"$dir/openssl.log" 2>&1; then
    echo "rabbitmq_start: could not make the test certificates in $dir:" >&2
    cat "$dir/openssl.log" >&2
    return 1
  fi
  rm -f "$dir/openssl.log"
}

# _env_line NAME VALUE [export]: one shell-quoted assignment.
_env_line() {
  printf '%s%s=%q\n' "${3:+export }" "$1" "$2"
}

# _write_wrapper PATH PURPOSE LINE...: a small executable bash script.
_write_wrapper() {
  local path=$1 purpose=$2
  shift 2
  {
    echo '#!/usr/bin/env bash'
    echo "# Generated by scripts/services/rabbitmq.sh: $purpose."
    echo 'set -euo pipefail'
    printf '%s\n' "$@"
  } >"$path"
  chmod 755 "$path"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    start | stop | env)
      [[ $# -eq 2 ]] || { echo "usage: $0 start|stop|env DIR" >&2; exit 2; }
      "rabbitmq_$1" "$2"
      ;;
    *)
      echo "usage: $0 start|stop|env DIR" >&2
      exit 2
      ;;
  esac
fi
