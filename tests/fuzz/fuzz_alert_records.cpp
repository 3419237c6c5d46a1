// libFuzzer harness for the alert and flow record reader (store/alert_records.hpp): the
// lines of a Suricata EVE or Zeek conn.log JSON file, as a sensor (or anyone who can write
// to its log) makes them, read into flow queries and then into extract's selections. Byte 0
// picks the margin (0, whole seconds, or the most a uint64 holds, so that every saturation
// is reached); the rest is the input, read with a small record bound (kMaxRecords).
// Invariants: never a crash or hang; an error is one non-empty line without control
// characters (it goes to the CLI's stderr); at most kMaxRecords queries, each with
// from_ns <= to_ns, and the malformed lines among the skipped ones; the selections are as
// many as the queries, each time range ordered, and every filter and index hint they carry
// compiles with libpcap (where the store's complexity bound lets it be compiled at all:
// filter/pcap_program.hpp, the store's own compile), since extract compiles them all.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "filter/pcap_program.hpp"
#include "store/alert_records.hpp"

namespace {

constexpr size_t kMaxRecords = 64;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

void check_error(const std::string& e) {
    check(!e.empty());
    for (const char c : e) check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
}

void compiles(const std::string& filter) {
    if (filter.empty() || !linecap::filter_complexity_problem(filter).empty()) return;
    check(linecap::PcapProgram::compile(filter, 65535).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint64_t margin = data[0] == 0xff ? UINT64_MAX : data[0] * 1000000000ull;
    std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
    auto records = linecap::store::read_alert_records(in, margin, kMaxRecords);
    if (!records) {
        check_error(records.error().message);
        return 0;
    }
    check(records->queries.size() <= kMaxRecords);
    for (const auto& q : records->queries) check(q.from_ns <= q.to_ns && !q.filter.empty());
    size_t previous = 0;
    for (const size_t i : records->malformed) {
        check(i < records->skipped.size() && (i == records->malformed.front() || i > previous));
        previous = i;
    }
    for (const std::string& s : records->skipped) check_error(s);
    auto selections = linecap::store::flow_selections(records.value());
    if (!selections) {
        check_error(selections.error().message);
        return 0;
    }
    check(selections->size() == records->queries.size());
    for (const auto& s : selections.value()) {
        check(s.from_ns <= s.to_ns);
        compiles(s.filter);
        compiles(s.index_hint);
    }
    return 0;
}
