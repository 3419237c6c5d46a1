// libFuzzer harness for Stenographer's query language (api/steno_query.hpp): the body of a
// POST /query as any client sends it, compiled to a libpcap filter and a time range.
// Invariants: never a crash or hang; an error is one line without control characters (it
// goes into a 400 body and the audit log) that names a position ("at character N"); a
// compiled query has from_ns <= to_ns; and its filter, alone and through VLAN tags as the
// server runs it (through_vlan_tags), compiles with libpcap for Ethernet wherever the
// store's complexity bound lets it be compiled at all (filter/pcap_program.hpp, the
// store's own compile). libpcap's one refusal allowed is "expression rejects all packets",
// its optimiser's verdict on a query that matches nothing ("tcp and udp"), not on its words.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/steno_query.hpp"
#include "filter/pcap_program.hpp"

namespace {

constexpr uint64_t kNow = 1700000000ull * 1000000000ull;  // "ago" counts back from here

void check(bool ok) {
    if (!ok) __builtin_trap();
}

void compiles(const std::string& filter) {
    if (filter.empty() || !linecap::filter_complexity_problem(filter).empty()) return;
    auto program = linecap::PcapProgram::compile(filter, 65535);
    check(program || program.error().message.ends_with(": expression rejects all packets"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto q = linecap::api::compile_steno_query(text, kNow);
    if (!q) {
        const std::string& e = q.error().message;
        check(e.find(" at character ") != std::string::npos);
        for (const char c : e) check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
        return 0;
    }
    check(q->from_ns <= q->to_ns);
    compiles(q->filter);
    compiles(linecap::api::through_vlan_tags(q->filter));
    return 0;
}
