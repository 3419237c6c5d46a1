// Manifests: one sidecar per finished capture file, "NAME.pcap.manifest" (or
// "NAME.pcapng.manifest") next to it, a small JSON object:
//
//   {
//     "manifest_version": 1,
//     "file": "20261130T021000.000123456Z-tap0-q1.pcap",   capture file name (same dir)
//     "format": "pcap",                                    pcap | pcapng
//     "size": 1048576,                                     bytes
//     "sha256": "…",                                       hex, of the whole file
//     "packets": 1200,                                     records in the file
//     "first_ns": …, "last_ns": …,                         first/last packet, UTC ns
//     "first_time": "2026-11-30T02:10:00.000123456Z",      the same, readable
//     "last_time": "…",
//     "drops": 0,                                          packets of this stream lost
//     "drops_by_reason": {"writer_full": 0, "write_error": 0, "disk_full": 0},
//     "received": 1200, "filtered": 0,                     packets of the stream in the span
//     "span_start_ns": …, "span_end_ns": …,                the span (wall clock): from the
//                                                          end of the stream's previous file
//                                                          (or the start of the run) to the
//                                                          moment this file was finished
//     "stream": {"port": "tap0", "port_id": 0, "queue": 1},
//     "run": "1764468600000000000",                        daemon run (its start, ns)
//     "seq": 7,                                            file number of the stream in the run
//     "recovered": false,                                  true: finished by crash recovery;
//                                                          then drops/received/span/run/seq
//                                                          are absent (not known)
//     "linecap_version": "0.1.0"
//   }
//
// Drops, received and filtered cover the file's span, exactly as the pcapng ISB does
// (pcapng_blocks.hpp): received = packets + drops + filtered. Consecutive files of a
// stream in one run have consecutive seq and touching spans, which is how `linecapd
// verify` finds missing files. "drops" (the total) comes first so that simple readers
// (`linecap stats` looks for `"drops": N`) find it.
//
// Written after the capture file has its final name, atomically: a hidden temporary
// ".NAME.manifest.tmp" is written (and fsynced with a durable fsync policy), then renamed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "output/io_status.hpp"
#include "util/result.hpp"

namespace linecap {

struct ManifestDrops {
    uint64_t writer_full = 0;
    uint64_t write_error = 0;
    uint64_t disk_full = 0;
    uint64_t total() const { return writer_full + write_error + disk_full; }
    bool operator==(const ManifestDrops&) const = default;
};

struct ManifestStream {
    std::string port;
    uint16_t port_id = 0;
    uint16_t queue = 0;
    bool operator==(const ManifestStream&) const = default;
};

struct Manifest {
    static constexpr uint64_t kVersion = 1;

    std::string file;
    std::string format = "pcap";
    uint64_t size = 0;
    std::string sha256;
    uint64_t packets = 0;
    uint64_t first_ns = 0;
    uint64_t last_ns = 0;
    std::optional<ManifestDrops> drops;
    std::optional<uint64_t> received;
    std::optional<uint64_t> filtered;
    std::optional<uint64_t> span_start_ns;
    std::optional<uint64_t> span_end_ns;
    std::optional<ManifestStream> stream;
    std::string run;                  // "" when unknown
    std::optional<uint64_t> seq;
    bool recovered = false;
    std::string linecap_version;

    bool operator==(const Manifest&) const = default;
};

// "x.pcap" → "x.pcap.manifest"
std::string manifest_name(std::string_view capture_name);
// The capture file a manifest name belongs to; nullopt if it is not a manifest name.
std::optional<std::string> capture_name_of_manifest(std::string_view name);
// The hidden temporary a manifest is written to first.
std::string manifest_temp_name(std::string_view capture_name);
bool is_manifest_temp_name(std::string_view name);

// "2026-11-30T02:10:00.000123456Z"
std::string format_utc_ns(uint64_t ns);

std::string to_json(const Manifest& manifest);
Result<Manifest> parse_manifest(std::string_view json);

// Writes manifest_name(manifest.file) in `dir_fd` atomically (temporary + rename); with
// `durable`, fsyncs the temporary before and the directory after the rename. On failure
// nothing but the previous state is left (the temporary is removed).
IoStatus write_manifest(int dir_fd, const Manifest& manifest, bool durable, uint64_t* bytes_written = nullptr);

// Reads and parses manifest_name(capture_name) in `dir_fd`.
Result<Manifest> read_manifest(int dir_fd, const std::string& capture_name);

}  // namespace linecap
