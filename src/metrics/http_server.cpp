#include "metrics/http_server.hpp"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>

namespace linecap {
namespace {

struct Endpoint {
    std::string host;   // without brackets
    std::string port;
    bool ipv6 = false;
};

// metrics.listen has been validated by the config loader; this only splits it.
std::optional<Endpoint> split_listen(std::string_view listen) {
    if (listen.starts_with('[')) {
        const size_t close = listen.find("]:");
        if (close == std::string_view::npos) return std::nullopt;
        return Endpoint{std::string(listen.substr(1, close - 1)), std::string(listen.substr(close + 2)), true};
    }
    const size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    std::string host(listen.substr(0, colon));
    if (host == "localhost") host = "127.0.0.1";  // never let a resolver pick ::1 or 0.0.0.0
    return Endpoint{host, std::string(listen.substr(colon + 1)), false};
}

std::string civetweb_listening_port(const Endpoint& e) {
    return e.ipv6 ? "[" + e.host + "]:" + e.port : e.host + ":" + e.port;
}

sockaddr_storage socket_address(const Endpoint& e, uint16_t port, socklen_t& length) {
    sockaddr_storage address{};
    if (e.ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&address);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        inet_pton(AF_INET6, e.host.c_str(), &a->sin6_addr);
        length = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&address);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        inet_pton(AF_INET, e.host.c_str(), &a->sin_addr);
        length = sizeof *a;
    }
    return address;
}

// civetweb only says "Failed to setup server ports"; binding the same address ourselves
// tells us why (EADDRINUSE, EADDRNOTAVAIL, EACCES …). nullopt if our bind works.
std::optional<std::string> why_bind_fails(const Endpoint& e) {
    const int fd = socket(e.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::string(std::strerror(errno));
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as civetweb does
    uint16_t port = 0;
    std::from_chars(e.port.data(), e.port.data() + e.port.size(), port);
    socklen_t length = 0;
    const sockaddr_storage address = socket_address(e, port, length);
    std::optional<std::string> reason;
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) reason = std::strerror(errno);
    close(fd);
    return reason;
}

// Where a local client reaches the server: the wildcard addresses are not connectable.
Endpoint loopback_for(Endpoint e) {
    if (e.host == "0.0.0.0") e.host = "127.0.0.1";
    if (e.host == "::") e.host = "::1";
    return e;
}

// Opens and drops one connection to the server, without waiting for anything.
void poke(const Endpoint& e, uint16_t port) {
    const int fd = socket(e.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return;
    socklen_t length = 0;
    const sockaddr_storage address = socket_address(e, port, length);
    connect(fd, reinterpret_cast<const sockaddr*>(&address), length);
    close(fd);
}

void send_response(mg_connection* connection, const HttpResponse& response, bool with_body) {
    mg_response_header_start(connection, response.status);
    mg_response_header_add(connection, "Content-Type", response.content_type.c_str(), -1);
    mg_response_header_add(connection, "Content-Length", std::to_string(response.body.size()).c_str(), -1);
    mg_response_header_add(connection, "Cache-Control", "no-store", -1);
    mg_response_header_send(connection);
    if (with_body) mg_write(connection, response.body.data(), response.body.size());
}

}  // namespace

int HttpServer::handle(mg_connection* connection, void* route_data) {
    const auto& route = *static_cast<const HttpRoute*>(route_data);
    const std::string_view method = mg_get_request_info(connection)->request_method;
    if (method != "GET" && method != "HEAD") {
        send_response(connection, {405, "text/plain; charset=utf-8", "only GET and HEAD are supported\n"}, true);
        return 405;
    }
    HttpResponse response;
    try {
        response = route.handler();
    } catch (const std::exception& e) {
        // Never let an exception unwind through civetweb's C frames.
        response = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
    }
    send_response(connection, response, method == "GET");
    return response.status;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, std::vector<HttpRoute> routes) {
    const auto failure = [](const std::string& message) { return runtime_error("metrics endpoint: " + message); };
    const auto endpoint = split_listen(listen);
    if (!endpoint) return failure("expected host:port, got '" + listen + "'");
    mg_init_library(0);
    if (endpoint->ipv6 && mg_check_feature(MG_FEATURES_IPV6) == 0) {
        mg_exit_library();
        return failure("cannot listen on " + listen +
                       ": the installed civetweb library has no IPv6 support; listen on an IPv4 address");
    }

    const std::string listening_port = civetweb_listening_port(*endpoint);
    const char* options[] = {
        "listening_ports", listening_port.c_str(),
        "num_threads", "4",             // scrapes are rare and short
        "request_timeout_ms", "10000",
        "enable_keep_alive", "no",
        nullptr,
    };
    // No document_root: civetweb serves nothing but the routes below (404 otherwise).
    mg_callbacks callbacks{};
    mg_init_data init{&callbacks, nullptr, options};
    char error_text[256] = {};
    unsigned error_code = 0;
    mg_error_data error{&error_code, error_text, sizeof error_text};

    std::unique_ptr<HttpServer> server(new HttpServer());
    server->context_ = mg_start2(&init, &error);
    if (server->context_ == nullptr) {
        mg_exit_library();
        const auto reason = why_bind_fails(*endpoint);
        return failure("cannot listen on " + listening_port + ": " + reason.value_or(error_text));
    }
    mg_server_port ports[1] = {};
    if (mg_get_server_ports(server->context_, 1, ports) == 1) server->port_ = static_cast<uint16_t>(ports[0].port);
    const Endpoint wake = loopback_for(*endpoint);
    server->wake_host_ = wake.host;
    server->wake_ipv6_ = wake.ipv6;

    // Routes can only be added to a running context; a request in the microseconds before
    // they are gets a 404, which every prober retries.
    for (HttpRoute& route : routes) {
        server->routes_.push_back(std::make_unique<HttpRoute>(std::move(route)));
        // "$" anchors the pattern: civetweb otherwise also routes /metrics/anything here.
        const std::string pattern = server->routes_.back()->path + "$";
        mg_set_request_handler(server->context_, pattern.c_str(), &HttpServer::handle, server->routes_.back().get());
    }
    return server;
}

HttpServer::~HttpServer() {
    if (context_ == nullptr) return;
    // civetweb's accept loop polls with a 2 s timeout and looks at its stop flag only in
    // between, so a plain mg_stop takes up to 2 s. Connecting to ourselves while mg_stop
    // waits wakes the loop at once; if the pokes do not get through, mg_stop still ends
    // on its own after the timeout.
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
        mg_stop(context_);
        stopped.store(true);
    });
    while (!stopped.load()) {
        poke(Endpoint{wake_host_, {}, wake_ipv6_}, port_);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stopper.join();
    mg_exit_library();
}

}  // namespace linecap
