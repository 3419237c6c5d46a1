// A small HTTP server for the metrics endpoints: fixed routes, each a function that
// returns a complete response, served by civetweb worker threads. Knows nothing about
// Prometheus. (prometheus-cpp's Exposer cannot answer with custom status codes, which
// /ready needs, so we run civetweb ourselves; it is the library Exposer uses anyway.)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/result.hpp"

struct mg_context;
struct mg_connection;

namespace linecap {

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

struct HttpRoute {
    std::string path;                       // exact path, e.g. "/metrics"
    std::function<HttpResponse()> handler;  // called on a civetweb thread
};

class HttpServer {
public:
    // `listen` is metrics.listen: "127.0.0.1:9475", "0.0.0.0:9475" (all interfaces,
    // only when configured so), "localhost:9475" (= 127.0.0.1) or "[::1]:9475" (IPv6,
    // when the civetweb library was built with it). Port 0 picks a free port (tests).
    // Fails with a message naming the address, e.g. "cannot listen on 127.0.0.1:9475:
    // Address already in use".
    static Result<std::unique_ptr<HttpServer>> start(const std::string& listen, std::vector<HttpRoute> routes);
    ~HttpServer();  // stops accepting, waits for running handlers
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    uint16_t port() const { return port_; }   // the bound port (useful after port 0)

private:
    HttpServer() = default;
    static int handle(mg_connection* connection, void* route);

    mg_context* context_ = nullptr;
    uint16_t port_ = 0;
    std::string wake_host_;   // where the destructor connects to wake civetweb's accept loop
    bool wake_ipv6_ = false;
    // Stable addresses: civetweb holds a pointer to each route.
    std::vector<std::unique_ptr<HttpRoute>> routes_;
};

}  // namespace linecap
