// The HTTP/1.1 server under `linecap serve`: one epoll thread that owns every connection
// while it is not being answered, and a fixed pool of handler threads that only ever see
// complete requests.
//
// The front thread accepts, runs the TLS handshake (OpenSSL, non-blocking), reads the
// request head and any body, and checks them: the whole head must arrive within
// header_timeout of the connection's start (or of the end of its previous answer), a
// body within body_timeout after its head, head and body together within
// max_request_bytes (431 however the excess is shaped: one long line, many headers, a
// long path). The bytes are read as HTTP by RequestReader (http_message.hpp: Boost.Beast's
// parser and the front's rules), which also says when to send "100 Continue". A
// connection that stays silent is closed quietly at its deadline; one that sent part of a
// request gets 408. So a slow or idle client costs a
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

#include "api/http_message.hpp"
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

// What the front refused, before any endpoint saw it: the reader's problem (status 0: the
// client went away before a request was complete) and who sent it.
struct HttpRefusal : HttpProblem {
    std::string peer_address;
    int peer_port = 0;
    SSL* ssl = nullptr;
};

// The handler thread's side of one connection.
class HttpExchange {
public:
    virtual ~HttpExchange() = default;
    // A whole response with Content-Length. False: the client is gone (or did not read
    // within client_timeout); nothing more can be sent.
    virtual bool respond(int status, std::string_view content_type, std::string_view body,
                         const HttpFields& headers = {}) = 0;
    // An answer whose length is known only at its end. To an HTTP/1.1 client it is sent
    // chunked, and end_stream() ends it with TRAILERS (named in the head by
    // `trailer_names`). An HTTP/1.0 client cannot take chunks (RFC 9112 §7), so it gets the
    // bytes as they are, the end of the connection as their end, and no trailers: what they
    // say is then only in the audit record.
    virtual bool begin_stream(int status, const HttpFields& headers, std::string_view trailer_names) = 0;
    virtual bool send_stream(std::string_view bytes) = 0;
    virtual bool end_stream(const HttpFields& trailers) = 0;
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

}  // namespace linecap::api
