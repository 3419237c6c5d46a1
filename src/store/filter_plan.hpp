// A libpcap filter expression: compiled once for exact per-packet matching, and analysed
// for the index keys a matching packet must have (index pruning).
//
// The analysis walks every path of the compiled classic BPF program (pcap_compile with
// DLT_EN10MB, optimised) from the entry to an accepting return, executing it
// symbolically: which packet bytes each register holds, what each branch taken asserts
// about them ("the 2 bytes at 12 equal 0x0800", "the byte at 23 equals 6", "the 2 bytes
// at X+14 equal 80 where X = 4*(byte 14 & 0xf)"). A path's assertions are then read
// against the layout packet/packet_keys.hpp indexes (Ethernet type chain through VLAN
// tags, then IPv4/IPv6/ARP fields) and become the keys every packet taking that path
// contains. A packet matches only if some accepting path is its path, so a block can
// hold a match only if, for some path, it has all of that path's keys. A path whose
// assertions name no indexed field (e.g. `len > 100`, `not host X`, `ether host …`)
// needs no key: then every block may match and nothing is pruned. Correctness never
// depends on the analysis being clever, only on it being sound.
#pragma once

#include <pcap/pcap.h>

#include <memory>
#include <string>
#include <vector>

#include "archive/index_format.hpp"
#include "filter/pcap_program.hpp"
#include "format/capture_reader.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct FilterPlan {
    // false: every block may hold a match (no pruning).
    bool prunable = false;
    // A block may hold a match only if it contains every key of at least one alternative.
    std::vector<std::vector<IndexKey>> alternatives;
    // Why the plan is what it is (for --explain): "no filter", "path N needs no key", …
    std::string note;
    std::string describe() const;
};

// Analyses a classic BPF program (as produced by pcap_compile for DLT_EN10MB).
FilterPlan analyze_bpf(const bpf_insn* insns, size_t count);

class CompiledFilter {
public:
    // An empty expression matches everything. Errors: filter/pcap_program.hpp's (libpcap's
    // message, or the complexity bound).
    static Result<CompiledFilter> compile(const std::string& expression);

    bool empty() const { return program_.empty(); }
    bool matches(const format::Record& record) const;
    const FilterPlan& plan() const { return plan_; }
    const std::string& expression() const { return expression_; }

private:
    std::string expression_;
    PcapProgram program_;
    FilterPlan plan_;
};

// The blocks of `index` that may hold a packet matching `plan` (all when not prunable).
BlockSet candidate_blocks(const Index& index, const FilterPlan& plan);

// The same at record level where the index allows it (version 2): an alternative with a
// key whose records are listed (a port or address in few blocks) contributes the records
// holding all of its listed keys, in blocks holding all of its keys; any other
// alternative contributes its blocks whole. Never less than candidate_blocks() allows:
// every record of `whole`, and `records`, together cover every packet that may match.
struct CandidateRecords {
    BlockSet whole;                 // blocks to read whole
    std::vector<uint32_t> records;  // file ordinals, ascending, unique, none in `whole`
};
CandidateRecords candidate_records(const Index& index, const FilterPlan& plan);

}  // namespace linecap::store
