// Capture file names: rendering OutputConfig::file_template, the hidden in-progress name
// of a file being written, and the suffixes used to avoid clobbering an existing file.
//
// Pure string functions (no I/O), so they are cheap to test exhaustively.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "output/stream.hpp"

namespace linecap {

// Renders the template for a file whose first packet has timestamp `first_ts_ns` (UTC):
// strftime(3) conversions first, then {port}, {queue}, {nsec} (nanoseconds of the first
// packet, 9 digits) and {seq} (the stream's file counter). Unknown {…} are kept as is.
// Placeholders are substituted after strftime so a '%' in a port name is never
// interpreted. The result has no extension.
std::string render_file_stem(const std::string& file_template, uint64_t first_ts_ns,
                             const StreamId& stream, uint64_t seq);

// ".pcap" or ".pcapng".
const char* file_extension(FileFormat format);

// `stem` + extension, with "-<n>" before the extension for n > 0: the n-th alternative
// when the plain name is taken (two files in the same second without {nsec}).
std::string numbered_file_name(std::string_view stem, unsigned n, std::string_view extension);

// "x.pcap" → "x-<suffix>.pcap" (suffix inserted before the last extension, if any).
std::string insert_before_extension(std::string_view name, std::string_view suffix);

// A file being written is "." + final name + ".part": hidden, and never matched by
// "*.pcap", so readers and retention only ever see finished files.
std::string in_progress_name(std::string_view final_name);

// The final name an in-progress name stands for; nullopt if `name` is not one.
std::optional<std::string> final_name_of_in_progress(std::string_view name);

// A capture file whose bytes no longer match its manifest gets a marker beside it,
// "NAME.pcap.damaged" (one line: when and why), written by the background scrub
// (output/scrub.hpp) and read by `linecap extract`, `linecap stats` and `linecapd
// verify`. It is a sidecar like the manifest and the index: retention deletes it with its
// file and never counts it as a capture file. (These names move to the layout module,
// which owns every name in the capture directory, when it lands.)
inline constexpr std::string_view kDamagedMarkerSuffix = ".damaged";
std::string damaged_marker_name(std::string_view capture_name);
// The capture file a marker name belongs to; nullopt if `name` is not a marker.
std::optional<std::string> capture_name_of_damaged_marker(std::string_view name);

// Where the scrub keeps its progress across restarts. Not hidden: hidden names in the
// capture directory are files in progress and temporaries, which this is not.
inline constexpr std::string_view kScrubStateName = "linecap-scrub.state";

// A finished capture file's name: "*.pcap" or "*.pcapng", not hidden.
inline bool is_capture_name(std::string_view name) {
    return !name.empty() && name[0] != '.' && (name.ends_with(".pcap") || name.ends_with(".pcapng"));
}

}  // namespace linecap
