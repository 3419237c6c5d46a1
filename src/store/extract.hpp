// `linecap extract`: the packets of a time range (and optional libpcap filter) from all
// capture files of a store, merged in timestamp order into one nanosecond pcap.
//
// Plan: the catalog's name-derived time bounds select the files whose span meets
// [from, to); a file's valid index narrows that to the blocks whose time span meets the
// range and that may match the filter (store/filter_plan.hpp); a file without a usable
// index (missing, stale, corrupt) is scanned, with a warning naming it. Execution: one
// cursor per file, opened only when the merge reaches the file's first possible
// timestamp; each cursor yields the packets with from <= ts < to that the filter accepts
// (pcap_offline_filter, exact); a heap merges them by (timestamp, file name order) —
// within a file, file order. Bytes and timestamps are written exactly as stored.
//
// A file that cannot be read (bad header, corrupt or truncated record, I/O error) is an
// error naming the file: the packets before the problem are kept, the other files are
// still read, and the output is a valid pcap (exit code 1 in the CLI).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "store/catalog.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct ExtractOptions {
    std::string directory;
    std::string file_template = kDefaultFileTemplate;
    uint64_t from_ns = 0;
    uint64_t to_ns = UINT64_MAX;       // exclusive
    std::string filter;                 // libpcap syntax; empty = everything
    // Community ID v1 ("1:…", store/community_id.hpp); empty = any. Applied exactly per
    // packet after the filter. The index cannot prune by it (a hash names no key), so a
    // caller that knows the flow's addresses or ports passes them as the filter as well.
    std::string community_id;
    bool use_index = true;
    // Output limits. max_bytes: the output (header included) never exceeds it; the merge
    // stops before the first record that would, and the report says so (0 = no limit).
    // should_stop: polled between records; true ends the output cleanly at a record
    // boundary (time limits, a client that went away).
    uint64_t max_bytes = 0;
    std::function<bool()> should_stop;
    // One line each, as they happen (the report collects them too).
    std::function<void(const std::string&)> on_warning;
    std::function<void(const std::string&)> on_error;
};

struct ExtractReport {
    size_t files_in_store = 0;
    size_t files_selected = 0;     // by name-derived time bounds
    size_t files_indexed = 0;      // read through a valid index
    size_t files_scanned = 0;      // read whole (no usable index)
    size_t files_skipped_by_index = 0;  // no block can match
    uint64_t blocks_total = 0;     // in the indexed files
    uint64_t blocks_read = 0;
    uint64_t bytes_read = 0;       // record bytes parsed
    uint64_t packets_examined = 0;
    uint64_t packets_written = 0;
    uint64_t bytes_written = 0;    // the whole output, file header included
    uint32_t snaplen = 0;
    // Why the output ended before the query's end: "" (it did not), "max_bytes",
    // "stopped" (should_stop said so).
    std::string ended_early;
    std::string plan;              // the filter plan, described
    std::vector<std::string> warnings;
    std::vector<std::string> errors;
};

// Writes the result to `out_fd` (a file or a pipe). Returns an error (nothing usable
// written) only for problems with the query itself: bad filter, unreadable directory,
// bad template, failure to write the output.
Result<ExtractReport> extract(const ExtractOptions& options, int out_fd);

}  // namespace linecap::store
