// The text forms the configuration file uses for lcore lists, sizes, durations, PCI
// addresses and listen addresses. They know nothing about YAML, so tools and tests can
// use them directly. An error says what was expected and what was found; the loader puts
// the file, line and key in front of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"
#include "util/thread_priority.hpp"

namespace linecap {

// A plain decimal integer: digits only, no sign, no blanks, no "0x"; nullopt when
// `text` is not one or does not fit in 64 bits.
std::optional<uint64_t> parse_uint(std::string_view text);

// EAL `-l` syntax: lcore ids and ascending ranges separated by commas ("0-3", "0,2,4",
// "1-2,5"); blanks around the items are ignored. The order is kept, because the first
// lcore is the main one. Ids must be below RTE_MAX_LCORE and appear once. A single id may
// name the CPU it runs on ("0@0,1@1,2@1", EAL --lcores style) to place more lcores than
// the machine has CPUs — for tests on small machines, never for capture at rate.
Result<std::vector<unsigned>> parse_lcore_list(std::string_view text);

// The CPU each lcore of parse_lcore_list(text) runs on (the lcore id itself unless
// "@CPU" says otherwise). Call only on text parse_lcore_list accepted.
std::vector<unsigned> lcore_cpus(std::string_view text);

// Byte counts: a plain integer (bytes) or an integer and a unit, optionally separated by
// a blank. Units are powers of 1024 and upper case: K, M, G, T or KiB, MiB, GiB, TiB
// ("500M" = 500 MiB, "64KiB" = 65536); "B" means bytes. "1GB" and "1.5G" are rejected
// rather than guessed at.
Result<uint64_t> parse_size(std::string_view text);

// Durations, in seconds: a plain integer (seconds) or an integer and one unit:
// s, m, h, d, w ("90s", "30m", "12h", "14d", "2w").
Result<uint64_t> parse_duration(std::string_view text);

// "DDDD:BB:DD.F" or "BB:DD.F" (hexadecimal; device 00..1f, function 0..7) in the form
// DPDK names PCI devices: "0000:03:00.0", lower case. nullopt when `text` is not one.
std::optional<std::string> normalize_pci_address(std::string_view text);

// Where the metrics endpoint listens. `host` is an IPv4 address, an IPv6 address
// (written "[::1]:9475" in the file, stored here without brackets) or "localhost".
struct ListenAddress {
    std::string host;
    uint16_t port = 0;

    // 127.0.0.0/8, ::1 or localhost: reachable from this host only.
    bool loopback() const { return host == "localhost" || host == "::1" || host.starts_with("127."); }
};
Result<ListenAddress> parse_listen_address(std::string_view text);

// A thread's scheduling priority: "normal", "nice:N" (N -20..19), "fifo:N" or "rr:N"
// (real-time priority N 1..99).
Result<ThreadPriority> parse_thread_priority(std::string_view text);

}  // namespace linecap
