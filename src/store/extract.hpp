// `linecap extract`: the packets of a time range (and optional libpcap filter) from all
// capture files of a store (pcap and pcapng alike), merged in timestamp order into one
// nanosecond pcap, or a pcapng with one interface per source stream.
//
// Plan: the store inventory's name-derived time bounds select the files whose span meets
// [from, to); a file's valid index narrows that to the blocks whose time span meets the
// range and that may match the filter (store/filter_plan.hpp) — for a local plain file
// with a version-2 index, to the records in them that may match, read by their byte
// ranges (records closer than 4 KiB read as one); a file without a usable
// index (missing, stale, corrupt) is scanned, with a warning naming it. The indexes are
// loaded, with the lookups the plan makes, a few files ahead of it on threads of their
// own, so their disk reads overlap. Execution: one
// cursor per file, opened only when the merge reaches the file's first possible
// timestamp; each cursor yields the packets with from <= ts < to that the filter accepts
// (pcap_offline_filter, exact); a heap merges them by (timestamp, file name order) —
// within a file, file order. Bytes and timestamps are written exactly as stored.
//
// Exact whatever the order of timestamps in a file: a cursor never stops early at a
// timestamp >= to (a file whose clock stepped back, or a timestamp corrupted into the
// future, would otherwise lose the packets after it); an index block is read when its
// own [min, max] meets the range. A record of an indexed block stamped outside that
// block's span means the file changed after it was indexed (bit rot with the mtime
// kept): the cursor warns and reads the rest of the file, including what the index had
// let it skip, so the answer stays that of a scan.
//
// Integrity: a file the query reads whose bytes may not be what was captured is a
// *concern*, reported once per file (ExtractReport::concerns, on_concern): a file the
// background scrub marked damaged (archive/scrub.hpp: its bytes differ from its manifest),
// or a file whose index is older than its bytes (index_staleness: it changed after it
// was indexed). Both are scanned rather than read through their index, so the packets
// written are what the file holds now; whether to trust them is the caller's decision
// (the CLI exits 3 unless --accept-damaged; the HTTP API reports them).
//
// A file that cannot be read (bad header, corrupt or truncated record, I/O error) is an
// error naming the file: the packets before the problem are kept, the other files are
// still read, and the output is a valid pcap (exit code 1 in the CLI).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "archive/layout.hpp"
#include "archive/store_inventory.hpp"
#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct FileConcern {
    std::string path;
    bool damaged = false;       // marked by the scrub
    bool stale_index = false;   // its index is older than its bytes
    std::string reason;         // one line: the marker's finding, or why the index is stale
};

// One flow or range of a query that asks for several at once (`extract --alert`, a hold
// made from alert records): its time range, filter and Community ID, as ExtractOptions's.
struct Selection {
    uint64_t from_ns = 0;
    uint64_t to_ns = UINT64_MAX;  // exclusive
    std::string filter;
    std::string community_id;
    // A libpcap filter every packet of the selection passes, used only to prune by the
    // index (the flow's 5-tuple beside its Community ID). The exact match is the Community
    // ID's alone: it also finds the flow's VLAN-tagged packets, which "host A" does not.
    std::string index_hint;
};

struct ExtractOptions {
    std::string directory;
    // The store to read (an archive, or local files and an archive as one); nullptr: the
    // directory, through open_store().
    const StoreBackend* store = nullptr;
    std::string file_template = kDefaultFileTemplate;
    uint64_t from_ns = 0;
    uint64_t to_ns = UINT64_MAX;       // exclusive
    std::string filter;                 // libpcap syntax; empty = everything
    // Community ID v1 ("1:…", packet/community_id.hpp); empty = any. Applied exactly per
    // packet after the filter. The index cannot prune by it (a hash names no key), so a
    // caller that knows the flow's addresses or ports passes them as the filter as well.
    std::string community_id;
    // Several selections in one answer, merged once (each packet written once): when not
    // empty, a packet is written when it matches any of them, and from_ns, to_ns, filter
    // and community_id above are not used.
    std::vector<Selection> any_of;
    bool use_index = true;
    // Refuse (an error, nothing written) when a file in the range was not captured on a
    // synchronised host clock as its manifest records it (clock.sync other than synced,
    // or no manifest saying so).
    bool require_synced = false;
    // pcap: one link type and snaplen (the sources', when they agree); pcapng: one
    // interface per source stream, named "<port>:<queue>" (see extract.cpp).
    FileKind output_format = FileKind::pcap;
    // Output limits. max_bytes: the output (header included) never exceeds it; the merge
    // stops before the first record (pcapng: or the interface description it needs) that
    // would, and the report says so (0 = no limit; smaller than the file header: error).
    // should_stop: polled between records; true ends the output cleanly at a record
    // boundary (time limits, a client that went away).
    uint64_t max_bytes = 0;
    uint64_t max_packets = 0;  // the output ends after this many packets (0 = no limit)
    std::function<bool()> should_stop;
    // One line each, as they happen (the report collects them too).
    std::function<void(const std::string&)> on_warning;
    std::function<void(const std::string&)> on_error;
    std::function<void(const FileConcern&)> on_concern;
};

struct ExtractReport {
    size_t files_in_store = 0;
    size_t files_selected = 0;     // by name-derived time bounds
    size_t files_indexed = 0;      // read through a valid index
    size_t files_scanned = 0;      // read whole (no usable index)
    size_t files_skipped_by_index = 0;  // no block can match
    uint64_t blocks_total = 0;     // in the indexed files
    uint64_t blocks_read = 0;
    uint64_t records_read_alone = 0;  // of those blocks, records read by their own byte range
    uint64_t bytes_read = 0;       // record bytes parsed
    uint64_t packets_examined = 0;
    uint64_t packets_written = 0;
    uint64_t bytes_written = 0;    // the whole output, file header included
    uint32_t snaplen = 0;
    uint32_t interfaces = 0;       // pcapng output: interfaces described
    // Why the output ended before the query's end: "" (it did not), "max_bytes",
    // "stopped" (should_stop said so).
    std::string ended_early;
    std::string plan;              // the filter plan, described
    std::vector<std::string> warnings;
    std::vector<std::string> errors;
    std::vector<FileConcern> concerns;  // in the order the files were planned
};

// The pcapng interface name of a packet from `appliance` (a store spanning several, or
// one answer of `extract --remote`) whose own interface is `interface` ("<port>:<queue>"):
// "<appliance> <interface>", so every packet says where it was captured. Inline: the
// fan-out's merge (api/remote_merge.cpp), fuzzed on its own, needs none of the rest.
inline std::string appliance_interface_name(const std::string& appliance, const std::string& interface) {
    return interface.empty() ? appliance : appliance + " " + interface;
}

// Writes the result to `out_fd` (a file or a pipe). Returns an error (nothing usable
// written) only for problems with the query itself: bad filter, unreadable directory,
// bad template, failure to write the output.
Result<ExtractReport> extract(const ExtractOptions& options, int out_fd);
// The same into any sink (the retrieval API streams it).
Result<ExtractReport> extract(const ExtractOptions& options, format::ByteSink& out);

// The file `linecap extract -o PATH` writes: a layout::AtomicFile at PATH, so PATH appears
// complete or not at all, is only ever a regular file (a device node, FIFO, socket,
// directory or symlink at PATH is refused, never replaced or followed) and the temporary
// goes when the AtomicFile does. Refused too when PATH lies inside `store_directory`
// (or below it; "" = no store, as for answers fetched from appliances): the output would
// become part of the store it was read from. Errors name
// PATH.
Result<layout::AtomicFile> open_extract_output(const std::string& path, const std::string& store_directory);

}  // namespace linecap::store
