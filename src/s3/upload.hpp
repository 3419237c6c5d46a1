// One file into the object store, whole and verified, or not at all.
//
// A file up to UploadOptions::part_bytes goes up in one PUT, a larger one as a multipart
// upload of part_bytes parts (the store's minimum part is 5 MiB): either way no object exists
// under the key until the last byte arrived — a multipart upload that never completes is not
// an object, only an entry abort_uploads() removes — so a crash or a kill mid-upload leaves
// nothing that looks finished. After the upload a HEAD must show the file's size and the
// metadata that was sent (the caller puts the manifest's SHA-256 there); otherwise the object
// is deleted and the upload fails. A request that failed in a way that can pass (no answer,
// 5xx, 429) is retried with exponential backoff; a refusal (403, 404, ...) is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "s3/client.hpp"
#include "util/result.hpp"

namespace linecap::s3 {

struct UploadOptions {
    uint64_t part_bytes = 16ull << 20;        // also the largest file sent in one PUT
    unsigned attempts = 6;                    // per request
    std::chrono::milliseconds first_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
    uint64_t max_bytes_per_second = 0;        // 0: no cap
    // Waits before a retry or to keep under the cap; returns false when the caller is
    // stopping (the upload then ends, aborted). Default: sleeps.
    std::function<bool(std::chrono::milliseconds)> wait;
    // Called before every request sent again, also when the upload fails in the end
    // (UploadReport::retries is only there when it succeeds). Empty: nobody counts.
    std::function<void()> on_retry;
};

struct UploadReport {
    uint64_t bytes = 0;     // the file's size
    unsigned parts = 0;     // 0: one PUT
    unsigned retries = 0;   // requests sent again
    std::string sha256;     // hex, of the bytes sent, in order: what the caller checks its metadata against
};

Result<UploadReport> upload_file(Client& client, const std::string& path, const std::string& key,
                                 const Metadata& metadata, const UploadOptions& options = {});

// Aborts every unfinished multipart upload under PREFIX (what a crash left); returns how many.
Result<size_t> abort_uploads(Client& client, const std::string& prefix);

}  // namespace linecap::s3
