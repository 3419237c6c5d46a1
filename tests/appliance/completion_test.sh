#!/usr/bin/env bash
# The bash completions (completions/linecap, completions/linecapd) under bash-completion,
# as an interactive shell would load them, with the built programs first on PATH: the
# commands, a command's options, option values, and linecapd's verify.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_linecapd
bash_completion=/usr/share/bash-completion/bash_completion
[[ -r $bash_completion ]] || skip "bash-completion not installed ($bash_completion)"
need_linecap
make_tmpdir
mkdir "$TEST_TMPDIR/bin" "$TEST_TMPDIR/store"
ln -s "$LINECAP" "$TEST_TMPDIR/bin/linecap"
ln -s "$LINECAPD" "$TEST_TMPDIR/bin/linecapd"

# complete WORD...: what TAB offers for the command line WORD... (the last word is the one
# being completed), one candidate per line, sorted.
complete_line() {
    PATH="$TEST_TMPDIR/bin:$PATH" bash --norc --noprofile -c '
        source "$1"
        source "$2/completions/linecap"
        source "$2/completions/linecapd"
        shift 2
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        "$(complete -p "$1" | sed -E "s/.*-F ([^ ]+) .*/\1/")" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort
    ' complete_line "$bash_completion" "$LINECAP_SRC" "$@"
}

# expect WANT WORD...: the candidates are exactly WANT (space-separated).
expect() {
    local want got
    want=$(tr ' ' '\n' <<<"$1" | sort)
    shift
    got=$(complete_line "$@")
    [[ $got == "$want" ]] || fail "completing '$*': got [$(echo $got)], expected [$(echo $want)]"
}

expect "compress extract help hold index serve stats" linecap ""
expect "--help --version" linecap --
expect "--filter --format --from" linecap extract --f
expect "pcap pcapng" linecap extract --format ""
expect "--gap-threshold --gaps" linecap stats --ga
expect "--level" linecap compress --dir /x --le
expect "extract" linecap help ex
# Only directories after --dir.
touch "$TEST_TMPDIR/store-file"
(cd "$TEST_TMPDIR" && expect "store" linecap index --dir sto) || exit 1
expect "verify" linecapd ver
expect "--print-cpus --print-plan" linecapd --print-
expect "--max-gap" linecapd verify --max
log "OK: linecap and linecapd complete their commands, options and values"
