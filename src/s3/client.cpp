#include "s3/client.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "s3/xml_answer.hpp"
#include "util/curl_library.hpp"
#include "util/human_bytes.hpp"
#include "util/one_line.hpp"
#include "util/sha256.hpp"

namespace linecap::s3 {

// What a successful answer's body is: read as XML, kept as an object's bytes (bounded), or
// a few bytes nobody reads. An error answer (status >= 300) is always read as XML.
enum class Answer { discard, xml, object };

struct Client::Request {
    std::string method = "GET";
    std::string key;     // empty: the bucket itself
    std::string query;   // canonical: parameters sorted, values encoded, "name=" for subresources
    std::string_view body;
    std::vector<std::string> headers;
    Answer answer = Answer::discard;
    std::string_view root;    // xml: the document element the answer must have
    uint64_t max_bytes = 0;   // object: the most bytes taken
    // object, a Range GET of max_bytes from range_offset: from a store that ignores Range
    // and answers 200 with the whole object, the bytes before the range are skipped and
    // the transfer ends once the range is in.
    bool range = false;
    uint64_t range_offset = 0;
};

struct Client::Response {
    long status = 0;
    std::string body;  // object
    XmlAnswer xml;     // xml
    std::map<std::string, std::string> headers;  // names lower-case
};

namespace {

std::string sha256_hex(std::string_view bytes) {
    return Sha256::of({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The answer's headers, bounded: libcurl bounds one line, not how many there are.
constexpr uint64_t kHeaderBytes = 256u << 10;
struct HeaderSink {
    const curl_socket_t* socket;  // the connection's (Client::Curl::socket)
    std::map<std::string, std::string>* headers;
    uint64_t bytes = 0;
    bool refused = false;
};

// Acknowledges the answer's headers at once. A store that writes the headers and the body
// separately with Nagle's algorithm on (Ceph RGW's beast front end by default) holds a body
// shorter than a segment until the headers are acknowledged, and Linux delays that
// acknowledgement by up to 40 ms on a request-response connection: 40 ms for every small
// object, and for every object on loopback, where a segment is 64 KiB.
void acknowledge_now(curl_socket_t fd) {
    if (fd == CURL_SOCKET_BAD) return;
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
}

// The connection's socket, for acknowledge_now: recorded when libcurl makes it, forgotten
// when libcurl closes it (CURLINFO_ACTIVESOCKET says nothing until a transfer is done).
int socket_made(void* socket, curl_socket_t fd, curlsocktype) {
    *static_cast<curl_socket_t*>(socket) = fd;
    return CURL_SOCKOPT_OK;
}
int socket_closing(void* socket, curl_socket_t fd) {
    auto& known = *static_cast<curl_socket_t*>(socket);
    if (known == fd) known = CURL_SOCKET_BAD;
    return close(fd);
}

size_t collect_header(char* data, size_t size, size_t n, void* out) {
    auto& sink = *static_cast<HeaderSink*>(out);
    auto& headers = *sink.headers;
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue)
        headers.clear();
        sink.bytes = 0;
    }
    sink.bytes += line.size();
    if (sink.bytes > kHeaderBytes) {
        sink.refused = true;
        return 0;
    }
    if (line == "\r\n" || line == "\n") acknowledge_now(*sink.socket);  // the end of the headers
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
            value.remove_suffix(1);
        }
        headers[lower(std::string(line.substr(0, colon)))] = std::string(value);
    }
    return size * n;
}

// Where an answer's body goes, as libcurl hands it over. Every kind is bounded: a store
// that answers without end is cut off (the write callback returns 0) with a reason.
struct BodySink {
    CURL* curl = nullptr;
    Answer answer = Answer::discard;
    uint64_t max_bytes = 0;      // object
    bool range = false;          // object: a Range GET of max_bytes from range_offset
    uint64_t range_offset = 0;
    long status = -1;            // the answer's, read at its first byte
    uint64_t bytes = 0;          // of the body, all of it
    std::string body;            // object
    XmlAnswerReader xml;         // xml, and every error answer
    bool error_not_xml = false;  // an error answer that is not an S3 <Error> (a proxy's page)
    bool range_taken = false;    // a 200 to a Range GET: the range is in, the rest not wanted
    std::string refused;         // why the transfer was cut off
};

constexpr uint64_t kDiscardBytes = 64u << 10;

size_t take_object(BodySink& sink, std::string_view piece) {
    if (sink.range && sink.status == 200) {  // the store ignored Range: the range out of the whole
        const uint64_t before = sink.bytes - piece.size();
        if (sink.bytes <= sink.range_offset) return piece.size();
        if (before < sink.range_offset) piece.remove_prefix(static_cast<size_t>(sink.range_offset - before));
        const size_t room = static_cast<size_t>(sink.max_bytes - sink.body.size());
        sink.body.append(piece.substr(0, room));
        if (sink.body.size() < sink.max_bytes) return piece.size();
        sink.range_taken = true;
        return 0;
    }
    if (sink.body.size() + piece.size() > sink.max_bytes) {
        sink.refused = "answer longer than the " + std::to_string(sink.max_bytes) + " bytes " +
                       (sink.range ? "of the range asked for" : "an object may have here");
        return 0;
    }
    sink.body.append(piece);
    return piece.size();
}

size_t take_body(char* data, size_t size, size_t n, void* out) {
    auto& sink = *static_cast<BodySink*>(out);
    const std::string_view piece(data, size * n);
    if (sink.status < 0) {
        curl::easy_getinfo(sink.curl, CURLINFO_RESPONSE_CODE, &sink.status);
        curl_off_t announced = -1;
        curl::easy_getinfo(sink.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
        if (sink.answer == Answer::object && sink.status < 300 && !(sink.range && sink.status == 200) &&
            announced >= 0 && static_cast<uint64_t>(announced) > sink.max_bytes) {
            sink.refused = "the answer announces " + std::to_string(announced) + " bytes, more than the " +
                           std::to_string(sink.max_bytes) + " asked for";
            return 0;
        }
    }
    sink.bytes += piece.size();
    if (sink.answer == Answer::xml || sink.status >= 300) {
        const uint64_t bound = XmlLimits{}.answer_bytes;
        if (sink.error_not_xml) {  // not read, but not taken without end either
            if (sink.bytes <= bound) return piece.size();
            sink.refused = "HTTP " + std::to_string(sink.status) + " with an answer longer than " + human_bytes(bound, 0);
            return 0;
        }
        if (sink.xml.feed(piece)) return piece.size();
        if (sink.status >= 300 && sink.bytes <= bound) {
            sink.error_not_xml = true;  // the status says enough
            return piece.size();
        }
        sink.refused = (sink.status >= 300 ? "HTTP " + std::to_string(sink.status) + " with an " : std::string()) +
                       sink.xml.error();
        return 0;
    }
    if (sink.answer == Answer::discard) {
        if (sink.bytes <= kDiscardBytes) return piece.size();
        sink.refused = "answer longer than " + human_bytes(kDiscardBytes, 0) + " where no body was expected";
        return 0;
    }
    return take_object(sink, piece);
}

// libcurl's progress callback: non-zero abandons the transfer.
int cancelled(void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const std::atomic<bool>*>(flag)->load(std::memory_order_relaxed) ? 1 : 0;
}

struct UploadSource {
    std::string_view body;
    size_t offset = 0;
};

size_t read_body(char* buffer, size_t size, size_t n, void* in) {
    auto& src = *static_cast<UploadSource*>(in);
    const size_t len = std::min(size * n, src.body.size() - src.offset);
    std::memcpy(buffer, src.body.data() + src.offset, len);
    src.offset += len;
    return len;
}

std::vector<std::string> metadata_headers(const Metadata& metadata) {
    std::vector<std::string> headers;
    for (const auto& [name, value] : metadata) headers.push_back("x-amz-meta-" + lower(name) + ": " + value);
    return headers;
}

}  // namespace

struct Client::Curl {
    CurlEasy easy;
    std::string load_error;  // libcurl could not be loaded (util/curl_library.hpp)
    curl_socket_t socket = CURL_SOCKET_BAD;  // the connection libcurl keeps open
};

bool Failure::retryable() const {
    return http_status == 0 || http_status >= 500 || http_status == 429 || code == "RequestTimeout" ||
           code == "SlowDown";
}

std::string uri_encode(std::string_view text, bool keep_slash) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            out += char(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

Client::Client(Endpoint endpoint, Credentials credentials, std::string bucket)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)), bucket_(std::move(bucket)),
      curl_(std::make_unique<Curl>()) {
    if (auto library = curl::load(); library) curl_->easy.reset(curl::easy_init());
    else curl_->load_error = library.error().message;
    while (!endpoint_.url.empty() && endpoint_.url.back() == '/') endpoint_.url.pop_back();
}

Client::~Client() = default;

std::string Client::url_for(const std::string& key, const std::string& query) const {
    std::string url;
    if (endpoint_.path_style) {
        url = endpoint_.url + "/" + bucket_;
        if (!key.empty()) url += "/" + uri_encode(key, true);
    } else {
        const size_t scheme_end = endpoint_.url.find("://");
        const size_t host = scheme_end == std::string::npos ? 0 : scheme_end + 3;
        url = endpoint_.url.substr(0, host) + bucket_ + "." + endpoint_.url.substr(host) + "/" + uri_encode(key, true);
    }
    return query.empty() ? url : url + "?" + query;
}

std::string Client::answer_what(const std::string& method, const std::string& key, const std::string& query) const {
    return "S3 " + method + " " + object_url(bucket_, key) + (query.empty() ? "" : "?" + query) + " at " + endpoint_.url;
}

Result<Client::Response> Client::perform(const Request& request) {
    failure_ = {};
    const std::string what = "S3 " + request.method + " " + object_url(bucket_, request.key);
    CURL* c = curl_->easy.get();
    if (!c) return runtime_error(what + ": " + (curl_->load_error.empty() ? "curl_easy_init failed" : curl_->load_error));
    curl::easy_reset(c);

    Response response;
    HeaderSink header_sink{.socket = &curl_->socket, .headers = &response.headers};
    BodySink sink{.curl = c, .answer = request.answer, .max_bytes = request.max_bytes,
                  .range = request.range, .range_offset = request.range_offset};
    UploadSource source{request.body};
    const std::string url = url_for(request.key, request.query);
    const std::string sigv4 = "aws:amz:" + endpoint_.region + ":s3";
    curl::easy_setopt(c, CURLOPT_URL, url.c_str());
    curl::easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl::easy_setopt(c, CURLOPT_USERNAME, credentials_.access_key.c_str());
    curl::easy_setopt(c, CURLOPT_PASSWORD, credentials_.secret_key.c_str());
    curl::easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl::easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, endpoint_.connect_timeout_ms);
    curl::easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, endpoint_.low_speed_bytes);
    curl::easy_setopt(c, CURLOPT_LOW_SPEED_TIME, endpoint_.low_speed_seconds);
    curl::easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!endpoint_.ca_file.empty()) curl::easy_setopt(c, CURLOPT_CAINFO, endpoint_.ca_file.c_str());
    curl::easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
    curl::easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl::easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_header);
    curl::easy_setopt(c, CURLOPT_HEADERDATA, &header_sink);
    curl::easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, socket_made);
    curl::easy_setopt(c, CURLOPT_SOCKOPTDATA, &curl_->socket);
    curl::easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, socket_closing);
    curl::easy_setopt(c, CURLOPT_CLOSESOCKETDATA, &curl_->socket);
    if (cancel_) {
        curl::easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl::easy_setopt(c, CURLOPT_XFERINFOFUNCTION, cancelled);
        curl::easy_setopt(c, CURLOPT_XFERINFODATA, cancel_);
    }

    // RGW and AWS refuse a SigV4 request without the payload's hash (libcurl 7.88 does not
    // add it), and check the body against it.
    CurlList headers;
    auto add_header = [&headers](const std::string& h) { headers.reset(curl::slist_append(headers.release(), h.c_str())); };
    add_header("x-amz-content-sha256: " + sha256_hex(request.body));
    if (!credentials_.session_token.empty()) add_header("x-amz-security-token: " + credentials_.session_token);
    for (const std::string& h : request.headers) add_header(h);

    if (request.method == "HEAD") {
        curl::easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (request.method == "PUT") {
        curl::easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl::easy_setopt(c, CURLOPT_READFUNCTION, read_body);
        curl::easy_setopt(c, CURLOPT_READDATA, &source);
        curl::easy_setopt(c, CURLOPT_INFILESIZE_LARGE, curl_off_t(request.body.size()));
    } else if (request.method == "POST") {
        add_header("Content-Type: application/xml");
        curl::easy_setopt(c, CURLOPT_POST, 1L);
        curl::easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
        curl::easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
    } else if (request.method != "GET") {
        curl::easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    curl::easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());

    char errbuf[CURL_ERROR_SIZE] = "";
    curl::easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    const CURLcode rc = curl::easy_perform(c);
    // How errors about the answer itself name the request: with its query and the endpoint.
    const auto answer_error = [&](const std::string& why) {
        failure_.http_status = sink.status > 0 ? sink.status : 0;
        return runtime_error(answer_what(request.method, request.key, request.query) + ": " + one_line(why));
    };
    if (rc == CURLE_WRITE_ERROR && !sink.refused.empty()) return answer_error(sink.refused);
    if (rc == CURLE_WRITE_ERROR && header_sink.refused) {
        return answer_error("answer headers longer than " + human_bytes(kHeaderBytes, 0));
    }
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && sink.range_taken)) {
        return runtime_error(what + ": no answer from " + endpoint_.url + ": " +
                             one_line(errbuf[0] ? errbuf : curl::easy_strerror(rc)));
    }
    curl::easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
    if (response.status >= 300) {
        failure_.http_status = response.status;
        std::string detail;
        if (!sink.error_not_xml && sink.xml.finish() && sink.xml.answer().root == "Error") {
            failure_.code = one_line(sink.xml.answer().code);
            detail = failure_.code;
            if (const std::string& message = sink.xml.answer().message; !message.empty()) {
                detail += (detail.empty() ? "" : ": ") + one_line(message);
            }
        }
        if (detail.empty() && response.status == 404) detail = "not found";
        if (detail.empty() && response.status == 403) detail = "access denied (credentials or permissions)";
        return runtime_error(what + ": HTTP " + std::to_string(response.status) + (detail.empty() ? "" : " " + detail));
    }
    if (request.answer == Answer::xml) {
        if (!sink.xml.finish()) return answer_error(sink.xml.error());
        XmlAnswer& xml = sink.xml.answer();
        if (xml.root == "Error") {  // a 200 carrying a failure (CompleteMultipartUpload)
            failure_.code = one_line(xml.code);
            return answer_error(failure_.code + (xml.message.empty() ? "" : ": " + xml.message));
        }
        if (xml.root != request.root) {
            return answer_error("answer is <" + xml.root + ">, not <" + std::string(request.root) + ">");
        }
        response.xml = std::move(xml);
    }
    response.body = std::move(sink.body);
    return response;
}

Status Client::put_object(const std::string& key, std::string_view body, const Metadata& metadata) {
    auto r = perform({.method = "PUT", .key = key, .body = body, .headers = metadata_headers(metadata)});
    if (!r) return r.error();
    return {};
}

Result<ObjectInfo> Client::head_object(const std::string& key) {
    auto r = perform({.method = "HEAD", .key = key});
    if (!r) return r.error();
    ObjectInfo info{.key = key};
    const auto& h = r->headers;
    if (auto it = h.find("content-length"); it != h.end()) {
        const std::string& v = it->second;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), info.size);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size())
            return runtime_error(answer_what("HEAD", key, "") + ": Content-Length is not a number of bytes");
    }
    if (auto it = h.find("etag"); it != h.end()) info.etag = unquote(it->second);
    if (auto it = h.find("last-modified"); it != h.end()) info.last_modified = it->second;
    for (const auto& [name, value] : h) {
        if (name.starts_with("x-amz-meta-")) info.metadata[name.substr(11)] = value;
    }
    return info;
}

Result<std::string> Client::get_object(const std::string& key, uint64_t max_bytes) {
    auto r = perform({.method = "GET", .key = key, .answer = Answer::object, .max_bytes = max_bytes});
    if (!r) return r.error();
    return std::move(r->body);
}

Result<std::string> Client::get_range(const std::string& key, uint64_t offset, uint64_t length) {
    if (length == 0) return std::string();
    const std::string range = "Range: bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
    auto r = perform({.method = "GET", .key = key, .headers = {range}, .answer = Answer::object,
                      .max_bytes = length, .range = true, .range_offset = offset});
    if (!r) return r.error();
    return std::move(r->body);
}

Result<Listing> Client::list_objects(const std::string& prefix, const std::string& token,
                                     const std::string& delimiter) {
    // Canonical order: parameter names sorted.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + uri_encode(token, false) + "&";
    if (!delimiter.empty()) query += "delimiter=" + uri_encode(delimiter, false) + "&";
    query += "list-type=2&prefix=" + uri_encode(prefix, false);
    auto r = perform({.method = "GET", .query = query, .answer = Answer::xml, .root = "ListBucketResult"});
    if (!r) return r.error();
    Listing listing = std::move(r->xml.listing);
    if (!r->xml.truncated) {
        listing.next_token.clear();
    } else if (listing.next_token.empty() || listing.next_token == token) {
        // Followed, either would end the listing early or never.
        return runtime_error(answer_what("GET", "", query) + ": the page is truncated but " +
                             (listing.next_token.empty() ? "names no NextContinuationToken"
                                                         : "names its own continuation token as the next"));
    }
    return listing;
}

Status Client::delete_object(const std::string& key) {
    auto r = perform({.method = "DELETE", .key = key});
    if (!r) return r.error();
    return {};
}

Result<std::string> Client::create_multipart_upload(const std::string& key, const Metadata& metadata) {
    auto r = perform({.method = "POST", .key = key, .query = "uploads=", .headers = metadata_headers(metadata),
                      .answer = Answer::xml, .root = "InitiateMultipartUploadResult"});
    if (!r) return r.error();
    if (r->xml.upload_id.empty()) return runtime_error(answer_what("POST", key, "uploads=") + ": no UploadId in the answer");
    return std::move(r->xml.upload_id);
}

Result<std::string> Client::upload_part(const std::string& key, const std::string& upload_id, unsigned part_number,
                                        std::string_view body) {
    const std::string query = "partNumber=" + std::to_string(part_number) + "&uploadId=" + uri_encode(upload_id, false);
    auto r = perform({.method = "PUT", .key = key, .query = query, .body = body});
    if (!r) return r.error();
    const auto it = r->headers.find("etag");
    if (it == r->headers.end()) return runtime_error("S3 PUT " + object_url(bucket_, key) + " part " +
                                                     std::to_string(part_number) + ": no ETag in the answer");
    return unquote(it->second);
}

Status Client::complete_multipart_upload(const std::string& key, const std::string& upload_id,
                                         const std::vector<std::string>& part_etags) {
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < part_etags.size(); ++i) {
        xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + part_etags[i] +
               "\"</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    // The store may fail the completion inside a 200 answer: perform() reads an <Error> there.
    auto r = perform({.method = "POST", .key = key, .query = "uploadId=" + uri_encode(upload_id, false), .body = xml,
                      .answer = Answer::xml, .root = "CompleteMultipartUploadResult"});
    if (!r) return r.error();
    return {};
}

Status Client::abort_multipart_upload(const std::string& key, const std::string& upload_id) {
    auto r = perform({.method = "DELETE", .key = key, .query = "uploadId=" + uri_encode(upload_id, false)});
    if (!r) return r.error();
    return {};
}

Result<std::vector<Upload>> Client::list_multipart_uploads(const std::string& prefix) {
    auto r = perform({.method = "GET", .query = "prefix=" + uri_encode(prefix, false) + "&uploads=",
                      .answer = Answer::xml, .root = "ListMultipartUploadsResult"});
    if (!r) return r.error();
    return std::move(r->xml.uploads);
}

Status Client::create_bucket() {
    auto r = perform({.method = "PUT"});
    if (!r) return r.error();
    return {};
}

}  // namespace linecap::s3
