// A client of an S3-compatible object store (Ceph RGW, MinIO, AWS S3): the requests the
// archive tier needs — objects put whole or by multipart upload, read whole or by byte range,
// listed by prefix, deleted — over libcurl, which signs each request with AWS Signature
// Version 4 (CURLOPT_AWS_SIGV4). One Client holds one connection and is used by one thread.
//
// Every request sends x-amz-content-sha256 with the body's SHA-256, so the store refuses a
// body that arrived altered; objects carry user metadata (x-amz-meta-*) that a HEAD returns.
// An error names the request ("S3 PUT s3://bucket/key") and what the store or the network
// said; last_failure() tells the caller whether trying again can help. Every answer is
// bounded — XML answers by s3/xml_answer.hpp's limits, objects by what was asked, the body
// of a PUT, DELETE or POST answer that nobody reads by 64 KiB, headers by 256 KiB — and one
// past its bound is cut off, one error line naming the request and the endpoint.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "s3/credentials.hpp"
#include "util/result.hpp"

namespace linecap::s3 {

struct Endpoint {
    std::string url = "http://127.0.0.1:7480";  // scheme://host[:port], no path
    std::string region = "us-east-1";
    bool path_style = true;     // URL/BUCKET/KEY (RGW, MinIO); false: BUCKET.host/KEY (AWS)
    std::string ca_file;        // TLS: the CA bundle that signed the endpoint's certificate
    long connect_timeout_ms = 5000;
    // A transfer slower than low_speed_bytes per second for low_speed_seconds is abandoned:
    // a stalled store does not hold a caller forever.
    long low_speed_bytes = 1024;
    long low_speed_seconds = 30;
};

// The largest object get_object() reads whole unless its caller says less: an answer
// longer than that is refused, not held (the archive's indexes and manifests are far smaller).
inline constexpr uint64_t kMaxObjectBytes = 256ull << 20;

using Metadata = std::map<std::string, std::string>;  // x-amz-meta-NAME (names lower-case)

struct ObjectInfo {
    std::string key;
    uint64_t size = 0;
    std::string etag;           // without quotes
    std::string last_modified;  // as the store wrote it
    Metadata metadata;          // HEAD only
};

struct Listing {
    std::vector<ObjectInfo> objects;
    std::vector<std::string> common_prefixes;  // with a delimiter
    std::string next_token;                    // empty: nothing more
};

struct Upload {
    std::string key;
    std::string upload_id;
};

// Why the last request failed.
struct Failure {
    long http_status = 0;  // 0: no answer (connection refused, timeout, TLS)
    std::string code;      // the store's error code (NoSuchKey, SignatureDoesNotMatch, ...)
    bool retryable() const;  // no answer, 5xx, 429, RequestTimeout, SlowDown
};

class Client {
public:
    Client(Endpoint endpoint, Credentials credentials, std::string bucket);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    const std::string& bucket() const { return bucket_; }

    Status put_object(const std::string& key, std::string_view body, const Metadata& metadata = {});
    Result<ObjectInfo> head_object(const std::string& key);
    // The whole object, or LENGTH bytes from OFFSET (a Range GET: 206). An answer longer
    // than MAX_BYTES, or than the range, is refused (an error), never read to its end.
    Result<std::string> get_object(const std::string& key, uint64_t max_bytes = kMaxObjectBytes);
    Result<std::string> get_range(const std::string& key, uint64_t offset, uint64_t length);
    // One page (up to 1000 keys) of ListObjectsV2 under PREFIX; pass next_token back for more.
    // XML answers (this, multipart, errors) are read as they arrive (s3/xml_answer.hpp),
    // each bounded: 16 MiB, 64 KiB of text in one element, 10000 entries.
    Result<Listing> list_objects(const std::string& prefix, const std::string& token = "",
                                 const std::string& delimiter = "");
    Status delete_object(const std::string& key);

    // Multipart: every part but the last at least 5 MiB; complete with the parts' ETags in order.
    Result<std::string> create_multipart_upload(const std::string& key, const Metadata& metadata = {});
    Result<std::string> upload_part(const std::string& key, const std::string& upload_id, unsigned part_number,
                                    std::string_view body);
    Status complete_multipart_upload(const std::string& key, const std::string& upload_id,
                                     const std::vector<std::string>& part_etags);
    Status abort_multipart_upload(const std::string& key, const std::string& upload_id);
    Result<std::vector<Upload>> list_multipart_uploads(const std::string& prefix);

    Status create_bucket();

    const Failure& last_failure() const { return failure_; }

    // Once *FLAG is true a transfer in progress is abandoned (an error with no answer): a
    // stopping caller does not wait for a stalled store. Null: never.
    void set_cancel(const std::atomic<bool>* flag) { cancel_ = flag; }

    struct Request;
    struct Response;

private:
    Result<Response> perform(const Request& request);
    // "S3 GET s3://bucket/?list-type=2&prefix=p at http://host:port": errors about an answer.
    std::string answer_what(const std::string& method, const std::string& key, const std::string& query) const;
    std::string url_for(const std::string& key, const std::string& query) const;

    Endpoint endpoint_;
    Credentials credentials_;
    std::string bucket_;
    struct Curl;
    std::unique_ptr<Curl> curl_;
    Failure failure_;
    const std::atomic<bool>* cancel_ = nullptr;
};

// "s3://BUCKET/KEY": how messages name an object.
inline std::string object_url(std::string_view bucket, std::string_view key) {
    return "s3://" + std::string(bucket) + "/" + std::string(key);
}

// AWS's URI encoding: unreserved characters as they are, '/' kept when KEEP_SLASH, every
// other byte %XX (upper-case hex). Keys in paths, values in query strings.
std::string uri_encode(std::string_view text, bool keep_slash);

}  // namespace linecap::s3
