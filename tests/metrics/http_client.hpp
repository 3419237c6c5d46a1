// A minimal blocking HTTP/1.0 client for the endpoint tests (127.0.0.1 only).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace linecap::test {

struct HttpReply {
    int status = 0;
    std::string headers;   // lower-cased
    std::string body;

    std::string header(const std::string& name) const {
        const std::string key = "\r\n" + name + ": ";
        const size_t at = headers.find(key);
        if (at == std::string::npos) return {};
        const size_t start = at + key.size();
        return headers.substr(start, headers.find("\r\n", start) - start);
    }
};

inline HttpReply http_request(uint16_t port, const std::string& method, const std::string& path) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        close(fd);
        throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
    }
    const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
        close(fd);
        throw std::runtime_error("send failed");
    }
    std::string raw;
    char buffer[4096];
    for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) raw.append(buffer, static_cast<size_t>(n));
    close(fd);

    HttpReply reply;
    const size_t end_of_headers = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || end_of_headers == std::string::npos) {
        throw std::runtime_error("not an HTTP response: " + raw.substr(0, 80));
    }
    reply.status = std::stoi(raw.substr(9, 3));
    reply.headers = raw.substr(0, end_of_headers + 2);
    for (char& c : reply.headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.body = raw.substr(end_of_headers + 4);
    return reply;
}

inline HttpReply http_get(uint16_t port, const std::string& path) { return http_request(port, "GET", path); }

}  // namespace linecap::test
