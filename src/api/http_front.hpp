// The HTTP/1.1 server under `linecap serve`: one epoll thread that owns every connection
// while it is not being answered, and a fixed pool of handler threads that only ever see
// complete requests.
//
// The front thread accepts, runs the TLS handshake (OpenSSL, non-blocking), reads the
// request head and any body, and checks them: the whole head must arrive within
// header_timeout of the connection's start (or of the end of its previous answer), a
// body within body_timeout after its head, head and body together within
// max_request_bytes (431 however the excess is shaped: one long line, many headers, a
// long path), HTTP/1.0 or 1.1 (505 otherwise, 400 for HTTP/0.9), a well-formed head (400),
// no chunked request body (400: no endpoint takes a body, and its bytes must not be read
// as further requests). A connection that stays silent is closed quietly at its
// deadline; one that sent part of a request gets 408. So a slow or idle client costs a
// descriptor and a buffer, never a thread. Connections are limited in total and per
// client address; more are closed at accept and reported.
//
// A handler thread writes the answer with the socket still non-blocking, waiting at most
// client_timeout for each write to make progress (a client that stops reading frees the
// thread then), and gives the connection back to the front for the next request
// (keep-alive). Pipelined requests are taken one after the other from the connection's
// buffer, so they are answered in order. Every refusal the front makes goes to the
// handler's refused() on a handler thread, so it is answered and audited like any other
// request.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.hpp"

namespace linecap::api {

struct HttpLimits {
    size_t max_request_bytes = 8192;      // head + body
    uint64_t header_timeout_ms = 10000;   // TLS handshake + request head
    uint64_t body_timeout_ms = 10000;     // request body, after its head
    uint64_t client_timeout_ms = 30000;   // one write of the answer making no progress
    unsigned max_connections = 1024;
    unsigned max_connections_per_client = 64;
    unsigned threads = 16;                // handler threads
};

struct HttpRequest {
    std::string method;
    std::string target;    // as received
    std::string version;   // "HTTP/1.1"
    std::string path;      // percent-decoded, without the query
    std::string query;     // as received, after '?'
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
    std::string body;      // Content-Length bytes (at most api.max_request_bytes with the head)
    std::string peer_address;
    int peer_port = 0;
    SSL* ssl = nullptr;    // TLS: the session (peer certificate), else null

    // The value of the first header named `lower_name`, or nullopt.
    std::optional<std::string> header(std::string_view lower_name) const;
};

// What the front refused, before any endpoint saw it.
struct HttpRefusal {
    int status = 400;       // 0: the client went away before a request was complete
    std::string reason;     // one line, for the body and the audit record
    std::string method;     // as much of the request as was read (may be empty)
    std::string target;
    std::string peer_address;
    int peer_port = 0;
    SSL* ssl = nullptr;
    std::optional<std::string> authorization;  // the Authorization header, if the head was read
};

// The handler thread's side of one connection.
class HttpExchange {
public:
    virtual ~HttpExchange() = default;
    // A whole response with Content-Length. False: the client is gone (or did not read
    // within client_timeout); nothing more can be sent.
    virtual bool respond(int status, std::string_view content_type, std::string_view body,
                         const std::vector<std::pair<std::string, std::string>>& headers = {}) = 0;
    // Status line and headers only (the caller frames the body, e.g. chunked).
    virtual bool send_head(int status, const std::vector<std::pair<std::string, std::string>>& headers) = 0;
    virtual bool send(std::string_view bytes) = 0;
    // Bytes of the response the kernel has accepted (head included).
    virtual uint64_t bytes_sent() const = 0;
    // The client is gone (a write failed, or it closed while waiting for an answer).
    virtual bool client_gone() = 0;
};

class HttpHandler {
public:
    virtual ~HttpHandler() = default;
    virtual void serve(const HttpRequest& request, HttpExchange& exchange) = 0;
    virtual void refused(const HttpRefusal& refusal, HttpExchange& exchange) = 0;
    // A connection closed at accept (connection limits); no request was read.
    virtual void connection_refused(const std::string& peer_address, int peer_port, const std::string& reason) = 0;
};

class HttpFront {
public:
    // Binds host:port (0 = any free port). `tls` may be null (plain HTTP); it must
    // outlive the front.
    static Result<std::unique_ptr<HttpFront>> create(const std::string& host, int port, SSL_CTX* tls,
                                                     const HttpLimits& limits, HttpHandler& handler);
    ~HttpFront();
    int port() const;
    // Serves until stop(); returns once every handler thread has finished.
    Status run();
    void stop();

    struct Impl;

private:
    HttpFront();
    std::unique_ptr<Impl> impl_;
};

// The reason phrase of a status ("Request Header Fields Too Large").
const char* http_reason_phrase(int status);

}  // namespace linecap::api
