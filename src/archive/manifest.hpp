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
//     "flow_cap": {"bytes": 1048576, "packets": 0,         only when capture.flow_cap applied:
//                  "snaplen_after": 128, "filter": "",     the rule, and in the span the packets
//                  "cut": 10, "dropped": 0},               cut (written) and not written
//     "dedup": {"window_us": 1000, "suppressed": 3},       only when capture.dedup applied
//     "clock": {                                           how the stamps were taken and
//       "source": "port",                                  how good the host clock was in
//       "port_clock": "nic-clock",                         the file's span (doc/timestamps.md):
//       "sync": "synced",                                  source port | tsc; port_clock
//       "est_error_ns": 250000,                            replayed-file | nic-clock (port
//       "max_error_ns": 1500000,                           only); sync the worst sampled:
//       "steps": 0,                                        synced | unknown | unsynchronised;
//       "status_source": "adjtimex"                        the worst errors; host clock steps;
//     },                                                   where the state was read
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
//     "linecap_version": "0.1.0",
//     "compressed": {                                      only once output.compress has
//       "file": "…pcap.zst",                               replaced the file by its
//       "format": "zstd-seekable",                         compressed form (layout.hpp);
//       "size": 312000,                                    "size" and "sha256" above stay
//       "sha256": "…"                                      those of the pcap bytes, these
//     }                                                    are of the .zst file
//   }
//
// Drops, received and filtered cover the file's span, exactly as the pcapng ISB does
// (pcapng_blocks.hpp): received = packets + drops + filtered + flow_cap.dropped +
// dedup.suppressed (the last two when present). Consecutive files of a
// stream in one run have consecutive seq and touching spans, which is how `linecapd
// verify` finds missing files.
//
// Written after the capture file has its final name, with layout::atomic_write (a hidden
// temporary, fsynced, renamed, the directory fsynced). Read with nlohmann::json: a
// manifest is untrusted input (it lies on a disk that decays), so the reader never throws
// and never aborts; a damaged one is reported in one line naming the file, with the byte
// offset for a syntax error. A key the format defines given as null is damage, not
// "unknown" (unknown values are absent keys). Unknown keys are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/io_status.hpp"
#include "util/result.hpp"

namespace linecap {

struct ManifestDrops {
    uint64_t writer_full = 0;
    uint64_t write_error = 0;
    uint64_t disk_full = 0;
    uint64_t total() const { return writer_full + write_error + disk_full; }
    bool operator==(const ManifestDrops&) const = default;
};

// capture.flow_cap, when it applied to the stream: the rule, and what it did in the span.
struct ManifestFlowCap {
    uint64_t bytes = 0;          // allowance per flow (0: counted in packets)
    uint64_t packets = 0;
    uint64_t snaplen_after = 0;  // 0: packets past the allowance are not written
    std::string filter;          // "" = every packet
    uint64_t cut = 0;            // packets written shortened (among "packets")
    uint64_t dropped = 0;        // packets not written
    bool operator==(const ManifestFlowCap&) const = default;
};

// capture.dedup, when it applied to the stream.
struct ManifestDedup {
    uint64_t window_us = 0;
    uint64_t suppressed = 0;     // copies not written
    bool operator==(const ManifestDedup&) const = default;
};

// The file's timestamps: their source and the host clock's quality over the span.
struct ManifestClock {
    std::string source = "tsc";          // "port" | "tsc"
    std::string port_clock;              // source port: "replayed-file" | "nic-clock"
    std::string sync = "unknown";        // the worst over the span (util/clock_quality.hpp)
    uint64_t est_error_ns = 0;
    uint64_t max_error_ns = 0;
    uint64_t steps = 0;
    std::string status_source;           // "adjtimex", or "test-file:PATH" (a test double)
    bool operator==(const ManifestClock&) const = default;
};

struct ManifestStream {
    std::string port;
    uint16_t port_id = 0;
    uint16_t queue = 0;
    bool operator==(const ManifestStream&) const = default;
};

// The compressed form of a capture file (output.compress, archive/compress.hpp).
struct ManifestCompressed {
    static constexpr const char* kFormat = "zstd-seekable";
    std::string file;
    uint64_t size = 0;
    std::string sha256;
    bool operator==(const ManifestCompressed&) const = default;
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
    std::optional<ManifestFlowCap> flow_cap;
    std::optional<ManifestDedup> dedup;
    std::optional<ManifestClock> clock;
    std::optional<uint64_t> span_start_ns;
    std::optional<uint64_t> span_end_ns;
    std::optional<ManifestStream> stream;
    std::string run;                  // "" when unknown
    std::optional<uint64_t> seq;
    bool recovered = false;
    std::string linecap_version;
    std::optional<ManifestCompressed> compressed;

    bool operator==(const Manifest&) const = default;
};

std::string to_json(const Manifest& manifest);
// The manifest's "clock" object alone, compact (linecap stats --json, the API's /files).
std::string to_json(const ManifestClock& clock);
// Errors: one line, "invalid JSON at byte N: …" or which key is wrong and how.
Result<Manifest> parse_manifest(std::string_view json);
// A manifest without its digest ("sha256": ""), as the manifest hasher leaves a file's
// manifest in its pending marker when it stops before hashing the file
// (archive/manifest_hasher.hpp).
Result<Manifest> parse_manifest_draft(std::string_view json);

// Writes layout::manifest_name(manifest.file) in `dir_fd` with layout::atomic_write.
IoStatus write_manifest(int dir_fd, const Manifest& manifest, uint64_t* bytes_written = nullptr);

// A capture file's manifest as read from its directory.
struct ManifestRead {
    enum class State {
        ok,          // `manifest` holds it
        missing,     // there is none
        unreadable,  // it cannot be read (permissions, I/O error, not a regular file)
        damaged,     // it is not a valid manifest
    };
    State state = State::missing;
    Manifest manifest;
    std::string problem;  // unreadable, damaged: one line naming the manifest file

    bool ok() const { return state == State::ok; }
    // The host clock over the file as the manifest records it (clock.sync): "unknown"
    // without a readable manifest or without its clock object (files of older versions).
    const std::string& clock_sync() const {
        static const std::string unknown = "unknown";
        return ok() && manifest.clock ? manifest.clock->sync : unknown;
    }
};

// Reads layout::manifest_name(capture_name) in `dir_fd`: at most 1 MiB, a regular file
// only (a FIFO or a symlink there is unreadable, never waited on or followed).
ManifestRead read_manifest(int dir_fd, std::string_view capture_name);
// The draft in layout::manifest_pending_name(capture_name), by the same rules: missing
// when the marker is empty (a daemon killed before it stopped) or not there.
ManifestRead read_manifest_draft(int dir_fd, std::string_view capture_name);

}  // namespace linecap
