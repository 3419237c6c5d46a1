// `linecap extract --remote URL[,URL…]`: one query fanned out to several appliances'
// retrieval APIs at once, the answers merged in timestamp order into one file.
//
// Each appliance's answer is received into a temporary file that has no name
// (O_TMPFILE; where the file system lacks it, a file unlinked as soon as it is created),
// so nothing is left behind however the process ends (SIGKILL included): the merge needs
// the first packet of every answer before it can write anything, and a slow appliance
// must not hold the others' data in memory. Then a k-way merge (remote_merge.hpp) by
// (timestamp, appliance order), read with format::CaptureReader and written with
// format::CaptureWriter, writes pcapng with one interface per appliance and source stream
// (if_name = "host:port <port>:<queue>", if_description = the appliance's URL and the
// stream's description), so every packet says where it was captured — or pcap, which
// cannot say it.
//
// An appliance is not trusted to bound its answer: the client cuts an answer larger
// than max_answer_bytes, all answers together larger than max_total_bytes, an answer
// still running at the deadline, one slower than min_rate bytes/s over stall_timeout_s,
// and every answer when the temporary directory's free space falls under
// min_free_bytes. A cut answer keeps the packets received whole before the cut and is
// reported on one line; an appliance that cannot be reached, refuses, or whose answer
// ends early is reported on one line too; the others' packets are still returned (exit
// status 1).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/query.hpp"
#include "util/result.hpp"

namespace linecap::api {

struct RemoteOptions {
    std::vector<std::string> urls;   // base URLs: https://sensor1:8443
    std::string cert, key;           // client certificate and key (PEM)
    std::string cacert;              // CA bundle for the servers' certificates; "" = system's
    std::string token_file;          // bearer token (the file's first line), mode 0600
    uint64_t connect_timeout_s = 10;
    uint64_t stall_timeout_s = 30;   // under min_rate for this long: the appliance is given up
    uint64_t min_rate = 1024;        // bytes/s, averaged over stall_timeout_s
    uint64_t deadline_s = 900;       // one appliance's whole answer
    uint64_t max_answer_bytes = 4ull << 30;  // one appliance's answer
    uint64_t max_total_bytes = 4ull << 30;   // all answers together
    uint64_t min_free_bytes = 256ull << 20;  // left free in the temporary directory
    bool pcapng = true;
    // The query, as /api/v1/packets parameters (from, to, filter, community_id, max_bytes;
    // format is added: the output's).
    Params params;
    std::function<void(const std::string&)> on_error;  // one line per appliance problem
};

struct RemoteReport {
    size_t appliances_ok = 0;
    size_t appliances_failed = 0;
    uint64_t packets_written = 0;
    std::vector<std::string> errors;
    size_t answers_cut = 0;          // by the client's own bounds
};

// Errors: only for problems before any appliance is asked (bad options, token file).
Result<RemoteReport> extract_remote(const RemoteOptions& options, int out_fd);

}  // namespace linecap::api
