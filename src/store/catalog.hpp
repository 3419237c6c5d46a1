// The finished capture files of an output directory, and what their names say.
//
// Names are parsed with the daemon's file name template (OutputConfig::file_template,
// rendered by output/file_naming.hpp). Supported for parsing:
//   strftime  %Y %m %d %H %M %S %j %y %F (= %Y-%m-%d) %T (= %H:%M:%S) %s (epoch seconds) %%
//   fields    {port} (any non-empty text), {queue}, {seq} (decimal), {nsec} (9 digits)
// plus the suffixes the writer and recovery add before the extension: "-<n>" (a second
// file with the same name) and "-recovered". Any other conversion (%b, %a, …) makes the
// template unparseable: every file is then treated like a file whose name does not match
// (its time span comes from its index or a scan, and it forms a stream of its own).
//
// A name gives the time of the file's first packet, floored to the template's precision
// (1 ns with {nsec}, else 1 s, 1 min, … down to the finest field). Packet timestamps in
// a stream never decrease, so a file of stream S holds packets in
// [its time, time of S's next file + precision): that is what lets a query open only the
// files whose span meets its range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace linecap::store {

inline constexpr const char* kDefaultFileTemplate = "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}";

struct ParsedName {
    bool has_time = false;
    uint64_t time_ns = 0;       // floored first-packet time
    uint64_t precision_ns = 0;  // time_ns <= first packet < time_ns + precision_ns
    bool has_stream = false;    // {port} and/or {queue} present
    std::string port;
    int64_t queue = -1;
};

class NameTemplate {
public:
    // Errors: an unsupported conversion, named.
    static Result<NameTemplate> compile(const std::string& file_template);
    // Parses a file stem (name without ".pcap"/".pcapng").
    std::optional<ParsedName> parse(std::string_view stem) const;
    const std::string& text() const { return text_; }

    struct Token {
        enum class Kind { literal, year, year2, month, day, yday, hour, minute, second, epoch, nsec, port, queue, seq };
        Kind kind;
        char ch = 0;
    };

private:
    bool match(size_t t, std::string_view s, size_t i, ParsedName& out, int64_t* fields) const;
    std::string text_;
    std::vector<Token> tokens_;
};

struct CaptureFileInfo {
    std::string name;        // file name
    std::string path;        // dir/name
    bool pcapng = false;     // by extension
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::optional<ParsedName> parsed;  // nullopt: the name does not match the template
    std::string stream;      // "port/q<queue>" or, for an unmatched name, the name itself
    // Bounds of the file's packet timestamps from the names alone: [lower, upper).
    uint64_t lower_ns = 0;
    uint64_t upper_ns = UINT64_MAX;
};

struct Catalog {
    std::string directory;
    std::vector<CaptureFileInfo> files;  // sorted by name
    size_t in_progress = 0;              // hidden ".*.part" files (ignored)
};

// Lists the finished capture files ("*.pcap", "*.pcapng", not hidden, regular) of `dir`
// and derives each file's stream and time bounds. Errors: the directory cannot be read.
Result<Catalog> scan_catalog(const std::string& dir, const NameTemplate& name_template);

}  // namespace linecap::store
