#include "store/catalog.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "util/errno_text.hpp"
#include "store/time_spec.hpp"
#include "util/errno_text.hpp"

namespace linecap::store {
namespace {

using Kind = NameTemplate::Token::Kind;
enum Field { kYear, kMonth, kDay, kYday, kHour, kMinute, kSecond, kEpoch, kNsec, kFieldCount };

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<NameTemplate> NameTemplate::compile(const std::string& file_template) {
    NameTemplate t;
    t.text_ = file_template;
    const std::string_view s = file_template;
    for (size_t i = 0; i < s.size();) {
        if (s[i] == '%') {
            if (i + 1 >= s.size()) return runtime_error("file template ends with '%'");
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
                    return runtime_error(std::string("file template: strftime conversion %") + c +
                                         " is not supported for parsing names");
            }
            continue;
        }
        if (s[i] == '{') {
            struct P {
                std::string_view name;
                Kind kind;
            };
            static constexpr P placeholders[] = {
                {"{port}", Kind::port}, {"{queue}", Kind::queue}, {"{nsec}", Kind::nsec}, {"{seq}", Kind::seq}};
            bool found = false;
            for (const auto& p : placeholders) {
                if (s.substr(i, p.name.size()) == p.name) {
                    t.tokens_.push_back({p.kind});
                    i += p.name.size();
                    found = true;
                    break;
                }
            }
            if (found) continue;
        }
        t.tokens_.push_back({Kind::literal, s[i]});
        ++i;
    }
    return t;
}

// Backtracking match of tokens_[t..] against s[i..]; `fields` collects numeric values.
bool NameTemplate::match(size_t t, std::string_view s, size_t i, ParsedName& out, int64_t* fields) const {
    if (t == tokens_.size()) {
        // What the writer and recovery append before the extension: "-<n>", "-recovered".
        std::string_view rest = s.substr(i);
        while (!rest.empty()) {
            if (rest[0] != '-') return false;
            rest.remove_prefix(1);
            if (rest.starts_with("recovered")) {
                rest.remove_prefix(9);
                continue;
            }
            size_t n = 0;
            while (n < rest.size() && is_digit(rest[n])) ++n;
            if (n == 0) return false;
            rest.remove_prefix(n);
        }
        return true;
    }
    const Token& tok = tokens_[t];
    auto fixed = [&](size_t n, int field) {
        if (i + n > s.size()) return false;
        int64_t v = 0;
        for (size_t k = 0; k < n; ++k) {
            if (!is_digit(s[i + k])) return false;
            v = v * 10 + (s[i + k] - '0');
        }
        const int64_t saved = fields[field];
        fields[field] = v;
        if (match(t + 1, s, i + n, out, fields)) return true;
        fields[field] = saved;
        return false;
    };
    switch (tok.kind) {
        case Kind::literal: return i < s.size() && s[i] == tok.ch && match(t + 1, s, i + 1, out, fields);
        case Kind::year: return fixed(4, kYear);
        case Kind::year2: {
            if (!fixed(2, kYear)) return false;
            fields[kYear] += fields[kYear] < 69 ? 2000 : 1900;
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
            size_t n = 0;
            while (i + n < s.size() && is_digit(s[i + n]) && n < 18) ++n;
            for (size_t len = n; len >= 1; --len) {  // longest first, backtrack
                int64_t v = 0;
                for (size_t k = 0; k < len; ++k) v = v * 10 + (s[i + k] - '0');
                const std::string saved_port = out.port;
                const int64_t saved_queue = out.queue;
                const int64_t saved_epoch = fields[kEpoch];
                if (tok.kind == Kind::epoch) fields[kEpoch] = v;
                if (tok.kind == Kind::queue) out.queue = v;
                if (match(t + 1, s, i + len, out, fields)) return true;
                out.port = saved_port;
                out.queue = saved_queue;
                fields[kEpoch] = saved_epoch;
            }
            return false;
        }
        case Kind::port: {
            for (size_t len = s.size() - i; len >= 1; --len) {  // longest first
                if (s.substr(i, len).find('/') != std::string_view::npos) continue;
                const std::string saved = out.port;
                out.port = std::string(s.substr(i, len));
                if (match(t + 1, s, i + len, out, fields)) return true;
                out.port = saved;
            }
            return false;
        }
    }
    return false;
}

std::optional<ParsedName> NameTemplate::parse(std::string_view stem) const {
    ParsedName out;
    int64_t fields[kFieldCount];
    std::fill(std::begin(fields), std::end(fields), -1);
    if (!match(0, stem, 0, out, fields)) return std::nullopt;
    bool has_port = false, has_queue = false;
    for (const Token& t : tokens_) {
        has_port = has_port || t.kind == Kind::port;
        has_queue = has_queue || t.kind == Kind::queue;
    }
    out.has_stream = has_port || has_queue;

    constexpr uint64_t kNs = 1000000000ull;
    if (fields[kEpoch] >= 0) {
        out.has_time = true;
        out.time_ns = static_cast<uint64_t>(fields[kEpoch]) * kNs;
        out.precision_ns = kNs;
    } else if (fields[kYear] >= 1970 && (fields[kYday] >= 1 || (fields[kMonth] >= 1 && fields[kDay] >= 1))) {
        int64_t days;
        if (fields[kMonth] >= 1 && fields[kDay] >= 1) {
            if (fields[kMonth] > 12 || fields[kDay] > 31) return out;
            days = days_from_civil(fields[kYear], static_cast<unsigned>(fields[kMonth]),
                                   static_cast<unsigned>(fields[kDay]));
        } else {
            if (fields[kYday] > 366) return out;
            days = days_from_civil(fields[kYear], 1, 1) + fields[kYday] - 1;
        }
        uint64_t secs = static_cast<uint64_t>(days) * 86400;
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

Result<Catalog> scan_catalog(const std::string& dir, const NameTemplate& name_template) {
    Catalog cat;
    cat.directory = dir;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return runtime_error(dir + ": " + errno_text(errno));
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.empty() || name[0] == '.') {
            if (name.ends_with(".part")) ++cat.in_progress;
            continue;
        }
        const bool pcap = name.ends_with(".pcap"), pcapng = name.ends_with(".pcapng");
        if (!pcap && !pcapng) continue;
        CaptureFileInfo f;
        f.name = name;
        f.path = dir + "/" + name;
        f.pcapng = pcapng;
        struct stat st {};
        if (::stat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // vanished, or not a file
        f.size = static_cast<uint64_t>(st.st_size);
        f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
        const std::string_view stem = std::string_view(name).substr(0, name.size() - (pcap ? 5 : 7));
        f.parsed = name_template.parse(stem);
        if (f.parsed && f.parsed->has_stream)
            f.stream = f.parsed->port + "/q" + (f.parsed->queue >= 0 ? std::to_string(f.parsed->queue) : "?");
        else
            f.stream = name;
        cat.files.push_back(std::move(f));
    }
    const int e = errno;
    ::closedir(d);
    if (e != 0) return runtime_error(dir + ": readdir: " + errno_text(e));
    std::sort(cat.files.begin(), cat.files.end(),
              [](const CaptureFileInfo& a, const CaptureFileInfo& b) { return a.name < b.name; });

    // Time bounds per stream, from consecutive names.
    std::map<std::string, std::vector<CaptureFileInfo*>> streams;
    for (auto& f : cat.files)
        if (f.parsed && f.parsed->has_time) streams[f.stream].push_back(&f);
    for (auto& [stream, files] : streams) {
        std::stable_sort(files.begin(), files.end(), [](const CaptureFileInfo* a, const CaptureFileInfo* b) {
            return a->parsed->time_ns < b->parsed->time_ns;
        });
        // Files with the same name time (a "-1" duplicate) share the bound of the next
        // file with a later name time.
        for (size_t i = 0; i < files.size(); ++i) {
            files[i]->lower_ns = files[i]->parsed->time_ns;
            size_t j = i + 1;
            while (j < files.size() && files[j]->parsed->time_ns == files[i]->parsed->time_ns) ++j;
            if (j < files.size()) {
                const ParsedName& next = *files[j]->parsed;
                const uint64_t up = next.time_ns + next.precision_ns;
                files[i]->upper_ns = up < next.time_ns ? UINT64_MAX : up;
            }
        }
    }
    return cat;
}

}  // namespace linecap::store
