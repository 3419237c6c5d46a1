// Holds: evidence bundles kept under the store, past what retention would keep.
//
// A hold is a directory DIR/holds/ID/ holding the packets of a query as they were when
// it was made (store/holds.hpp makes them):
//   packets.pcap   the query's answer, as `linecap extract` writes it
//   hold.json      who made it and when, why, the query, its expiry, packets, bytes and
//                  the SHA-256 of packets.pcap, the integrity findings of the files read
//   SHA256SUMS     `sha256sum -c SHA256SUMS` checks both files
// The store's listing is flat (archive/store_inventory.hpp), so nothing that reads or
// deletes capture files — retention, the scrub, recovery, extract — ever sees a hold:
// retention cannot delete one. A hold goes when it is released, or once its expiry has
// passed: expired holds are removed whenever holds are listed (linecap hold list and
// create, the API's /api/v1/holds) and are never counted or listed after their expiry,
// even while still on disk (linecap stats and the daemon's metrics count without
// writing anything).
//
// A bundle appears whole or not at all: it is written into a hidden .new-XXXXXX under
// DIR/holds and renamed to its ID; a release renames it to a hidden .gone-ID first, so
// a hold half removed is never listed. Hidden entries older than an hour are removed by
// the next listing that removes expired holds (a crash left them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/metric.hpp"
#include "util/result.hpp"

namespace linecap {

inline constexpr const char* kHoldsDirectory = "holds";
inline constexpr const char* kHoldPacketsName = "packets.pcap";
inline constexpr const char* kHoldRecordName = "hold.json";
inline constexpr const char* kHoldSumsName = "SHA256SUMS";

struct Hold {
    std::string id;             // "20261130T021000Z-1a2b3c4d"
    std::string created_by;     // "user:alice", "cert:CN=…", "token:NAME"
    uint64_t created_ns = 0;
    uint64_t expires_ns = 0;    // 0 = until released
    std::string reason;
    std::string query_json;     // the query as a JSON value (what was asked for)
    uint64_t packets = 0;
    uint64_t packet_bytes = 0;  // of packets.pcap
    std::string sha256;         // of packets.pcap, hex
    std::vector<std::string> findings;  // integrity concerns and errors of the files read
    uint64_t bytes = 0;         // the whole bundle on disk (set by list_holds)
};

// hold.json's text, and back (errors name what is missing).
std::string hold_record_json(const Hold& hold);
Result<Hold> parse_hold_record(std::string_view text);
// A listing as JSON: {"holds": [hold.json's fields and "bytes" (the bundle on disk)...],
// "count": N, "bytes": TOTAL} — what `linecap hold list --json` and GET /api/v1/holds print.
std::string holds_json(const std::vector<Hold>& holds);

// Letters, digits and '-', 1..64 characters, not starting with '.' or '-': a name that is
// one directory entry of DIR/holds and nothing else.
bool valid_hold_id(std::string_view id);

std::string holds_path(const std::string& store_directory);

// The daemon's count of them (unlabelled; metrics/collector.cpp lists without removing).
inline constexpr MetricDecl kHoldsMetric{
    "linecap_holds", "Unexpired holds: evidence bundles under the output directory's holds/ that retention keeps.",
    MetricType::gauge};
inline constexpr MetricDecl kHoldBytesMetric{
    "linecap_hold_bytes",
    "Bytes of the unexpired holds' bundles (not counted in linecap_retention_bytes nor in output.retention.max_bytes).",
    MetricType::gauge};

struct HoldListing {
    std::vector<Hold> holds;                 // unexpired, oldest first
    std::vector<std::string> removed;        // "ID: expired at TIME", removed by this listing
    std::vector<std::string> problems;       // "ID: why" for entries that are no readable hold
    uint64_t bytes = 0;                      // of the listed holds
};

// The holds of a store (none when DIR/holds does not exist). With `remove_expired`, holds
// whose expiry is at or before `now_ns` are removed (and crash leftovers older than an
// hour); without, they are only left out (the daemon's metrics, which write nothing).
HoldListing list_holds(const std::string& store_directory, uint64_t now_ns, bool remove_expired);

// Removes DIR/holds/ID. Errors: no such hold, an ID that is not one, an I/O error.
Status release_hold(const std::string& store_directory, const std::string& id);

// Removes DIR/holds/NAME (its files, then itself), renamed hidden first unless it is.
Status remove_bundle(const std::string& holds_directory, const std::string& name);

}  // namespace linecap
