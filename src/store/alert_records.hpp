// Alert and flow records as queries: the pivot from a Suricata alert or a Zeek connection
// to its packets (`linecap extract --alert FILE|-`).
//
// Input: one JSON object per line — Suricata's EVE JSON (event_type alert, flow, or any
// record with src_ip/dest_ip) or Zeek's conn.log in JSON (LogAscii::use_json: ts, id.orig_h,
// id.resp_h, ...). Each record becomes one flow query over the record's span widened by a
// margin: by its Community ID where it carries one (community_id), else by its 5-tuple as a
// libpcap filter (both directions). Spans: EVE flow.start to flow.end (else the record's
// timestamp), Zeek ts to ts + duration. A record's two hosts are IP addresses of one
// version. Lines that are not such records are counted and named (line number and why),
// never guessed at.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "store/extract.hpp"
#include "util/result.hpp"

namespace linecap::store {

struct FlowQuery {
    std::string community_id;  // "1:..." when the record carries one, else empty
    std::string filter;        // the 5-tuple (both directions) when it does not
    uint64_t from_ns = 0;      // [from, to): the record's span widened by the margin
    uint64_t to_ns = 0;
    std::string source;        // "line N: suricata alert 2019401 ..." / "line N: zeek conn CxYz..."
};

struct AlertRecords {
    std::vector<FlowQuery> queries;   // in input order
    std::vector<std::string> skipped; // "line N: why", for lines that are no flow record
    // Which of the skipped lines are broken rather than other events: not JSON, or a flow
    // record (src_ip / id.orig_h) whose fields do not read. Indexes into skipped.
    std::vector<size_t> malformed;
};

// Reads every line of IN. Errors only for input that is not JSON lines at all (the first
// non-empty line does not parse) or more than MAX_RECORDS records.
Result<AlertRecords> read_alert_records(std::istream& in, uint64_t margin_ns, size_t max_records = 100000);

// The records' flows as extract's selections: by Community ID (its 5-tuple only as the
// index hint) or by 5-tuple. Refused whole, every malformed line named ("line N: why",
// joined by "; "): the broken skipped lines and records whose community_id does not
// parse — an answer silently missing a flow would look complete.
Result<std::vector<Selection>> flow_selections(const AlertRecords& records);

}  // namespace linecap::store
