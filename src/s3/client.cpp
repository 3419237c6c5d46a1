#include "s3/client.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "util/curl_library.hpp"
#include "util/sha256.hpp"

namespace linecap::s3 {

struct Client::Request {
    std::string method = "GET";
    std::string key;     // empty: the bucket itself
    std::string query;   // canonical: parameters sorted, values encoded, "name=" for subresources
    std::string_view body;
    std::vector<std::string> headers;
};

struct Client::Response {
    long status = 0;
    std::string body;
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

std::string unquote(std::string s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
    return s;
}

// The S3 answers read here are flat XML documents of known elements; entities are the five
// XML predefined ones plus numeric references, which keys may need.
std::string xml_unescape(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '&') {
            out += text[i];
            continue;
        }
        const size_t end = text.find(';', i);
        if (end == std::string_view::npos) {
            out += text.substr(i);
            break;
        }
        const std::string_view entity = text.substr(i + 1, end - i - 1);
        if (entity == "amp") out += '&';
        else if (entity == "lt") out += '<';
        else if (entity == "gt") out += '>';
        else if (entity == "quot") out += '"';
        else if (entity == "apos") out += '\'';
        else if (entity.starts_with("#")) {
            const bool hex = entity.size() > 1 && (entity[1] == 'x' || entity[1] == 'X');
            const unsigned long cp = std::strtoul(std::string(entity.substr(hex ? 2 : 1)).c_str(), nullptr, hex ? 16 : 10);
            if (cp < 0x80) {
                out += char(cp);
            } else if (cp < 0x800) {
                out += char(0xC0 | (cp >> 6));
                out += char(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                out += char(0xE0 | (cp >> 12));
                out += char(0x80 | ((cp >> 6) & 0x3F));
                out += char(0x80 | (cp & 0x3F));
            } else {
                out += char(0xF0 | (cp >> 18));
                out += char(0x80 | ((cp >> 12) & 0x3F));
                out += char(0x80 | ((cp >> 6) & 0x3F));
                out += char(0x80 | (cp & 0x3F));
            }
        } else {
            out += text.substr(i, end - i + 1);
        }
        i = end;
    }
    return out;
}

// The raw contents of every <TAG>...</TAG> in TEXT, in order (not unescaped: blocks nest).
std::vector<std::string_view> xml_blocks(std::string_view text, const std::string& tag) {
    std::vector<std::string_view> out;
    const std::string open = "<" + tag + ">", close = "</" + tag + ">";
    size_t at = 0;
    while ((at = text.find(open, at)) != std::string_view::npos) {
        const size_t begin = at + open.size();
        const size_t end = text.find(close, begin);
        if (end == std::string_view::npos) break;
        out.push_back(text.substr(begin, end - begin));
        at = end + close.size();
    }
    return out;
}

std::string xml_value(std::string_view text, const std::string& tag) {
    const auto blocks = xml_blocks(text, tag);
    return blocks.empty() ? "" : xml_unescape(blocks.front());
}

size_t collect_body(char* data, size_t size, size_t n, void* out) {
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
}

size_t collect_header(char* data, size_t size, size_t n, void* out) {
    auto& headers = *static_cast<std::map<std::string, std::string>*>(out);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) headers.clear();  // a new response (after 100 Continue)
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

Result<Client::Response> Client::perform(const Request& request) {
    failure_ = {};
    const std::string what = "S3 " + request.method + " " + object_url(bucket_, request.key);
    CURL* c = curl_->easy.get();
    if (!c) return runtime_error(what + ": " + (curl_->load_error.empty() ? "curl_easy_init failed" : curl_->load_error));
    curl::easy_reset(c);

    Response response;
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
    curl::easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
    curl::easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
    curl::easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_header);
    curl::easy_setopt(c, CURLOPT_HEADERDATA, &response.headers);
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
    if (rc != CURLE_OK) {
        return runtime_error(what + ": no answer from " + endpoint_.url + ": " +
                             (errbuf[0] ? errbuf : curl::easy_strerror(rc)));
    }
    curl::easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
    if (response.status >= 300) {
        failure_.http_status = response.status;
        failure_.code = xml_value(response.body, "Code");
        std::string detail = failure_.code;
        if (const std::string message = xml_value(response.body, "Message"); !message.empty()) {
            detail += (detail.empty() ? "" : ": ") + message;
        }
        if (detail.empty() && response.status == 404) detail = "not found";
        if (detail.empty() && response.status == 403) detail = "access denied (credentials or permissions)";
        return runtime_error(what + ": HTTP " + std::to_string(response.status) + (detail.empty() ? "" : " " + detail));
    }
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
    if (auto it = h.find("content-length"); it != h.end()) info.size = std::strtoull(it->second.c_str(), nullptr, 10);
    if (auto it = h.find("etag"); it != h.end()) info.etag = unquote(it->second);
    if (auto it = h.find("last-modified"); it != h.end()) info.last_modified = it->second;
    for (const auto& [name, value] : h) {
        if (name.starts_with("x-amz-meta-")) info.metadata[name.substr(11)] = value;
    }
    return info;
}

Result<std::string> Client::get_object(const std::string& key) {
    auto r = perform({.method = "GET", .key = key});
    if (!r) return r.error();
    return std::move(r->body);
}

Result<std::string> Client::get_range(const std::string& key, uint64_t offset, uint64_t length) {
    if (length == 0) return std::string();
    const std::string range = "Range: bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
    auto r = perform({.method = "GET", .key = key, .headers = {range}});
    if (!r) return r.error();
    // A store that ignores Range answers 200 with the whole object: cut it here.
    if (r->status == 200) {
        if (offset >= r->body.size()) return std::string();
        return r->body.substr(offset, length);
    }
    return std::move(r->body);
}

Result<Listing> Client::list_objects(const std::string& prefix, const std::string& token,
                                     const std::string& delimiter) {
    // Canonical order: parameter names sorted.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + uri_encode(token, false) + "&";
    if (!delimiter.empty()) query += "delimiter=" + uri_encode(delimiter, false) + "&";
    query += "list-type=2&prefix=" + uri_encode(prefix, false);
    auto r = perform({.method = "GET", .query = query});
    if (!r) return r.error();
    Listing listing;
    for (const std::string_view block : xml_blocks(r->body, "Contents")) {
        listing.objects.push_back({.key = xml_value(block, "Key"),
                                   .size = std::strtoull(xml_value(block, "Size").c_str(), nullptr, 10),
                                   .etag = unquote(xml_value(block, "ETag")),
                                   .last_modified = xml_value(block, "LastModified")});
    }
    for (const std::string_view block : xml_blocks(r->body, "CommonPrefixes")) {
        listing.common_prefixes.push_back(xml_value(block, "Prefix"));
    }
    if (xml_value(r->body, "IsTruncated") == "true") listing.next_token = xml_value(r->body, "NextContinuationToken");
    return listing;
}

Status Client::delete_object(const std::string& key) {
    auto r = perform({.method = "DELETE", .key = key});
    if (!r) return r.error();
    return {};
}

Result<std::string> Client::create_multipart_upload(const std::string& key, const Metadata& metadata) {
    auto r = perform({.method = "POST", .key = key, .query = "uploads=", .headers = metadata_headers(metadata)});
    if (!r) return r.error();
    std::string id = xml_value(r->body, "UploadId");
    if (id.empty()) return runtime_error("S3 POST " + object_url(bucket_, key) + "?uploads: no UploadId in the answer");
    return id;
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
    auto r = perform({.method = "POST", .key = key, .query = "uploadId=" + uri_encode(upload_id, false), .body = xml});
    if (!r) return r.error();
    // The store may fail the completion inside a 200 answer.
    if (r->body.find("<Error>") != std::string::npos) {
        failure_ = {.http_status = 200, .code = xml_value(r->body, "Code")};
        return runtime_error("S3 POST " + object_url(bucket_, key) + " (complete): " + failure_.code + ": " +
                             xml_value(r->body, "Message"));
    }
    return {};
}

Status Client::abort_multipart_upload(const std::string& key, const std::string& upload_id) {
    auto r = perform({.method = "DELETE", .key = key, .query = "uploadId=" + uri_encode(upload_id, false)});
    if (!r) return r.error();
    return {};
}

Result<std::vector<Upload>> Client::list_multipart_uploads(const std::string& prefix) {
    auto r = perform({.method = "GET", .query = "prefix=" + uri_encode(prefix, false) + "&uploads="});
    if (!r) return r.error();
    std::vector<Upload> uploads;
    for (const std::string_view block : xml_blocks(r->body, "Upload")) {
        uploads.push_back({.key = xml_value(block, "Key"), .upload_id = xml_value(block, "UploadId")});
    }
    return uploads;
}

Status Client::create_bucket() {
    auto r = perform({.method = "PUT"});
    if (!r) return r.error();
    return {};
}

}  // namespace linecap::s3
