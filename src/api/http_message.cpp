#include "api/http_message.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/range/iterator_range.hpp>

#include "api/query.hpp"

namespace linecap::api {

namespace http = boost::beast::http;
using boost::beast::error_code;

const char* http_reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 417: return "Expectation Failed";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Status";
    }
}

std::string_view continue_response() { return "HTTP/1.1 100 Continue\r\n\r\n"; }

std::string response_head(int status, const HttpFields& headers, bool keep_alive) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + http_reason_phrase(status) + "\r\n";
    for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
    head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    head += "\r\n";
    return head;
}

std::optional<std::string> HttpRequest::header(std::string_view lower_name) const {
    for (const auto& [k, v] : headers)
        if (k == lower_name) return v;
    return std::nullopt;
}

namespace {

// Beast's views are Boost's.
std::string_view sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Text from the client in a reason: printable ASCII only, and not too much of it.
std::string quoted(std::string_view s) {
    std::string out = "'";
    for (char c : s.substr(0, 64)) out += c >= 0x20 && c < 0x7f ? c : '?';
    return out + (s.size() > 64 ? "...'" : "'");
}

// The request line's method and target, as far as they go.
void request_line_words(std::string_view in, std::string& method, std::string& target) {
    std::string_view line = in.substr(0, std::min(in.find('\n'), size_t{4096}));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t sp = line.find(' ');
    method = std::string(line.substr(0, std::min(sp, size_t{32})));
    if (sp == std::string_view::npos) return;
    std::string_view rest = line.substr(sp + 1);
    target = std::string(rest.substr(0, rest.find(' ')));
}

// HTTP/0.9 ("GET /path", no version) never sends an empty line: it is told by its first.
bool http09_request_line(std::string_view in) {
    const size_t lf = in.find('\n');
    if (lf == std::string_view::npos) return false;
    std::string_view first = in.substr(0, lf);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    const size_t sp = first.find(' ');
    return sp != std::string_view::npos && sp == first.rfind(' ') && first.find(" HTTP/") == std::string_view::npos;
}

std::string too_large(size_t max_bytes, bool with_body) {
    return std::string(with_body ? "the request with its body" : "the request") +
           " is larger than api.max_request_bytes (" + std::to_string(max_bytes) + ")";
}

}  // namespace

struct RequestReader::Impl {
    size_t max_bytes;
    http::request_parser<http::string_body> parser;
    bool head_done = false;
    bool continue_sent = false;
    size_t head_bytes = 0;  // of the accepted head
    size_t scanned = 0;     // how far head_end looked
    HttpRequest request;  // its head, once accepted
    HttpProblem problem;

    explicit Impl(size_t max) : max_bytes(max) {
        parser.header_limit(static_cast<uint32_t>(std::min<size_t>(max, std::numeric_limits<uint32_t>::max())));
        // check_head holds head and body within max together (not boost::none: 1.74 compares
        // the length with the empty optional and refuses every body).
        parser.body_limit(std::numeric_limits<uint64_t>::max());
        parser.eager(false);  // stop after the head: Expect and the limits are checked there
    }

    Step refuse(int status, std::string reason, std::string_view in) {
        problem = so_far(status, std::move(reason), in);
        return Step::refused;
    }

    HttpProblem so_far(int status, std::string reason, std::string_view in) const {
        HttpProblem p;
        p.status = status;
        p.reason = std::move(reason);
        if (parser.is_header_done()) {
            const auto& m = parser.get();
            p.method = std::string(sv(m.method_string()));
            p.target = std::string(sv(m.target()));
            if (auto it = m.find(http::field::authorization); it != m.end()) p.authorization = std::string(sv(it->value()));
        } else {
            request_line_words(in, p.method, p.target);
        }
        return p;
    }

    // What Beast refused, in the words of the request's problem.
    Step refuse_parse(error_code ec, std::string_view in) {
        using E = http::error;
        if (ec == E::bad_version) {
            // Beast reads only 1.x, and counts what ends the request line as the version's.
            std::string_view line = in.substr(0, in.find('\n'));
            const bool crlf = !line.empty() && line.back() == '\r';
            if (crlf) line.remove_suffix(1);
            line.remove_prefix(std::min(line.size(), line.rfind(' ') + 1));
            const bool well_formed = line.size() == 8 && line.starts_with("HTTP/") &&
                                     std::isdigit(static_cast<unsigned char>(line[5])) && line[6] == '.' &&
                                     std::isdigit(static_cast<unsigned char>(line[7]));
            if (well_formed && line != "HTTP/1.1" && line != "HTTP/1.0")
                return refuse(505, std::string(line) + " is not supported (HTTP/1.0 and 1.1 are)", in);
            if (well_formed && !crlf) ec = E::bad_line_ending;
        }
        if (ec == E::header_limit) return refuse(431, too_large(max_bytes, false), in);
        if (ec == E::bad_method) return refuse(400, "malformed method", in);
        if (ec == E::bad_target) return refuse(400, "malformed target (a control character or space in it?)", in);
        if (ec == E::bad_version) return refuse(400, "malformed HTTP version", in);
        if (ec == E::bad_line_ending) return refuse(400, "malformed line ending (lines end in CRLF)", in);
        if (ec == E::bad_field) return refuse(400, "malformed header field name", in);
        if (ec == E::bad_value) return refuse(400, "malformed header field value", in);
        if (ec == E::bad_obs_fold) return refuse(400, "malformed header line folding", in);
        if (ec == E::bad_content_length) return refuse(400, "bad or conflicting Content-Length", in);
        if (ec == E::bad_transfer_encoding) return refuse(400, "bad Transfer-Encoding", in);
        return refuse(400, "malformed request (" + ec.message() + ")", in);
    }

    // The front's rules for an accepted head; "" when it may be served.
    std::pair<int, std::string> check_head() {
        if (head_bytes > max_bytes) return {431, too_large(max_bytes, false)};
        const auto& m = parser.get();
        const unsigned v = m.version();
        if (v != 10 && v != 11)
            return {505, "HTTP/" + std::to_string(v / 10) + "." + std::to_string(v % 10) +
                             " is not supported (HTTP/1.0 and 1.1 are)"};
        const size_t hosts = m.count(http::field::host);
        if (v == 11 && hosts == 0) return {400, "an HTTP/1.1 request needs a Host header"};
        if (hosts > 1) return {400, std::to_string(hosts) + " Host headers (one at most)"};
        if (m.count(http::field::transfer_encoding))
            return {400, "a request body with Transfer-Encoding is not accepted (send Content-Length)"};
        if (!sv(m.target()).starts_with('/')) return {400, "the target must be a path starting with '/'"};
        if (const auto length = parser.content_length(); length && *length > max_bytes - std::min(max_bytes, head_bytes))
            return {431, too_large(max_bytes, true)};
        if (v == 11) {
            for (const auto& f : boost::make_iterator_range(m.equal_range(http::field::expect)))
                if (!boost::beast::iequals(f.value(), "100-continue"))
                    return {417, "expectation " + quoted(sv(f.value())) + " is not supported (only 100-continue)"};
        }
        return {0, {}};
    }

    // The accepted head as the handlers see it; "" when the path decodes.
    std::string fill_request() {
        const auto& m = parser.get();
        HttpRequest& r = request;
        r.method = std::string(sv(m.method_string()));
        r.target = std::string(sv(m.target()));
        r.version = m.version() == 11 ? "HTTP/1.1" : "HTTP/1.0";
        r.keep_alive = m.keep_alive();
        for (const auto& f : m) r.headers.emplace_back(lower(sv(f.name_string())), std::string(sv(f.value())));
        const size_t q = r.target.find('?');
        r.query = q == std::string::npos ? "" : r.target.substr(q + 1);
        auto path = percent_decode(std::string_view(r.target).substr(0, q), false);
        if (!path) return "path: " + path.error().message;
        if (path->find('\0') != std::string::npos) return "path: %00 in the path";
        r.path = std::move(path.value());
        return {};
    }

    // Where the head in IN ends (just past its empty line), or npos. A bare LF ends a line
    // here too, so that a head Beast will refuse for it is handed to Beast whole, not
    // waited on for a CRLF that never comes.
    size_t head_end(std::string_view in) {
        for (size_t lf; (lf = in.find('\n', scanned)) != std::string_view::npos; scanned = lf + 1) {
            size_t next = lf + 1;
            if (next < in.size() && in[next] == '\r') ++next;
            if (next >= in.size()) return std::string_view::npos;  // scanned stays: look again
            if (in[next] == '\n') return next + 1;
        }
        return std::string_view::npos;
    }

    Step read(std::string_view in, size_t& consumed) {
        consumed = 0;
        error_code ec;
        if (!head_done) {
            // HTTP/0.9 sends no empty line: it is told by its first line.
            if (const size_t lf = in.find('\n'); lf != std::string_view::npos && lf < max_bytes && http09_request_line(in))
                return refuse(400, "HTTP/0.9 request (no HTTP version): only HTTP/1.0 and 1.1 are served", in);
            // Beast sees the head only once it is all here, or else its first max_bytes + 1
            // bytes, in one piece: it reads a head as it comes a line at a time, and would
            // find a fault in part of one that it finds elsewhere in all of it, or past the
            // limit in a longer buffer. So the verdict is the same however the bytes arrive.
            const size_t end = head_end(in);
            if (end == std::string_view::npos && in.size() <= max_bytes) return Step::more;
            // What is said about a refused head (its version, the audit record's request
            // line) is read from those same bytes.
            const bool cut = end == std::string_view::npos || end > max_bytes + 1;
            const std::string_view head = in.substr(0, cut ? max_bytes + 1 : end);
            const size_t n = parser.put(boost::asio::const_buffer(head.data(), head.size()), ec);
            if (ec == http::error::need_more)  // the head was cut at the limit, or a bare LF ended it
                return cut ? refuse(431, too_large(max_bytes, false), head)
                           : refuse_parse(http::error::bad_line_ending, head);
            if (ec) return refuse_parse(ec, head);
            head_bytes = n;
            if (auto [status, reason] = check_head(); status) return refuse(status, std::move(reason), head);
            if (auto reason = fill_request(); !reason.empty()) return refuse(400, std::move(reason), head);
            head_done = true;
            consumed = n;
        }
        while (!parser.is_done() && consumed < in.size()) {
            const size_t n = parser.put(boost::asio::const_buffer(in.data() + consumed, in.size() - consumed), ec);
            consumed += n;
            if (ec == http::error::need_more) break;
            if (ec) return refuse_parse(ec, in);
            if (n == 0) break;
        }
        if (parser.is_done()) return Step::complete;
        // Waiting for the body: a client that asked first is told to send it, once, unless
        // it did not wait (some of the body came with the head).
        const bool asked = request.http11() && request.header("expect").has_value();
        if (asked && !continue_sent && consumed == in.size() && parser.content_length_remaining() == parser.content_length()) {
            continue_sent = true;
            return Step::send_continue;
        }
        return Step::body;
    }
};

RequestReader::RequestReader(size_t max_request_bytes) : impl_(std::make_unique<Impl>(max_request_bytes)) {}
RequestReader::~RequestReader() = default;

RequestReader::Step RequestReader::read(std::string_view in, size_t& consumed) { return impl_->read(in, consumed); }

HttpRequest RequestReader::take() {
    impl_->request.body = std::move(impl_->parser.get().body());
    return std::move(impl_->request);
}

const HttpProblem& RequestReader::problem() const { return impl_->problem; }

HttpProblem RequestReader::so_far(int status, std::string reason, std::string_view in) const {
    return impl_->so_far(status, std::move(reason), in);
}

}  // namespace linecap::api
