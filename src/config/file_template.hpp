// The file name template (output.file_template): its grammar, rendering a name from a
// file's first packet and stream, and parsing a name back.
//
// One grammar serves both directions, so every template the configuration accepts names
// files the `linecap` tool can read back: compile() refuses any template whose names
// would not parse back to the time, port and queue they were made from. Supported:
//   strftime  %Y %m %d %H %M %S %j %y %F (= %Y-%m-%d) %T (= %H:%M:%S) %s (epoch) %%
//   fields    {port}, {queue}, {seq} (decimal) and {nsec} (nanoseconds, 9 digits)
// Times are UTC. Other conversions (%b, %a, %p, …) are refused: their text cannot be read
// back into a time. Which names in the capture directory are made from a rendered stem
// (extension, hidden in-progress name, sidecars, numbered alternatives) is
// archive/layout.hpp's business; this is the stem alone.
//
// A parsed name gives the time of the file's first packet floored to the template's
// precision (1 ns with {nsec} after the seconds, else 1 s, 1 min, … down to the finest
// field present).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace linecap {

inline constexpr const char* kDefaultFileTemplate = "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}";

// The longest stem a template may render. File names are limited to 255 bytes (NAME_MAX);
// archive/layout.hpp adds at most 64 to a stem (hidden prefix, numbered and recovered
// suffixes, extension, sidecar and temporary suffixes) and checks that at compile time.
inline constexpr size_t kMaxFileStemBytes = 191;

struct ParsedName {
    bool has_time = false;
    uint64_t time_ns = 0;       // floored first-packet time
    uint64_t precision_ns = 0;  // time_ns <= first packet < time_ns + precision_ns
    bool has_stream = false;    // {port} and/or {queue} present
    std::string port;
    int64_t queue = -1;
};

class FileTemplate {
public:
    // Errors name the problem in the template (no key or file: the caller adds those).
    static Result<FileTemplate> compile(std::string_view text);

    // The stem of a file whose first packet has timestamp `first_ts_ns`.
    std::string render(uint64_t first_ts_ns, std::string_view port, uint64_t queue, uint64_t seq) const;

    // Parses a stem; `accept_rest`, when given, may accept text left after the template's
    // last field (archive/layout.hpp: the "-<n>" and "-recovered" suffixes).
    using RestPredicate = bool (*)(std::string_view rest);
    std::optional<ParsedName> parse(std::string_view stem, RestPredicate accept_rest = nullptr) const;

    // The longest stem render() can produce for port names of at most `max_port_bytes`.
    size_t max_rendered_bytes(size_t max_port_bytes) const;

    bool has_stream_fields() const;  // both {port} and {queue}
    const std::string& text() const { return text_; }
    bool operator==(const FileTemplate& other) const { return text_ == other.text_; }

    struct Token {
        enum class Kind { literal, year, year2, month, day, yday, hour, minute, second, epoch, nsec, port, queue, seq };
        Kind kind;
        char ch = 0;  // literal
    };

private:
    bool match(size_t t, std::string_view s, size_t i, ParsedName& out, int64_t* fields,
               RestPredicate accept_rest) const;
    bool has(Token::Kind kind) const;
    std::optional<std::string> round_trip_problem() const;
    std::optional<std::string> split_problem() const;

    std::string text_;
    std::vector<Token> tokens_;
};

}  // namespace linecap
