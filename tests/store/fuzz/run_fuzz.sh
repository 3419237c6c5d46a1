#!/usr/bin/env bash
# Builds the store fuzz targets with clang (libFuzzer + ASan + UBSan) and runs each for
# SECONDS (default 60) on seeds made from generated pcaps and their indexes, plus
# truncated and corrupted variants. Exits 1 if a target crashed (the reproducer is kept
# in OUT/artifacts), 77 if clang/libFuzzer is missing.
#
#   tests/store/fuzz/run_fuzz.sh [SECONDS] [OUT_DIR]
#   (clang: apt-get install -y clang libclang-rt-14-dev)
set -euo pipefail
SECONDS_PER_TARGET=${1:-60}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
OUT=${2:-$(mktemp -d /tmp/lc-store-fuzz.XXXXXX)}
CXX=${CLANGXX:-clang++}
command -v "$CXX" >/dev/null || { echo "SKIP: $CXX not found (apt-get install -y clang libclang-rt-14-dev)"; exit 77; }
mkdir -p "$OUT/bin" "$OUT/artifacts" "$OUT/corpus/pcap" "$OUT/corpus/index" "$OUT/pcaps"

CORE=(crc32c filter_plan index_format packet_keys pcap_file)
core_src=()
for c in "${CORE[@]}"; do core_src+=("$SRC/src/store/$c.cpp"); done
FLAGS=(-std=c++20 -O1 -g -I"$SRC/src" -I"$SRC")
echo "building fuzz targets in $OUT/bin"
for t in fuzz_pcap_reader fuzz_index_reader; do
    "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        "$SRC/tests/store/fuzz/$t.cpp" "${core_src[@]}" -lpcap -o "$OUT/bin/$t" \
        || { echo "SKIP: cannot build with libFuzzer (apt-get install -y libclang-rt-14-dev)"; exit 77; }
done
"$CXX" "${FLAGS[@]}" "$SRC/tests/store/fuzz/make_seeds.cpp" "${core_src[@]}" -lpcap -o "$OUT/bin/make_seeds"

# Seeds: small generated captures of every kind the reader accepts, and damaged copies.
gen() { python3 "$SRC/tests/tools/gen_pcap.py" -q "$@"; }
gen --count 40 --mix --seed 1 --out "$OUT/pcaps/mix.pcap"
gen --count 30 --mix --jumbo --seed 2 --out "$OUT/pcaps/jumbo.pcap"
gen --count 30 --ipv6 --vlan --proto tcp --seed 3 --out "$OUT/pcaps/v6vlan.pcap"
gen --count 20 --mix --usec --seed 4 --out "$OUT/pcaps/usec.pcap"
gen --count 20 --mix --big-endian --seed 5 --out "$OUT/pcaps/be.pcap"
gen --count 20 --mix --snaplen 96 --seed 6 --out "$OUT/pcaps/snap.pcap"
gen --count 0 --out "$OUT/pcaps/empty.pcap"
python3 - "$OUT/pcaps" <<'PY'
import os, sys
d = sys.argv[1]
mix = open(os.path.join(d, "mix.pcap"), "rb").read()
open(os.path.join(d, "trunc-header.pcap"), "wb").write(mix[:20])
open(os.path.join(d, "trunc-record.pcap"), "wb").write(mix[:-7])
bad = bytearray(mix); bad[24 + 8:24 + 12] = (999999).to_bytes(4, "little")
open(os.path.join(d, "caplen.pcap"), "wb").write(bytes(bad))
bad = bytearray(mix); bad[0] = 0
open(os.path.join(d, "magic.pcap"), "wb").write(bytes(bad))
PY
cp "$OUT"/pcaps/*.pcap "$OUT/corpus/pcap/"
"$OUT/bin/make_seeds" "$OUT/corpus/index" "$OUT"/pcaps/*.pcap

rc=0
for t in fuzz_pcap_reader fuzz_index_reader; do
    corpus=$OUT/corpus/pcap
    [[ $t == fuzz_index_reader ]] && corpus=$OUT/corpus/index
    echo "== $t: ${SECONDS_PER_TARGET}s"
    if ! "$OUT/bin/$t" "$corpus" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" >"$OUT/$t.log" 2>&1; then
        rc=1
        echo "CRASH in $t: see $OUT/$t.log and $OUT/artifacts/"
        grep -m5 -E "ERROR|SUMMARY|runtime error" "$OUT/$t.log" || true
    fi
    grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)|#[0-9]+.*DONE" "$OUT/$t.log" | tail -4
    echo "corpus: $(ls "$corpus" | wc -l) inputs"
done
echo "fuzz output in $OUT"
exit "$rc"
