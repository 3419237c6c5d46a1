// The two capture file formats linecap writes and reads: the configuration's
// output.format, the reader's and writer's encoding, what a scan finds in a file.
#pragma once

#include <cstdint>

namespace linecap {

enum class FileKind : uint8_t { pcap, pcapng };

// "pcap" or "pcapng", as output.format and the manifests spell them.
constexpr const char* to_string(FileKind kind) { return kind == FileKind::pcapng ? "pcapng" : "pcap"; }

}  // namespace linecap
