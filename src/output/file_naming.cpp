#include "output/file_naming.hpp"

#include <ctime>
#include <vector>

namespace linecap {
namespace {

constexpr std::string_view kInProgressPrefix = ".";
constexpr std::string_view kInProgressSuffix = ".part";
// strftime output longer than this is certainly a broken template; stop growing there.
constexpr size_t kMaxRenderedLength = 64 * 1024;

std::string format_utc(const std::string& file_template, time_t seconds) {
    struct tm utc {};
    gmtime_r(&seconds, &utc);
    // strftime returns 0 both for "buffer too small" and for an empty result; a trailing
    // sentinel character makes a successful result never empty, so 0 means "grow".
    const std::string format = file_template + "|";
    std::vector<char> buffer(format.size() * 2 + 64);
    while (buffer.size() <= kMaxRenderedLength) {
        const size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &utc);
        if (n > 0) return std::string(buffer.data(), n - 1);
        buffer.resize(buffer.size() * 2);
    }
    return file_template;  // unreachable for any sensible template; placeholders still apply
}

std::string nine_digits(uint64_t nanoseconds) {
    std::string digits = std::to_string(nanoseconds);
    return std::string(9 - digits.size(), '0') + digits;
}

}  // namespace

std::string render_file_stem(const std::string& file_template, uint64_t first_ts_ns,
                             const StreamId& stream, uint64_t seq) {
    const std::string formatted =
        format_utc(file_template, static_cast<time_t>(first_ts_ns / 1000000000u));

    struct Placeholder {
        std::string_view name;
        std::string value;
    };
    const Placeholder placeholders[] = {
        {"{port}", stream.port},
        {"{queue}", std::to_string(stream.queue)},
        {"{nsec}", nine_digits(first_ts_ns % 1000000000u)},
        {"{seq}", std::to_string(seq)},
    };

    std::string out;
    out.reserve(formatted.size() + 32);
    const std::string_view in = formatted;
    size_t i = 0;
    while (i < in.size()) {
        bool substituted = false;
        if (in[i] == '{') {
            for (const auto& p : placeholders) {
                if (in.substr(i, p.name.size()) == p.name) {
                    out += p.value;
                    i += p.name.size();
                    substituted = true;
                    break;
                }
            }
        }
        if (!substituted) out += in[i++];
    }
    return out;
}

const char* file_extension(FileFormat format) {
    switch (format) {
        case FileFormat::pcap: return ".pcap";
        case FileFormat::pcapng: return ".pcapng";
    }
    return ".pcap";
}

// The names below are built with append() rather than operator+ chains, which GCC 12
// at -O3 flags with a false -Wrestrict.
std::string numbered_file_name(std::string_view stem, unsigned n, std::string_view extension) {
    std::string name(stem);
    if (n > 0) name.append("-").append(std::to_string(n));
    name.append(extension);
    return name;
}

std::string insert_before_extension(std::string_view name, std::string_view suffix) {
    size_t dot = name.rfind('.');
    // A leading dot is a hidden name, not an extension.
    if (dot == std::string_view::npos || dot == 0) dot = name.size();
    std::string out(name.substr(0, dot));
    out.append("-").append(suffix).append(name.substr(dot));
    return out;
}

std::string in_progress_name(std::string_view final_name) {
    std::string name(kInProgressPrefix);
    name.append(final_name).append(kInProgressSuffix);
    return name;
}

std::optional<std::string> final_name_of_in_progress(std::string_view name) {
    const size_t affixes = kInProgressPrefix.size() + kInProgressSuffix.size();
    if (name.size() <= affixes || !name.starts_with(kInProgressPrefix) ||
        !name.ends_with(kInProgressSuffix))
        return std::nullopt;
    return std::string(name.substr(kInProgressPrefix.size(), name.size() - affixes));
}

std::string damaged_marker_name(std::string_view capture_name) {
    std::string name(capture_name);
    name.append(kDamagedMarkerSuffix);
    return name;
}

std::optional<std::string> capture_name_of_damaged_marker(std::string_view name) {
    if (!name.ends_with(kDamagedMarkerSuffix)) return std::nullopt;
    name.remove_suffix(kDamagedMarkerSuffix.size());
    if (!is_capture_name(name)) return std::nullopt;
    return std::string(name);
}

}  // namespace linecap
