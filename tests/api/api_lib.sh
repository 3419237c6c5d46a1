# Helpers for the API tests (sourced after tests/lib/common.sh): a synthetic store, a PKI
# made with the openssl CLI, a tokens file, a config, and `linecap serve` started in the
# background with its kill registered.
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
T0=1796004600000000000  # 2026-11-30T02:10:00Z

# api_store DIR COUNT_PER_STREAM [SIZE_ARGS...]: 2 ports x 2 queues, mixed traffic, indexed.
api_store() {
    local dir=$1 count=$2
    shift 2
    python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$dir" --per-file $((count / 3 + 1)) \
        --gen-arg=--mix --gen-arg=--both-directions --gen-arg=--flows --gen-arg=40 "${@/#/--gen-arg=}" \
        --stream "p0:0:1:$T0:1000:$count" \
        --stream "p0:1:2:$((T0 + 250)):1000:$count" \
        --stream "p1:0:3:$((T0 + 500)):1000:$count" \
        --stream "p1:1:4:$((T0 + 750)):1000:$count" >/dev/null
    "$LINECAP" index --dir "$dir" 2>/dev/null
}

# api_pki DIR: ca.pem/ca.key, server.pem/server.key (IP SANs 127.0.0.1 and $2...),
# client.pem/client.key (CN analyst1), and a rogue CA's rogue.pem/rogue.key.
api_pki() {
    local d=$1
    shift
    local san="IP:127.0.0.1" ip
    for ip in "$@"; do san+=",IP:$ip"; done
    (
        cd "$d"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=linecap test CA" \
            -keyout ca.key -out ca.pem
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
            -keyout server.key -out server.csr
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile <(printf 'subjectAltName=%s\n' "$san") -out server.pem
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=forensics/CN=analyst1" \
            -keyout client.key -out client.csr
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=rogue" \
            -keyout rogue.key -out rogue.pem
    ) >/dev/null 2>&1 || fail "openssl could not make the test PKI"
}

# api_tokens FILE NAME: a tokens file (mode 600) holding one fresh token for NAME; sets TOKEN.
api_tokens() {
    TOKEN=tok-$(openssl rand -hex 16)
    printf '%s %s\n' "$2" "$TOKEN" >"$1"
    chmod 600 "$1"
}

# api_credentials TOKEN_NAME: what a client and `linecap serve` need, in $TEST_TMPDIR
# (make_tmpdir first): T, the PKI (api_pki), the tokens file $T/tokens with TOKEN_NAME's
# TOKEN (api_tokens; none for ""), a free PORT, URL=https://127.0.0.1:PORT,
# AUDIT=$T/audit.log, and API_TLS: the api: lines of TLS with client certificates from
# that PKI.
api_credentials() {
    T=$TEST_TMPDIR
    api_pki "$T"
    [[ -z $1 ]] || api_tokens "$T/tokens" "$1"
    PORT=$(free_tcp_port)
    URL=https://127.0.0.1:$PORT
    AUDIT=$T/audit.log
    API_TLS=("tls_cert: \"$T/server.pem\"" "tls_key: \"$T/server.key\"" "tls_client_ca: \"$T/ca.pem\"")
}

# api_appliance COUNT TOKEN_NAME [SIZE_ARGS...]: the fixture most API tests start from:
# STORE=$T/store (api_store COUNT SIZE_ARGS) and api_credentials TOKEN_NAME.
api_appliance() {
    local count=$1 name=$2
    shift 2
    STORE=$TEST_TMPDIR/store
    api_store "$STORE" "$count" "$@"
    api_credentials "$name"
}

# api_config FILE STORE LISTEN AUDIT [EXTRA api: LINES...]
api_config() {
    local file=$1 store=$2 listen=$3 audit=$4
    shift 4
    {
        printf 'ports:\n  - name: p0\n    device: "net_null0"\n'
        printf 'output:\n  directory: "%s"\n' "$store"
        printf 'metrics:\n  listen: "%s"\n' "${METRICS_LISTEN:-127.0.0.1:1}"
        printf 'api:\n  listen: "%s"\n  audit_log: "%s"\n' "$listen" "$audit"
        local l
        for l in "$@"; do printf '  %s\n' "$l"; done
    } >"$file"
}

# start_serve CONFIG [NETNS [ARGS...]]: starts `linecap serve` (NETNS "" = here; ARGS: more
# options), sets SERVE_PID and SERVE_LOG, waits until it says where it listens.
start_serve() {
    local config=$1 ns=${2:-}
    shift $(($# >= 2 ? 2 : 1))
    SERVE_LOG=$(mktemp "$TEST_TMPDIR/serve.XXXXXX.log")
    if [[ -n $ns ]]; then
        ip netns exec "$ns" "$LINECAP" serve --config "$config" "$@" 2>"$SERVE_LOG" &
    else
        "$LINECAP" serve --config "$config" "$@" 2>"$SERVE_LOG" &
    fi
    SERVE_PID=$!
    on_exit "kill $SERVE_PID 2>/dev/null; wait $SERVE_PID 2>/dev/null || true"
    show_on_failure "$SERVE_LOG"
    wait_for "grep -q 'listening on' '$SERVE_LOG' || ! kill -0 $SERVE_PID 2>/dev/null" 20 || fail "serve did not start"
    kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$SERVE_LOG")"
}

# stop_serve: SIGTERM and wait; fails unless it exits 0.
stop_serve() {
    kill -TERM "$SERVE_PID"
    local rc=0
    wait "$SERVE_PID" || rc=$?
    ((rc == 0)) || fail "serve exited $rc on SIGTERM"
}

# serve_tls_and_token STORE TOKEN_NAME: api_credentials TOKEN_NAME, and `linecap serve` of
# STORE on PORT taking client certificates and tokens.
serve_tls_and_token() {
    api_credentials "$2"
    api_config "$T/api.yaml" "$1" "127.0.0.1:$PORT" "$AUDIT" "${API_TLS[@]}" "tokens_file: \"$T/tokens\""
    start_serve "$T/api.yaml"
}
