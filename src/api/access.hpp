// Who may ask for packets, and the record of who did.
//
// TokenTable: bearer tokens from a file of "NAME TOKEN" lines. The file must be a
// regular file with no group or other permission bits (a token readable by every local
// user is no secret); loading refuses it otherwise, naming the mode. Tokens are kept
// only as SHA-256 digests and compared in constant time.
//
// AuditLog: one JSON object per line, appended with one write() (O_APPEND: lines from
// concurrent requests never interleave), for chain of custody: who (certificate
// subject or token name), from where, when, the query, status, bytes and packets
// returned, and how it ended (complete, truncated at max_bytes, time limit, client
// disconnected, refused: …).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace linecap::api {

class TokenTable {
public:
    static Result<TokenTable> load(const std::string& path);
    // The token's name, or nullopt.
    std::optional<std::string> name_for(std::string_view token) const;
    // `text` with every substring that is one of the tokens replaced by "[redacted]".
    std::string redact(std::string text) const;
    size_t size() const { return entries_.size(); }

private:
    struct Entry {
        std::string name;
        std::array<uint8_t, 32> digest;
    };
    std::vector<Entry> entries_;
    std::vector<size_t> lengths_;  // of the tokens, each once (redact() tries each)
};

// The request as the audit record names it: the percent-decoded path and query (so a
// grep finds "/api/v1/packets" however it was escaped), the values of parameters named
// like credentials (access_token, token, password, ...) and any text that is one of the
// tokens replaced by "[redacted]", at most 4096 characters.
std::string audit_target(std::string_view path, std::string_view raw_query, const TokenTable* tokens);

struct AuditRecord {
    uint64_t start_ns = 0;      // wall clock
    double seconds = 0;
    std::string who;            // "cert:<subject>", "token:<name>", "unauthenticated", "-" (none valid)
    std::string peer;           // address:port
    std::string method;
    std::string target;         // audit_target(): decoded, credentials redacted
    int status = 0;
    uint64_t bytes = 0;         // body bytes sent
    uint64_t packets = 0;       // whole packet records among those bytes
    std::string outcome;
    std::string credential_refused;  // a credential presented and not accepted ("" = none)
};

class AuditLog {
public:
    // Appends to `path` (created 0640); errors name the path.
    static Result<std::unique_ptr<AuditLog>> open(const std::string& path);
    ~AuditLog();
    void write(const AuditRecord& record);
    static std::string format(const AuditRecord& record);

private:
    AuditLog() = default;
    int fd_ = -1;
    std::string path_;
    std::mutex mu_;  // for the error report only; the append itself is one write()
    bool reported_failure_ = false;
};

}  // namespace linecap::api
