#!/usr/bin/env bash
# Every command answers --help: `PROG --help` and, for every subcommand PROG's own usage
# names, `PROG SUB --help` and `PROG SUB -h` exit 0 and print that subcommand's usage on
# stdout (not the whole program's). The subcommands are read from the programs' usage, so
# a subcommand added without its own help fails here.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_linecapd
need_linecap
make_tmpdir

# run_help OUT CMD...: CMD exits 0 with something on stdout and nothing on stderr.
run_help() {
    local out=$1 rc=0
    shift
    "$@" >"$out" 2>"$out.err" || rc=$?
    ((rc == 0)) || fail "'$*' exited $rc: $(cat "$out" "$out.err")"
    [[ -s $out ]] || fail "'$*' printed nothing on stdout"
    [[ ! -s $out.err ]] || fail "'$*' wrote to stderr: $(cat "$out.err")"
}

# subcommands PROG USAGE_FILE: the words after "PROG " at the start of a usage line.
subcommands() {
    sed -nE "s/^(usage:|Usage:)?[[:space:]]*$1 ([a-z][a-z-]*)\\b.*/\\2/p" "$2" | sort -u
}

checked=0
for prog in "$LINECAPD" "$LINECAP"; do
    name=$(basename "$prog")
    run_help "$TEST_TMPDIR/$name.help" "$prog" --help
    mapfile -t subs < <(subcommands "$name" "$TEST_TMPDIR/$name.help")
    case $name in
        linecapd) want=(verify) ;;
        linecap) want=(compress extract index serve stats) ;;
    esac
    # The known ones must be found: a usage whose layout the pattern no longer reads would
    # otherwise check nothing.
    for w in "${want[@]}"; do
        printf '%s\n' "${subs[@]}" | grep -qx "$w" || fail "$name --help does not list '$w': $(cat "$TEST_TMPDIR/$name.help")"
    done
    for sub in "${subs[@]}"; do
        for flag in --help -h; do
            out="$TEST_TMPDIR/$name-$sub$flag"
            run_help "$out" "$prog" "$sub" "$flag"
            grep -Eq "^(usage:|Usage:)?[[:space:]]*$name $sub\\b" "$out" \
                || fail "'$name $sub $flag' does not print its usage line: $(cat "$out")"
            for other in "${subs[@]}"; do
                [[ $other == "$sub" ]] && continue
                ! grep -Eq "^(usage:|Usage:)?[[:space:]]*$name $other\\b" "$out" \
                    || fail "'$name $sub $flag' prints the usage of '$other' too: the whole program's help, not its own"
            done
        done
        checked=$((checked + 1))
    done
done

# `linecap help SUB` is `linecap SUB --help`; an unknown one is a usage error.
run_help "$TEST_TMPDIR/help-extract" "$LINECAP" help extract
cmp -s "$TEST_TMPDIR/help-extract" "$TEST_TMPDIR/linecap-extract--help" || fail "'linecap help extract' differs from 'linecap extract --help'"
rc=0
"$LINECAP" help no-such-command >/dev/null 2>"$TEST_TMPDIR/err" || rc=$?
((rc == 64)) || fail "'linecap help no-such-command' exited $rc, expected 64"
grep -q "no-such-command" "$TEST_TMPDIR/err" || fail "the usage error does not name the command: $(cat "$TEST_TMPDIR/err")"
# --help after other options still answers, without running the command.
run_help "$TEST_TMPDIR/late" "$LINECAP" extract --dir /nonexistent -o "$TEST_TMPDIR/never.pcap" --help
[[ ! -e $TEST_TMPDIR/never.pcap ]] || fail "'linecap extract ... --help' ran the extract"
log "OK: --help of $checked subcommands of linecapd and linecap"
