#include "filter/pcap_program.hpp"

#include <utility>

#include "util/one_line.hpp"

namespace linecap {
namespace {

// Characters of a word in libpcap's syntax (names, numbers, addresses, `portrange 1-10`):
// `and`/`or` count as operators only as whole words, so `host or.example` is one term.
bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':' || c == '\\';
}

size_t count_terms(std::string_view e) {
    size_t operators = 0;
    for (size_t i = 0; i < e.size();) {
        if (word_char(e[i])) {
            size_t end = i;
            while (end < e.size() && word_char(e[end])) ++end;
            const std::string_view word = e.substr(i, end - i);
            operators += word == "and" || word == "or";
            i = end;
        } else if (e.compare(i, 2, "&&") == 0 || e.compare(i, 2, "||") == 0) {
            ++operators;
            i += 2;
        } else {
            ++i;
        }
    }
    return operators + 1;
}

// The start of a long expression, for a message that stays one readable line.
std::string excerpt(std::string_view e) {
    constexpr size_t kShown = 48;
    return one_line(e.size() <= kShown ? e : e.substr(0, kShown)) + (e.size() <= kShown ? "" : "...");
}

}  // namespace

std::string filter_complexity_problem(std::string_view expression) {
    if (const size_t terms = count_terms(expression); terms > kMaxFilterTerms)
        return std::to_string(terms) + " terms joined by and/or; at most " + std::to_string(kMaxFilterTerms) +
               " are accepted (libpcap's compile time grows with the cube of the terms): split the query, or use "
               "a network (net 10.1.0.0/16) or a port range (portrange 8000-8100) instead of many hosts or ports";
    if (expression.size() > kMaxFilterBytes)
        return std::to_string(expression.size()) + " bytes; at most " + std::to_string(kMaxFilterBytes) +
               " are accepted (libpcap's compile time grows with the cube of the expression)";
    return {};
}

Result<PcapProgram> PcapProgram::compile(const std::string& expression, uint32_t snaplen) {
    if (const std::string problem = filter_complexity_problem(expression); !problem.empty())
        return config_error("filter '" + excerpt(expression) + "': " + problem);
    // A "dead" handle: no device is opened, only the expression is compiled for Ethernet
    // at the given snap length.
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, static_cast<int>(snaplen));
    if (dead == nullptr) return runtime_error("pcap_open_dead failed");
    PcapProgram out;
    if (pcap_compile(dead, &out.program_, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        std::string why = pcap_geterr(dead);
        pcap_close(dead);
        // The expression (and libpcap's message, which may quote it) can hold line breaks.
        return config_error(one_line("filter '" + expression + "': " + why));
    }
    pcap_close(dead);
    return out;
}

PcapProgram::PcapProgram(PcapProgram&& other) noexcept : program_(std::exchange(other.program_, bpf_program{})) {}

PcapProgram& PcapProgram::operator=(PcapProgram&& other) noexcept {
    if (this != &other) {
        if (!empty()) pcap_freecode(&program_);
        program_ = std::exchange(other.program_, bpf_program{});
    }
    return *this;
}

PcapProgram::~PcapProgram() {
    if (!empty()) pcap_freecode(&program_);
}

}  // namespace linecap
