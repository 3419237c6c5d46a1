// `linecap serve`: the retrieval API over HTTP(S) (doc/api.md).
//
//   GET /                  the page (status, query form, size, download)
//   GET /api/v1/packets    streams the pcap `linecap extract` writes for the same query
//   GET /api/v1/size       {packets, bytes, ...} of that answer, without the packets
//   GET /api/v1/files      the capture files of a time range
//   GET /api/v1/status     ports, rates, drops by reason, disk, retention horizon
//   POST /query            Stenographer's query language, its answer the pcap
//   POST|GET /api/v1/holds, DELETE /api/v1/holds/ID   make, list, release holds
//
// A separate process from linecapd, on purpose: it runs unprivileged with read-only
// access to the store, at idle CPU and I/O priority, and whatever a client does to it
// (or it does wrong) cannot take the capture down; it reads linecapd's state from
// linecapd's own metrics endpoint. Packet answers are the store library's extract()
// (store/extract.hpp) writing into a pipe on a thread of their own; the HTTP thread
// sends what comes out as chunks and ends with a trailer saying how the answer ended.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "store/cli.hpp"
#include "util/result.hpp"

namespace linecap::api {

class ApiServer {
public:
    // Checks the configuration (TLS files, tokens file permissions, loopback rules, audit
    // log) and binds the listener. Errors are config errors naming the key or file.
    // `store`: the store to answer over when it is not the configuration's directory (an
    // archive, or the directory and an archive as one); /metrics then counts the bytes
    // fetched from the archive (linecap_archive_read_bytes_total).
    static Result<std::unique_ptr<ApiServer>> create(const Config& config, store::QueryStore store = {});
    ~ApiServer();
    // Serves until stop() (from another thread or a signal handler thread).
    Status run();
    void stop();
    // "http://127.0.0.1:8080" / "https://…": where it listens (the port resolved).
    std::string url() const;

private:
    ApiServer();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The `linecap serve` command: --config FILE [--dir DIR] [--template T] [--archive URL and
// its options, store/cli.hpp: `options`].
int serve_main(const std::string& config_path, const std::string& dir_override, const std::string& template_override,
               const CommandOptions& options = {});

}  // namespace linecap::api
