// The finished capture files of an output directory, and what their names say.
//
// Names are read with the daemon's file name template (OutputConfig::file_template,
// config/file_template.hpp) through archive/layout.hpp, which knows the suffixes the
// writer and recovery add ("-<n>", "-recovered"). A name that does not match the template
// is treated as a file of unknown time (its time span comes from its index or a scan)
// forming a stream of its own.
//
// A name gives the time of the file's first packet, floored to the template's precision.
// Packet timestamps in a stream never decrease, so a file of stream S holds packets in
// [its time, time of S's next file + precision): that is what lets a query open only the
// files whose span meets its range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/file_template.hpp"
#include "util/result.hpp"

namespace linecap {

struct CaptureFileInfo {
    std::string name;        // file name
    std::string path;        // dir/name (open it with archive/capture_scan.hpp's open_stored_capture)
    bool pcapng = false;     // by extension
    bool compressed = false; // stored as dir/name.zst (output.compress)
    uint64_t size = 0;       // of the capture bytes (decompressed)
    uint64_t stored_size = 0;  // on disk
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
    size_t in_progress = 0;              // files being written (ignored)
};

// Lists the finished capture files ("*.pcap", "*.pcapng", not hidden, regular, or their
// compressed form "*.pcap.zst", listed under the capture name) of `dir` and derives each
// file's stream and time bounds. Errors: the directory cannot be read.
Result<Catalog> scan_catalog(const std::string& dir, const FileTemplate& file_template);

}  // namespace linecap
