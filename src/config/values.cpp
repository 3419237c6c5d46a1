#include "config/values.hpp"

#include <arpa/inet.h>
#include <rte_config.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>

namespace linecap {
namespace {

std::string_view trim(std::string_view text) {
    constexpr std::string_view blanks = " \t";
    const size_t first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) return {};
    const size_t last = text.find_last_not_of(blanks);
    return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        const size_t end = text.find(separator, start);
        parts.push_back(text.substr(start, end - start));
        if (end == std::string_view::npos) return parts;
        start = end + 1;
    }
}

// "12" + "M" → ("12", "M"); the unit may follow the number after a blank.
std::pair<std::string_view, std::string_view> split_number_and_unit(std::string_view text) {
    text = trim(text);
    const size_t unit_start = std::min(text.find_first_not_of("0123456789"), text.size());
    return {text.substr(0, unit_start), trim(text.substr(unit_start))};
}

std::string quoted(std::string_view text) {
    std::string out = "'";
    out.append(text).append("'");
    return out;
}

// --- lcore lists ---------------------------------------------------------------

struct LcoreRange {
    uint64_t first = 0;
    uint64_t last = 0;
};

// "3", "1-4" or "2@1" (lcore 2 on CPU 1).
std::optional<LcoreRange> parse_lcore_item(std::string_view item) {
    if (const size_t at = item.find('@'); at != std::string_view::npos) {
        const auto id = parse_uint(trim(item.substr(0, at)));
        const auto cpu = parse_uint(trim(item.substr(at + 1)));
        if (!id || !cpu) return std::nullopt;
        return LcoreRange{*id, *id};
    }
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
        const auto id = parse_uint(item);
        if (!id) return std::nullopt;
        return LcoreRange{*id, *id};
    }
    const auto first = parse_uint(trim(item.substr(0, dash)));
    const auto last = parse_uint(trim(item.substr(dash + 1)));
    if (!first || !last) return std::nullopt;
    return LcoreRange{*first, *last};
}

// --- sizes and durations --------------------------------------------------------

struct Unit {
    std::string_view name;
    uint64_t factor;
};

constexpr Unit kSizeUnits[] = {
    {"", 1},           {"B", 1},
    {"K", 1ull << 10}, {"KiB", 1ull << 10},
    {"M", 1ull << 20}, {"MiB", 1ull << 20},
    {"G", 1ull << 30}, {"GiB", 1ull << 30},
    {"T", 1ull << 40}, {"TiB", 1ull << 40},
};

constexpr Unit kDurationUnits[] = {
    {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400},
};

template <size_t N>
std::optional<uint64_t> factor_of(std::string_view unit, const Unit (&units)[N]) {
    for (const Unit& known : units) {
        if (known.name == unit) return known.factor;
    }
    return std::nullopt;
}

// number × unit factor, or nullopt when the text has another shape or the product
// does not fit in 64 bits.
template <size_t N>
std::optional<uint64_t> scaled_number(std::string_view text, const Unit (&units)[N]) {
    const auto [digits, unit] = split_number_and_unit(text);
    const auto number = parse_uint(digits);
    const auto factor = factor_of(unit, units);
    if (!number || !factor) return std::nullopt;
    if (*number > std::numeric_limits<uint64_t>::max() / *factor) return std::nullopt;
    return *number * *factor;
}

// --- PCI addresses --------------------------------------------------------------

bool is_hex(std::string_view text, size_t digits) {
    return text.size() == digits && std::all_of(text.begin(), text.end(), [](char c) {
               return std::isxdigit(static_cast<unsigned char>(c)) != 0;
           });
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// --- listen addresses -----------------------------------------------------------

bool is_ip_address(int family, std::string_view host) {
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(family, std::string(host).c_str(), buffer) == 1;
}

std::optional<uint16_t> to_port(std::string_view digits) {
    const auto port = parse_uint(digits);
    if (!port || *port < 1 || *port > 65535) return std::nullopt;
    return static_cast<uint16_t>(*port);
}

// "[::1]:9475" → ("::1", "9475"); "127.0.0.1:9475" → ("127.0.0.1", "9475").
std::optional<std::pair<std::string_view, std::string_view>> split_host_and_port(std::string_view text) {
    if (text.starts_with('[')) {
        const size_t close = text.find("]:");
        if (close == std::string_view::npos) return std::nullopt;
        return std::pair{text.substr(1, close - 1), text.substr(close + 2)};
    }
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    return std::pair{text.substr(0, colon), text.substr(colon + 1)};
}

}  // namespace

std::optional<uint64_t> parse_uint(std::string_view text) {
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) return std::nullopt;
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc()) return std::nullopt;  // too large
    return value;
}

Result<std::vector<unsigned>> parse_lcore_list(std::string_view text) {
    std::vector<unsigned> ids;
    for (const std::string_view item : split(text, ',')) {
        const auto range = parse_lcore_item(trim(item));
        if (!range) {
            return config_error("expected lcore ids and ranges like 0-3, 0,2,4 or 1-2,5, got " + quoted(text));
        }
        if (range->first > range->last) {
            return config_error("lcore range " + quoted(trim(item)) + " runs backwards; write it as " +
                                std::to_string(range->last) + "-" + std::to_string(range->first));
        }
        if (range->last >= RTE_MAX_LCORE) {
            return config_error("lcore " + std::to_string(range->last) + " is out of range; lcore ids are 0.." +
                                std::to_string(RTE_MAX_LCORE - 1));
        }
        for (auto id = static_cast<unsigned>(range->first); id <= range->last; ++id) {
            if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
                return config_error("lcore " + std::to_string(id) + " is listed twice in " + quoted(text) +
                                    "; each lcore runs one thread");
            }
            ids.push_back(id);
        }
    }
    return ids;
}

std::vector<unsigned> lcore_cpus(std::string_view text) {
    std::vector<unsigned> cpus;
    for (const std::string_view raw : split(text, ',')) {
        const std::string_view item = trim(raw);
        if (const size_t at = item.find('@'); at != std::string_view::npos) {
            cpus.push_back(static_cast<unsigned>(parse_uint(trim(item.substr(at + 1))).value_or(0)));
            continue;
        }
        const auto range = parse_lcore_item(item);
        if (!range) continue;
        for (auto id = range->first; id <= range->last; ++id) cpus.push_back(static_cast<unsigned>(id));
    }
    return cpus;
}

Result<uint64_t> parse_size(std::string_view text) {
    if (const auto bytes = scaled_number(text, kSizeUnits)) return *bytes;
    return config_error("expected bytes or a size like 500M, 2G, 1T, 64KiB (units are powers of 1024), got " +
                        quoted(text));
}

Result<uint64_t> parse_duration(std::string_view text) {
    if (const auto seconds = scaled_number(text, kDurationUnits)) return *seconds;
    return config_error("expected seconds or a duration like 90s, 30m, 12h, 14d, 2w, got " + quoted(text));
}

std::optional<std::string> normalize_pci_address(std::string_view text) {
    std::string_view domain = "0000";
    const auto colons = std::count(text.begin(), text.end(), ':');
    if (colons == 2) {
        domain = text.substr(0, text.find(':'));
        text.remove_prefix(domain.size() + 1);
    } else if (colons != 1) {
        return std::nullopt;
    }
    const size_t colon = text.find(':');
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos || dot < colon) return std::nullopt;
    const std::string_view bus = text.substr(0, colon);
    const std::string_view device = text.substr(colon + 1, dot - colon - 1);
    const std::string_view function = text.substr(dot + 1);

    if (!is_hex(domain, 4) || !is_hex(bus, 2) || !is_hex(device, 2)) return std::nullopt;
    unsigned device_number = 0;
    std::from_chars(device.data(), device.data() + device.size(), device_number, 16);
    if (device_number > 0x1f) return std::nullopt;  // a PCI bus has 32 device slots
    if (function.size() != 1 || function[0] < '0' || function[0] > '7') return std::nullopt;
    return lower(domain) + ":" + lower(bus) + ":" + lower(device) + "." + std::string(function);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
    const auto invalid = [&] {
        return config_error(
            "expected host:port with an IPv4 address, [IPv6 address] or localhost and a port 1..65535 "
            "(127.0.0.1:9475, [::1]:9475, localhost:9475), got " +
            quoted(text));
    };
    const auto parts = split_host_and_port(text);
    if (!parts) return invalid();
    const auto [host, port_text] = *parts;
    const bool bracketed = text.starts_with('[');
    const bool host_ok =
        bracketed ? is_ip_address(AF_INET6, host) : host == "localhost" || is_ip_address(AF_INET, host);
    const auto port = to_port(port_text);
    if (!host_ok || !port) return invalid();
    return ListenAddress{std::string(host), *port};
}

Result<ThreadPriority> parse_thread_priority(std::string_view text) {
    const auto expected = [&] {
        return config_error("expected normal, nice:N (-20..19), fifo:N or rr:N (1..99), got " + quoted(text));
    };
    text = trim(text);
    if (text == "normal") return ThreadPriority{};
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) return expected();
    const std::string_view kind = text.substr(0, colon);
    std::string_view number = trim(text.substr(colon + 1));
    const bool negative = !number.empty() && number.front() == '-';
    if (negative) number.remove_prefix(1);
    const auto magnitude = parse_uint(number);
    if (!magnitude || *magnitude > 99) return expected();
    const int value = negative ? -static_cast<int>(*magnitude) : static_cast<int>(*magnitude);
    if (kind == "nice" && value >= -20 && value <= 19) return ThreadPriority{ThreadPriority::Kind::nice, value};
    if ((kind == "fifo" || kind == "rr") && value >= 1) {
        return ThreadPriority{kind == "fifo" ? ThreadPriority::Kind::fifo : ThreadPriority::Kind::rr, value};
    }
    return expected();
}

}  // namespace linecap
