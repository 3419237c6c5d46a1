#include "config/file_template.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace linecap {
namespace {

using Kind = FileTemplate::Token::Kind;
enum Field { kYear, kMonth, kDay, kYday, kHour, kMinute, kSecond, kEpoch, kNsec, kFieldCount };

constexpr uint64_t kNs = 1000000000ull;
// Numeric fields of variable width ({queue}, {seq}, %s) are read with at most this many
// digits: what an int64_t holds, and a bound on the backtracking.
constexpr size_t kMaxDigits = 18;
constexpr size_t kMaxSeqDigits = 20;

struct Placeholder {
    std::string_view name;
    Kind kind;
};
constexpr Placeholder kPlaceholders[] = {
    {"{port}", Kind::port}, {"{queue}", Kind::queue}, {"{nsec}", Kind::nsec}, {"{seq}", Kind::seq}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Widest text of a token: years up to 9999, the epoch up to 2^64 ns (11 digits), queues
// below 1024 (config: rx_queues <= 1024), {seq} any 64-bit count.
size_t max_width(const FileTemplate::Token& t, size_t max_port_bytes) {
    switch (t.kind) {
        case Kind::literal: return 1;
        case Kind::year: return 4;
        case Kind::yday: return 3;
        case Kind::year2:
        case Kind::month:
        case Kind::day:
        case Kind::hour:
        case Kind::minute:
        case Kind::second: return 2;
        case Kind::epoch: return 11;
        case Kind::nsec: return 9;
        case Kind::port: return max_port_bytes;
        case Kind::queue: return 4;
        case Kind::seq: return 20;
    }
    return 0;
}

bool variable_width(Kind k) { return k == Kind::port || k == Kind::queue || k == Kind::seq || k == Kind::epoch; }

std::string digits(uint64_t value, int width) {
    char text[24];
    std::snprintf(text, sizeof text, "%0*llu", width, static_cast<unsigned long long>(value));
    return text;
}

// Streams and times every template must read back exactly. Port names mix the
// characters they may contain (config: letters, digits, '_' and '-'), ending in digits and
// in "-q<digits>", and starting with a digit, so that a template gluing {port} to a
// number on either side, or to the default's "-q", shows its ambiguity. Between them the
// queues, sequence numbers and ports hold every digit: a literal digit between {port} and
// a number ("{port}4{queue}": port p0, queue 943 reads back as port p049, queue 3) is
// ambiguous only for numbers that contain it. Times stay within 2001..2060, where %y reads back too.
struct Sample {
    uint64_t ts_ns;
    std::string_view port;
    uint64_t queue;
    uint64_t seq;
};
constexpr Sample kSamples[] = {
    {1796004600000000123ull, "tap0", 12, 0},
    {1009843199999999999ull, "x-q12", 3, 17},
    {2840140800000000001ull, "up_link-7", 1023, 123456},
    {1796004659500000000ull, "9", 0, 9},
    {1796004600000000000ull, "7-x", 5, 31},
    {1796004600000000000ull, "0123456789", 987, 1234567890},
    {1796004600000000000ull, "p0", 456, 4567},
};

}  // namespace

Result<FileTemplate> FileTemplate::compile(std::string_view s) {
    const auto problem = [](std::string what) { return config_error(std::move(what)); };
    if (s.empty()) return problem("is empty");
    if (s.find('\0') != std::string_view::npos) return problem("contains a NUL byte");
    if (s.find('/') != std::string_view::npos)
        return problem("must be a file name, not a path: remove the '/' (files go to output.directory)");
    if (s.starts_with('.')) return problem("must not start with '.': hidden names are kept for files still being written");

    FileTemplate t;
    t.text_ = std::string(s);
    for (size_t i = 0; i < s.size();) {
        if (s[i] == '%') {
            if (i + 1 >= s.size()) return problem("ends with a lone '%' (write %% for a percent sign)");
            const char c = s[i + 1];
            i += 2;
            switch (c) {
                case 'Y': t.tokens_.push_back({Kind::year}); break;
                case 'y': t.tokens_.push_back({Kind::year2}); break;
                case 'm': t.tokens_.push_back({Kind::month}); break;
                case 'd': t.tokens_.push_back({Kind::day}); break;
                case 'j': t.tokens_.push_back({Kind::yday}); break;
                case 'H': t.tokens_.push_back({Kind::hour}); break;
                case 'M': t.tokens_.push_back({Kind::minute}); break;
                case 'S': t.tokens_.push_back({Kind::second}); break;
                case 's': t.tokens_.push_back({Kind::epoch}); break;
                case '%': t.tokens_.push_back({Kind::literal, '%'}); break;
                case 'F':
                    t.tokens_.insert(t.tokens_.end(), {{Kind::year}, {Kind::literal, '-'}, {Kind::month},
                                                       {Kind::literal, '-'}, {Kind::day}});
                    break;
                case 'T':
                    t.tokens_.insert(t.tokens_.end(), {{Kind::hour}, {Kind::literal, ':'}, {Kind::minute},
                                                       {Kind::literal, ':'}, {Kind::second}});
                    break;
                default:
                    return problem(std::string("strftime conversion %") + c +
                                   " is not supported: names could not be read back (supported: %Y %m %d %H %M "
                                   "%S %j %y %F %T %s %%)");
            }
            continue;
        }
        if (s[i] == '{') {
            const auto p = std::find_if(std::begin(kPlaceholders), std::end(kPlaceholders),
                                        [&](const Placeholder& p) { return s.substr(i, p.name.size()) == p.name; });
            if (p == std::end(kPlaceholders)) {
                const size_t close = s.find('}', i);
                return problem("unknown placeholder '" +
                               std::string(s.substr(i, close == std::string_view::npos ? 1 : close - i + 1)) +
                               "'; the placeholders are {port}, {queue}, {nsec}, {seq}");
            }
            t.tokens_.push_back({p->kind});
            i += p->name.size();
            continue;
        }
        t.tokens_.push_back({Kind::literal, s[i]});
        ++i;
    }
    // A second {port}, {queue}, {seq} or %s could read back differently from the first,
    // and each one multiplies the ways a name can be split.
    for (size_t a = 0; a < t.tokens_.size(); ++a)
        for (size_t b = a + 1; b < t.tokens_.size(); ++b)
            if (variable_width(t.tokens_[a].kind) && t.tokens_[a].kind == t.tokens_[b].kind)
                return problem("a field of variable width ({port}, {queue}, {seq}, %s) appears twice");
    if (const auto why = t.round_trip_problem()) return problem(*why);
    return t;
}

std::string FileTemplate::render(uint64_t first_ts_ns, std::string_view port, uint64_t queue, uint64_t seq) const {
    const time_t seconds = static_cast<time_t>(first_ts_ns / kNs);
    struct tm utc {};
    gmtime_r(&seconds, &utc);
    std::string out;
    out.reserve(64);
    for (const Token& t : tokens_) {
        switch (t.kind) {
            case Kind::literal: out += t.ch; break;
            case Kind::year: out += digits(static_cast<uint64_t>(utc.tm_year + 1900), 4); break;
            case Kind::year2: out += digits(static_cast<uint64_t>(utc.tm_year % 100), 2); break;
            case Kind::month: out += digits(static_cast<uint64_t>(utc.tm_mon + 1), 2); break;
            case Kind::day: out += digits(static_cast<uint64_t>(utc.tm_mday), 2); break;
            case Kind::yday: out += digits(static_cast<uint64_t>(utc.tm_yday + 1), 3); break;
            case Kind::hour: out += digits(static_cast<uint64_t>(utc.tm_hour), 2); break;
            case Kind::minute: out += digits(static_cast<uint64_t>(utc.tm_min), 2); break;
            case Kind::second: out += digits(static_cast<uint64_t>(utc.tm_sec), 2); break;
            case Kind::epoch: out += std::to_string(first_ts_ns / kNs); break;
            case Kind::nsec: out += digits(first_ts_ns % kNs, 9); break;
            case Kind::port: out += port; break;
            case Kind::queue: out += std::to_string(queue); break;
            case Kind::seq: out += std::to_string(seq); break;
        }
    }
    return out;
}

size_t FileTemplate::max_rendered_bytes(size_t max_port_bytes) const {
    size_t n = 0;
    for (const Token& t : tokens_) n += max_width(t, max_port_bytes);
    return n;
}

bool FileTemplate::has(Token::Kind kind) const {
    return std::any_of(tokens_.begin(), tokens_.end(), [kind](const Token& t) { return t.kind == kind; });
}

bool FileTemplate::has_stream_fields() const { return has(Kind::port) && has(Kind::queue); }

std::optional<std::string> FileTemplate::round_trip_problem() const {
    for (const Sample& sample : kSamples) {
        const std::string stem = render(sample.ts_ns, sample.port, sample.queue, sample.seq);
        const std::optional<ParsedName> p = parse(stem);
        std::string why;
        if (!p) why = "does not match the template";
        else if (has(Kind::port) && p->port != sample.port) why = "reads back as port '" + p->port + "'";
        else if (has(Kind::queue) && p->queue != static_cast<int64_t>(sample.queue))
            why = "reads back as queue " + std::to_string(p->queue);
        else if (p->has_time && !(p->time_ns <= sample.ts_ns && sample.ts_ns - p->time_ns < p->precision_ns))
            why = "reads back as another time";
        if (!why.empty())
            return "the name '" + stem + "' (port '" + std::string(sample.port) + "', queue " +
                   std::to_string(sample.queue) + ") " + why +
                   ": separate the fields with text that cannot be part of them, e.g. {port}-q{queue}";
    }
    return std::nullopt;
}

// Backtracking match of tokens_[t..] against s[i..]; `fields` collects numeric values.
bool FileTemplate::match(size_t t, std::string_view s, size_t i, ParsedName& out, int64_t* fields,
                         RestPredicate accept_rest) const {
    if (t == tokens_.size()) return i == s.size() || (accept_rest != nullptr && accept_rest(s.substr(i)));
    const Token& tok = tokens_[t];
    const auto fixed = [&](size_t n, int field) {
        if (i + n > s.size()) return false;
        int64_t v = 0;
        for (size_t k = 0; k < n; ++k) {
            if (!is_digit(s[i + k])) return false;
            v = v * 10 + (s[i + k] - '0');
        }
        const int64_t saved = fields[field];
        fields[field] = v;
        if (match(t + 1, s, i + n, out, fields, accept_rest)) return true;
        fields[field] = saved;
        return false;
    };
    switch (tok.kind) {
        case Kind::literal: return i < s.size() && s[i] == tok.ch && match(t + 1, s, i + 1, out, fields, accept_rest);
        case Kind::year: return fixed(4, kYear);
        case Kind::year2: {
            if (!fixed(2, kYear)) return false;
            fields[kYear] += fields[kYear] < 69 ? 2000 : 1900;  // POSIX strptime's %y pivot
            return true;
        }
        case Kind::month: return fixed(2, kMonth);
        case Kind::day: return fixed(2, kDay);
        case Kind::yday: return fixed(3, kYday);
        case Kind::hour: return fixed(2, kHour);
        case Kind::minute: return fixed(2, kMinute);
        case Kind::second: return fixed(2, kSecond);
        case Kind::nsec: return fixed(9, kNsec);
        case Kind::epoch:
        case Kind::queue:
        case Kind::seq: {
            // {seq} is matched, not read: any 64-bit count it renders (up to 20 digits).
            const size_t max_digits = tok.kind == Kind::seq ? kMaxSeqDigits : kMaxDigits;
            size_t n = 0;
            while (i + n < s.size() && is_digit(s[i + n]) && n < max_digits) ++n;
            for (size_t len = n; len >= 1; --len) {  // longest first, backtrack
                int64_t v = 0;
                for (size_t k = 0; k < len && tok.kind != Kind::seq; ++k) v = v * 10 + (s[i + k] - '0');
                const int64_t saved_queue = out.queue;
                const int64_t saved_epoch = fields[kEpoch];
                if (tok.kind == Kind::epoch) fields[kEpoch] = v;
                if (tok.kind == Kind::queue) out.queue = v;
                if (match(t + 1, s, i + len, out, fields, accept_rest)) return true;
                out.queue = saved_queue;
                fields[kEpoch] = saved_epoch;
            }
            return false;
        }
        case Kind::port: {
            for (size_t len = s.size() - i; len >= 1; --len) {  // longest first
                const std::string saved = out.port;
                out.port = std::string(s.substr(i, len));
                if (match(t + 1, s, i + len, out, fields, accept_rest)) return true;
                out.port = saved;
            }
            return false;
        }
    }
    return false;
}

std::optional<ParsedName> FileTemplate::parse(std::string_view stem, RestPredicate accept_rest) const {
    ParsedName out;
    int64_t fields[kFieldCount];
    std::fill(std::begin(fields), std::end(fields), -1);
    if (!match(0, stem, 0, out, fields, accept_rest)) return std::nullopt;
    out.has_stream = has(Kind::port) || has(Kind::queue);
    // Beyond 2^64 ns (the year 2554) a name is no time linecap can hold.
    constexpr uint64_t kMaxSeconds = UINT64_MAX / kNs - 1;

    if (fields[kEpoch] >= 0) {
        if (static_cast<uint64_t>(fields[kEpoch]) > kMaxSeconds) return out;
        out.has_time = true;
        out.time_ns = static_cast<uint64_t>(fields[kEpoch]) * kNs;
        out.precision_ns = kNs;
    } else if (fields[kYear] >= 1970 && (fields[kYday] >= 1 || (fields[kMonth] >= 1 && fields[kDay] >= 1))) {
        const bool by_date = fields[kMonth] >= 1 && fields[kDay] >= 1;
        if (by_date ? fields[kMonth] > 12 || fields[kDay] > 31 : fields[kYday] > 366) return out;
        struct tm day {};
        day.tm_year = static_cast<int>(fields[kYear] - 1900);
        day.tm_mon = by_date ? static_cast<int>(fields[kMonth] - 1) : 0;
        day.tm_mday = static_cast<int>(by_date ? fields[kDay] : fields[kYday]);  // timegm normalises day 200 of January
        uint64_t secs = static_cast<uint64_t>(timegm(&day));
        uint64_t precision = 86400;
        // Finer fields count only in order (an hour without minutes is fine, minutes
        // without the hour are not a time).
        if (fields[kHour] >= 0 && fields[kHour] < 24) {
            secs += static_cast<uint64_t>(fields[kHour]) * 3600;
            precision = 3600;
            if (fields[kMinute] >= 0 && fields[kMinute] < 60) {
                secs += static_cast<uint64_t>(fields[kMinute]) * 60;
                precision = 60;
                if (fields[kSecond] >= 0 && fields[kSecond] < 61) {
                    secs += static_cast<uint64_t>(fields[kSecond]);
                    precision = 1;
                }
            }
        }
        if (secs > kMaxSeconds) return out;
        out.has_time = true;
        out.time_ns = secs * kNs;
        out.precision_ns = precision * kNs;
    }
    if (out.has_time && out.precision_ns == kNs && fields[kNsec] >= 0) {
        out.time_ns += static_cast<uint64_t>(fields[kNsec]);
        out.precision_ns = 1;
    }
    return out;
}

}  // namespace linecap
