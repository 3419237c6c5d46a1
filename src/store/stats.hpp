// `linecap stats`: what a capture store holds — time span, files, bytes and packets per
// stream (port/queue), the largest gaps between consecutive files of a stream, index
// coverage, drops per file where a sidecar manifest reports them, and the files the
// background scrub marked damaged (archive/scrub.hpp).
//
// Packet counts and time spans come from a file's index when it is valid, else from a
// scan of the file. Drops come from the file's manifest, read with archive/manifest.hpp's
// reader; a damaged manifest is an error naming it (the rest is still reported), and
// without manifests the column is omitted.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct StatsOptions {
    std::string directory;
    const StoreBackend* store = nullptr;  // the store to read; nullptr: the directory (open_store)
    std::string file_template = kDefaultFileTemplate;
    bool use_index = true;
    uint64_t gap_threshold_ns = 0;  // > 0: also count gaps longer than this
    size_t largest_gaps = 3;        // per stream
    std::function<void(const std::string&)> on_warning;
    std::function<void(const std::string&)> on_error;
};

struct FileStats {
    std::string name;
    std::string stream;
    uint64_t size = 0;
    uint64_t packets = 0;
    uint64_t first_ts_ns = 0, last_ts_ns = 0;  // valid when packets > 0
    std::string source;                        // "index", "scan", "error"
    std::optional<uint64_t> drops;             // from a manifest
    std::optional<std::string> damaged;        // marked by the scrub: the marker's line
    bool manifest_pending = false;             // finished, manifest not written yet
    std::optional<ManifestClock> clock;        // from a manifest: stamps and host clock quality
};

struct Gap {
    uint64_t length_ns = 0;
    std::string after;   // the file before the gap
    std::string before;  // the file after it
};

struct StreamStats {
    std::string stream;
    size_t files = 0;
    uint64_t bytes = 0, packets = 0;
    uint64_t first_ts_ns = UINT64_MAX, last_ts_ns = 0;
    std::vector<Gap> largest_gaps;  // longest first
    size_t gaps_over_threshold = 0;
    std::optional<uint64_t> drops;
};

struct StoreStats {
    std::string directory;
    size_t files = 0, in_progress = 0;
    size_t indexed = 0, scanned = 0, unreadable = 0;
    uint64_t bytes = 0, packets = 0;
    uint64_t first_ts_ns = UINT64_MAX, last_ts_ns = 0;
    bool any_manifest = false;
    size_t damaged = 0;  // files marked damaged by the scrub (scanned, never read through their index)
    size_t manifest_pending = 0;  // finished files whose manifest the daemon has not written yet
    // Files by their host clock's state over their span (manifest clock.sync; no manifest or
    // no clock object: unknown).
    size_t clock_synced = 0, clock_unsynchronised = 0, clock_unknown = 0;
    // Unexpired holds (archive/holds.hpp) and their bundles' bytes: copies of packets kept
    // beside the capture files, not counted in `bytes`.
    size_t holds = 0;
    uint64_t hold_bytes = 0;
    std::vector<StreamStats> streams;
    std::vector<FileStats> file_list;
    std::vector<std::string> errors;
};

Result<StoreStats> collect_stats(const StatsOptions& options);
std::string format_stats(const StoreStats& stats, bool per_file, uint64_t gap_threshold_ns);
std::string format_stats_json(const StoreStats& stats);

}  // namespace linecap::store
