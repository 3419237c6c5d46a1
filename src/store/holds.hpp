// Making a hold (archive/holds.hpp): the packets of a query written into a new evidence
// bundle under the store, with the record of who asked, why, and until when. The CLI's
// `linecap hold create` and the API's POST /api/v1/holds both call create_hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "archive/holds.hpp"
#include "store/extract.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct HoldRequest {
    ExtractOptions query;       // directory, template, selection; output is pcap
    std::string origin;         // where the query came from, kept with it ("alert records of FILE")
    std::string created_by;
    std::string reason;         // required: a hold says why it was made
    uint64_t expires_ns = 0;    // 0 = until released
};

struct HoldMade {
    Hold hold;
    ExtractReport report;
};

// Writes DIR/holds/ID/ (created with the holds directory when missing) and returns it.
// Refused, nothing left behind: no reason, an expiry not after `now_ns`, a query error,
// an answer cut by the query's limits (max_bytes, should_stop), and a query without
// packets (a hold of nothing would only look like kept evidence).
Result<HoldMade> create_hold(const HoldRequest& request, uint64_t now_ns);

}  // namespace linecap::store
