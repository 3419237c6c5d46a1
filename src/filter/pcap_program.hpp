// A libpcap filter expression compiled to classic BPF for Ethernet (what `tcpdump -d`
// prints), under a complexity bound. The daemon's filters (filter/bpf_filter.hpp) and the
// store's (store/filter_plan.hpp) both compile through here, so they accept the same
// expressions and neither can be made to run libpcap's compiler for minutes.
//
// The bound, from measurement (libpcap 1.10.3, optimiser on, a loaded 2-vCPU VM): the
// compile time of an `or` of N primitives grows like N^3, and the constant depends on the
// primitive — N = 64 takes 0.06 s for `host`, 0.16 s for `port`, 0.7 s for `portrange`
// and 2 s for `ip6 and portrange`; N = 128 takes 0.4 s, 0.9 s, 8 s; `host` at 3,000 runs
// for hours, and unoptimised compiles themselves pass a minute at 3,000 and crash at
// 10,000 (stack). Long arithmetic (`len = 1+1+…`) costs the same way per operator. So an
// expression may combine at most kMaxFilterTerms primitives (counted as its `and`/`or`
// operators + 1) and be at most kMaxFilterBytes long: the slowest accepted compiles take
// about two seconds, and a refusal is instant.
#pragma once

#include <pcap/pcap.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace linecap {

inline constexpr size_t kMaxFilterTerms = 64;
inline constexpr size_t kMaxFilterBytes = 8192;

// Owns a compiled program (pcap_freecode on destruction).
class PcapProgram {
public:
    // Errors are configuration errors starting with "filter '<expression>': ", quoting
    // libpcap's message or the bound exceeded.
    static Result<PcapProgram> compile(const std::string& expression, uint32_t snaplen);

    PcapProgram() = default;
    PcapProgram(PcapProgram&& other) noexcept;
    PcapProgram& operator=(PcapProgram&& other) noexcept;
    PcapProgram(const PcapProgram&) = delete;
    PcapProgram& operator=(const PcapProgram&) = delete;
    ~PcapProgram();

    bool empty() const { return program_.bf_insns == nullptr; }
    const bpf_program& program() const { return program_; }

private:
    bpf_program program_{};
};

// Why `expression` is over the bound, or "" when it is not.
std::string filter_complexity_problem(std::string_view expression);

}  // namespace linecap
