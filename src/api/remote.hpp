// `linecap extract --remote URL[,URL…]`: one query fanned out to several appliances'
// retrieval APIs at once, the answers merged in timestamp order into one file.
//
// Each appliance's answer is received into an unlinked temporary file (the merge needs
// the first packet of every answer before it can write anything, and a slow appliance
// must not hold the others' data in memory); then a k-way merge by (timestamp,
// appliance order), read with format::CaptureReader and written with
// format::CaptureWriter, writes pcapng with one interface per appliance and source
// stream (if_name = "host:port <port>:<queue>", if_description = the appliance's URL and
// the stream's description), so every packet says where it was captured — or pcap,
// which cannot say it. max_bytes bounds each appliance's answer, not the merged file. An appliance that cannot be reached, refuses,
// stalls longer than the timeout, or ends its answer early is reported on one line; the
// others' packets are still returned (exit status 1).
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
    uint64_t stall_timeout_s = 30;   // no byte for this long: the appliance is given up
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
};

// Errors: only for problems before any appliance is asked (bad options, token file).
Result<RemoteReport> extract_remote(const RemoteOptions& options, int out_fd);

}  // namespace linecap::api
