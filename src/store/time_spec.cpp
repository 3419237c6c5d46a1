#include "store/time_spec.hpp"

#include <limits>

#include "util/utc_time.hpp"

namespace linecap::store {
namespace {

constexpr uint64_t kNs = 1000000000ull;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at s[*i].
bool digits(std::string_view s, size_t* i, size_t n, unsigned* out) {
    if (*i + n > s.size()) return false;
    unsigned v = 0;
    for (size_t k = 0; k < n; ++k) {
        if (!is_digit(s[*i + k])) return false;
        v = v * 10 + static_cast<unsigned>(s[*i + k] - '0');
    }
    *i += n;
    *out = v;
    return true;
}

// ".123" → ns; up to 9 digits. `*i` at the '.' or ','.
bool fraction(std::string_view s, size_t* i, uint64_t* ns, std::string* problem) {
    if (*i >= s.size() || (s[*i] != '.' && s[*i] != ',')) return true;
    ++*i;
    size_t n = 0;
    uint64_t v = 0;
    while (*i < s.size() && is_digit(s[*i])) {
        if (++n > 9) {
            *problem = "more than 9 fraction digits (nanoseconds are the limit)";
            return false;
        }
        v = v * 10 + static_cast<uint64_t>(s[(*i)++] - '0');
    }
    if (n == 0) {
        *problem = "a fraction needs digits after the point";
        return false;
    }
    while (n++ < 9) v *= 10;
    *ns = v;
    return true;
}

unsigned days_in_month(int64_t y, unsigned m) {
    static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

// Times are nanoseconds since the epoch in 64 bits (as pcapng stores them and the index
// keeps them): the latest is 2554-07-21T23:34:33.709551615Z. A later time is refused
// rather than wrapped around 2^64 (which made `--to 2600-01-01` select a window in 1970).
Result<uint64_t> to_ns(std::string_view s, uint64_t sec, uint64_t ns) {
    constexpr uint64_t kMaxSec = UINT64_MAX / kNs, kMaxFrac = UINT64_MAX % kNs;
    if (sec > kMaxSec || (sec == kMaxSec && ns > kMaxFrac))
        return runtime_error("'" + std::string(s) +
                             "': after 2554-07-21T23:34:33.709551615Z, the latest time a 64-bit nanosecond "
                             "timestamp can hold");
    return sec * kNs + ns;
}

Result<uint64_t> parse_unix(std::string_view s) {
    size_t i = 0;
    uint64_t sec = 0;
    while (i < s.size() && is_digit(s[i])) {
        if (sec > UINT64_MAX / kNs) return to_ns(s, sec, 0);  // refused before it can overflow
        sec = sec * 10 + static_cast<uint64_t>(s[i++] - '0');
    }
    uint64_t ns = 0;
    std::string problem;
    if (!fraction(s, &i, &ns, &problem)) return runtime_error("'" + std::string(s) + "': " + problem);
    if (i != s.size()) return runtime_error("'" + std::string(s) + "': not a time");
    return to_ns(s, sec, ns);
}

}  // namespace

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

Result<uint64_t> parse_time(std::string_view s) {
    const std::string quoted = "'" + std::string(s) + "'";
    if (s.empty()) return runtime_error("empty time");
    // Unix seconds: digits only (a date has '-' or 'T').
    bool plain = true;
    for (char c : s) plain = plain && (is_digit(c) || c == '.' || c == ',');
    if (plain) return parse_unix(s);

    size_t i = 0;
    unsigned year, month, day, hour = 0, minute = 0, second = 0;
    if (!digits(s, &i, 4, &year)) return runtime_error(quoted + ": expected YYYY-MM-DDTHH:MM:SS[.f](Z|±HH:MM) or Unix seconds");
    const bool extended = i < s.size() && s[i] == '-';
    if (extended) ++i;
    if (!digits(s, &i, 2, &month)) return runtime_error(quoted + ": bad month");
    if (extended && (i >= s.size() || s[i++] != '-')) return runtime_error(quoted + ": expected '-' after the month");
    if (!digits(s, &i, 2, &day)) return runtime_error(quoted + ": bad day");
    if (month < 1 || month > 12) return runtime_error(quoted + ": month out of range");
    if (day < 1 || day > days_in_month(year, month)) return runtime_error(quoted + ": day out of range");
    if (year < 1970) return runtime_error(quoted + ": before 1970");
    uint64_t ns = 0;
    if (i == s.size()) {
        if (!extended) return runtime_error(quoted + ": a basic-format date needs a time (YYYYMMDDTHHMMSSZ)");
    } else {
        if (s[i] != 'T' && s[i] != 't' && s[i] != ' ') return runtime_error(quoted + ": expected 'T' after the date");
        ++i;
        if (!digits(s, &i, 2, &hour)) return runtime_error(quoted + ": bad hour");
        if (extended && i < s.size() && s[i] == ':') ++i;
        if (!digits(s, &i, 2, &minute)) return runtime_error(quoted + ": bad minute");
        const bool has_seconds = extended ? (i < s.size() && s[i] == ':') : (i < s.size() && is_digit(s[i]));
        if (has_seconds) {
            if (extended) ++i;
            if (!digits(s, &i, 2, &second)) return runtime_error(quoted + ": bad second");
            std::string problem;
            if (!fraction(s, &i, &ns, &problem)) return runtime_error(quoted + ": " + problem);
        }
        if (hour > 23 || minute > 59 || second > 59)
            return runtime_error(quoted + ": time of day out of range (leap seconds are not supported)");
        int64_t offset_s = 0;
        if (i >= s.size())
            return runtime_error(quoted + ": no time zone; add 'Z' for UTC or an offset such as +01:00");
        if (s[i] == 'Z' || s[i] == 'z') {
            ++i;
        } else if (s[i] == '+' || s[i] == '-') {
            const int sign = s[i++] == '+' ? 1 : -1;
            unsigned oh = 0, om = 0;
            if (!digits(s, &i, 2, &oh)) return runtime_error(quoted + ": bad offset");
            if (i < s.size() && s[i] == ':') ++i;
            if (i < s.size() && !digits(s, &i, 2, &om)) return runtime_error(quoted + ": bad offset");
            if (oh > 23 || om > 59) return runtime_error(quoted + ": offset out of range");
            offset_s = sign * (int64_t{oh} * 3600 + om * 60);
        } else {
            return runtime_error(quoted + ": unexpected '" + std::string(1, s[i]) + "'");
        }
        if (i != s.size()) return runtime_error(quoted + ": trailing characters");
        const int64_t secs = days_from_civil(year, month, day) * 86400 + int64_t{hour} * 3600 + minute * 60 + second -
                             offset_s;
        if (secs < 0) return runtime_error(quoted + ": before 1970");
        return to_ns(s, static_cast<uint64_t>(secs), ns);
    }
    return to_ns(s, static_cast<uint64_t>(days_from_civil(year, month, day)) * 86400, 0);
}

std::string format_time(uint64_t ns) { return format_utc_ns(ns); }

Result<uint64_t> parse_expiry(std::string_view text, uint64_t now_ns) {
    constexpr std::pair<char, uint64_t> kUnits[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    for (const auto& [unit, seconds] : kUnits) {
        if (text.size() < 2 || text.size() > 8 || text.back() != unit) continue;
        uint64_t n = 0;
        for (const char c : text.substr(0, text.size() - 1)) {
            if (c < '0' || c > '9') return config_error("'" + std::string(text) + "': expected a time or N(s|m|h|d)");
            n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        // At most 8 characters keep n * seconds far from overflowing; the sum in ns
        // (a uint64 reaches year 2554) is what can.
        const uint64_t ahead_s = n * seconds;
        if (ahead_s > (std::numeric_limits<uint64_t>::max() - now_ns) / 1000000000ull)
            return config_error("'" + std::string(text) + "': too far in the future");
        return now_ns + ahead_s * 1000000000ull;
    }
    return parse_time(text);
}

}  // namespace linecap::store
