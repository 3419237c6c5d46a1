// HTTP/1.1 messages as the API reads and writes them, with no socket in sight: a request is
// read by Boost.Beast's parser, then held to what this server takes; a response head is
// written for the client that asked. http_front.cpp feeds it a connection's bytes, the fuzz
// harness (tests/fuzz/fuzz_http_request.cpp) anything at all.
//
// Beast frames the request (RFC 9112): the request line, the fields (a bare CR, a control
// character, obs-fold and a field line without a colon refused), Content-Length (repeated
// only with one value) and the head within max_request_bytes. On top of it, the front's
// rules:
//   - HTTP/1.0 and 1.1 only (505 for others; 400 for HTTP/0.9, which is told by its first
//     line, before any head could end);
//   - exactly one Host in a 1.1 request, at most one in a 1.0 request (400, RFC 9112 §3.2);
//   - a target that is a path ("/..."), percent-decoded without %00;
//   - no Transfer-Encoding (400: no endpoint takes a streamed body, and its bytes must not
//     be read as further requests); head and Content-Length body within max_request_bytes
//     together (431);
//   - Expect: "100-continue" in a 1.1 request with a body gets "100 Continue" before the
//     body is read (unless some of it came with the head), any other expectation 417
//     (RFC 9110 §10.1.1); a 1.0 request's Expect is ignored, as that section requires;
//   - Connection read as a list of tokens (Beast's keep_alive()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <openssl/ssl.h>

namespace linecap::api {

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method;
    std::string target;    // as received
    std::string version;   // "HTTP/1.1" or "HTTP/1.0"
    std::string path;      // percent-decoded, without the query
    std::string query;     // as received, after '?'
    HttpFields headers;    // names lower-case, values without the whitespace around them
    std::string body;      // Content-Length bytes (at most api.max_request_bytes with the head)
    bool keep_alive = true;  // the Connection tokens, read for the request's version
    std::string peer_address;
    int peer_port = 0;
    SSL* ssl = nullptr;    // TLS: the session (peer certificate), else null

    bool http11() const { return version == "HTTP/1.1"; }
    // The value of the first header named `lower_name`, or nullopt.
    std::optional<std::string> header(std::string_view lower_name) const;
};

// Why a request is refused, with as much of it as was read for the audit record.
struct HttpProblem {
    int status = 400;
    std::string reason;    // one line, no control characters
    std::string method;    // may be empty
    std::string target;
    std::optional<std::string> authorization;  // if the head was read
};

// One request read off a connection's bytes. Single use: a new reader for each request.
class RequestReader {
public:
    explicit RequestReader(size_t max_request_bytes);
    ~RequestReader();
    RequestReader(const RequestReader&) = delete;
    RequestReader& operator=(const RequestReader&) = delete;

    enum class Step {
        more,           // the head is not complete: call again with these bytes and more
        send_continue,  // the head is accepted; write continue_response(), then the body follows
        body,           // the head is accepted; its body is still to come
        complete,       // take() the request
        refused,        // problem() says why; the connection must close after the answer
    };

    // Reads from IN, the connection's bytes that earlier calls did not consume; `consumed`
    // says how many of them now belong to this request (the caller drops them from its
    // buffer). Until the head is complete nothing is consumed and IN must be given again
    // whole: the parser remembers how far it looked.
    Step read(std::string_view in, size_t& consumed);

    // After Step::complete.
    HttpRequest take();
    // After Step::refused.
    const HttpProblem& problem() const;
    // The request so far, for a refusal the front makes itself (a deadline): what `in`
    // holds of its request line, or the head if it was read.
    HttpProblem so_far(int status, std::string reason, std::string_view in) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// The interim answer Step::send_continue asks for.
std::string_view continue_response();

// A response's status line and fields, ending in the empty line, with Connection saying
// whether it stays open. The status line says HTTP/1.1 whatever the request's version (a
// server sends its own, RFC 9110 §6.2); what a 1.0 client may not be sent (chunked) is
// the caller's to leave out.
std::string response_head(int status, const HttpFields& headers, bool keep_alive);

// The reason phrase of a status ("Request Header Fields Too Large").
const char* http_reason_phrase(int status);

}  // namespace linecap::api
