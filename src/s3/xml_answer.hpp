// The XML answers of an S3 store — ListObjectsV2 pages, ListMultipartUploads, the upload id
// of a new multipart upload, the result of completing one, and <Error> documents — read by
// expat as they arrive: the client feeds each piece libcurl hands its write callback, so an
// answer is never held whole, and a store that answers without end is refused at a bound
// rather than read until memory runs out.
//
// Expat resolves entities and CDATA; its protection against entity expansion ("billion
// laughs", expat >= 2.4; Debian 12 has 2.5) stays at its defaults. What expat accepts is
// then checked against what S3 sends: nesting, the text of one element, the entries of one
// page, numbers that are numbers. Every refusal is one line with no control character from
// the peer in it; the client prefixes the request and the endpoint. The result, and any
// error, is the same however the answer is split into pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "s3/client.hpp"

namespace linecap::s3 {

struct XmlLimits {
    uint64_t answer_bytes = 16ull << 20;  // one answer; a ListObjectsV2 page of 1000 keys is < 2 MiB
    size_t text_bytes = 64u << 10;        // the text of one element (a key is at most 1 KiB)
    unsigned depth = 16;                  // elements nested; S3's answers nest 3 deep
    size_t entries = 10000;               // Contents + CommonPrefixes + Upload; a page has <= 1000
};

// What an answer said; which fields are filled depends on its document element.
struct XmlAnswer {
    std::string root;            // the document element's name: ListBucketResult, Error, ...
    Listing listing;             // ListBucketResult (next_token only when IsTruncated is true)
    bool truncated = false;      // ListBucketResult's IsTruncated
    std::vector<Upload> uploads;  // ListMultipartUploadsResult
    std::string upload_id;       // InitiateMultipartUploadResult
    std::string code, message;   // Error
};

class XmlAnswerReader {
public:
    XmlAnswerReader() : XmlAnswerReader(XmlLimits{}) {}
    explicit XmlAnswerReader(XmlLimits limits);
    ~XmlAnswerReader();
    XmlAnswerReader(const XmlAnswerReader&) = delete;
    XmlAnswerReader& operator=(const XmlAnswerReader&) = delete;

    // The next piece of the answer; false once it is refused (error() says why; later
    // pieces are ignored).
    bool feed(std::string_view bytes);
    // The answer ended; false when it is not a whole document or was refused.
    bool finish();

    bool failed() const { return !error_.empty(); }
    // Set by feed()/finish() on refusal: "answer is not XML: <expat's message> at line L",
    // "answer longer than 16 MiB", "<Size> of key K is not a number of bytes: 'x'", ...
    const std::string& error() const { return error_; }
    const XmlAnswer& answer() const { return answer_; }
    XmlAnswer& answer() { return answer_; }

    struct Parser;

private:
    void fail(std::string why);

    XmlLimits limits_;
    uint64_t bytes_ = 0;
    bool finished_ = false;
    std::string error_;
    XmlAnswer answer_;
    std::unique_ptr<Parser> parser_;
};

// An ETag as S3 sends it (in a header or a listing) without its quotes.
inline std::string unquote(std::string_view s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return std::string(s);
}

}  // namespace linecap::s3
