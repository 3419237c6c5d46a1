#include "api/http_front.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "util/errno_text.hpp"

namespace linecap::api {

namespace {

using Clock = std::chrono::steady_clock;

enum class State { handshake, head, body, busy };

struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;
    std::string peer_address;
    int peer_port = 0;
    State state = State::handshake;
    bool want_write = false;        // the handshake waits for POLLOUT
    std::string in;                 // bytes read, not yet consumed
    Clock::time_point deadline;
    std::unique_ptr<RequestReader> reader;  // the request being read: made by its first bytes
    bool keep_alive = true;
    bool http11 = true;             // the version of the request being answered
    // Set by the handler thread; read by the front once the connection is back.
    bool gone = false;
};

struct Work {
    Conn* conn = nullptr;
    std::optional<HttpRequest> request;
    std::optional<HttpRefusal> refusal;
};

}  // namespace

struct HttpFront::Impl {
    HttpLimits limits;
    HttpHandler* handler = nullptr;
    SSL_CTX* tls = nullptr;
    int listen_fd = -1;
    int epoll_fd = -1;
    int wake_fd = -1;
    int port = 0;
    std::atomic<bool> stopping{false};

    std::unordered_map<int, std::unique_ptr<Conn>> conns;   // front thread only
    std::unordered_map<std::string, unsigned> per_address;  // front thread only

    std::mutex mu;
    std::condition_variable work_ready;
    std::deque<Work> work;                  // front → handler threads
    std::vector<Conn*> returned;            // handler threads → front
    std::vector<std::thread> workers;

    ~Impl() {
        for (auto& [fd, c] : conns) {
            if (c->ssl) SSL_free(c->ssl);
            ::close(fd);
        }
        for (int fd : {listen_fd, epoll_fd, wake_fd})
            if (fd >= 0) ::close(fd);
    }

    void watch(Conn& c, uint32_t events, int op) {
        epoll_event ev{};
        ev.events = events;
        ev.data.fd = c.fd;
        (void)::epoll_ctl(epoll_fd, op, c.fd, &ev);
    }

    void close_conn(Conn* c) {
        if (c->state != State::busy) (void)::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
        if (c->ssl) {
            if (!c->gone) (void)SSL_shutdown(c->ssl);  // one try: a close_notify if it fits
            SSL_free(c->ssl);
        }
        ::close(c->fd);
        if (auto it = per_address.find(c->peer_address); it != per_address.end() && --it->second == 0)
            per_address.erase(it);
        conns.erase(c->fd);
    }

    void dispatch(Conn* c, Work w) {
        (void)::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
        c->state = State::busy;
        w.conn = c;
        {
            std::lock_guard lock(mu);
            work.push_back(std::move(w));
        }
        work_ready.notify_one();
    }

    // Hands the refusal to a handler thread, to be answered and audited; the connection
    // closes after it.
    void refuse(Conn* c, HttpProblem p) {
        HttpRefusal r;
        static_cast<HttpProblem&>(r) = std::move(p);
        r.peer_address = c->peer_address;
        r.peer_port = c->peer_port;
        r.ssl = c->ssl;
        c->keep_alive = false;
        if (r.status == 0) c->gone = true;
        Work w;
        w.refusal = std::move(r);
        dispatch(c, std::move(w));
    }

    // A refusal of the front's own (a deadline, the client's close): the request so far.
    void refuse(Conn* c, int status, std::string reason) {
        if (!c->reader) c->reader = std::make_unique<RequestReader>(limits.max_request_bytes);
        refuse(c, c->reader->so_far(status, std::move(reason), c->in));
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage sa{};
            socklen_t len = sizeof sa;
            const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                return;  // EAGAIN; EMFILE and the like: the backlog keeps them for later
            }
            char host[INET6_ADDRSTRLEN] = "?";
            int peer_port = 0;
            if (sa.ss_family == AF_INET) {
                const auto* a = reinterpret_cast<const sockaddr_in*>(&sa);
                ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
                peer_port = ntohs(a->sin_port);
            } else if (sa.ss_family == AF_INET6) {
                const auto* a = reinterpret_cast<const sockaddr_in6*>(&sa);
                ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
                peer_port = ntohs(a->sin6_port);
            }
            const std::string address = host;
            unsigned& from_here = per_address[address];
            std::string refused;
            if (conns.size() >= limits.max_connections)
                refused = "connection limit: " + std::to_string(conns.size()) + " connections open (api.max_connections)";
            else if (from_here >= limits.max_connections_per_client)
                refused = "connection limit: " + std::to_string(from_here) + " connections from " + address +
                          " (api.max_connections_per_client)";
            if (!refused.empty()) {
                if (from_here == 0) per_address.erase(address);
                ::close(fd);
                handler->connection_refused(address, peer_port, refused);
                continue;
            }
            ++from_here;
            const int one = 1;
            (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            auto c = std::make_unique<Conn>();
            c->fd = fd;
            c->peer_address = address;
            c->peer_port = peer_port;
            c->deadline = Clock::now() + std::chrono::milliseconds(limits.header_timeout_ms);
            if (tls) {
                c->ssl = SSL_new(tls);
                if (!c->ssl) {
                    ::close(fd);
                    if (--from_here == 0) per_address.erase(address);
                    continue;
                }
                SSL_set_fd(c->ssl, fd);
                SSL_set_accept_state(c->ssl);
                c->state = State::handshake;
            } else {
                c->state = State::head;
            }
            Conn* raw = c.get();
            conns.emplace(fd, std::move(c));
            watch(*raw, EPOLLIN, EPOLL_CTL_ADD);
        }
    }

    // Reads what there is, up to what the current request may still need. False: the
    // connection is closed or handed off (the caller must not touch it).
    bool read_some(Conn* c) {
        if (c->state == State::handshake) {
            const int r = SSL_do_handshake(c->ssl);
            if (r != 1) {
                const int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                    const bool ww = e == SSL_ERROR_WANT_WRITE;
                    if (ww != c->want_write) watch(*c, ww ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
                    c->want_write = ww;
                    return true;
                }
                // A failed handshake (wrong certificate, not TLS) never reaches HTTP.
                c->gone = true;
                close_conn(c);
                return false;
            }
            if (c->want_write) watch(*c, EPOLLIN, EPOLL_CTL_MOD);
            c->want_write = false;
            c->state = State::head;
        }
        char buf[16384];
        for (;;) {
            // Never more than one byte past what max_request_bytes allows for a head, or
            // for a body and a pipelined head after it.
            const size_t cap = c->state == State::body ? 2 * limits.max_request_bytes : limits.max_request_bytes + 1;
            if (c->in.size() >= cap) break;
            const size_t want = std::min(sizeof buf, cap - c->in.size());
            ssize_t n;
            if (c->ssl) {
                n = SSL_read(c->ssl, buf, static_cast<int>(want));
                if (n <= 0) {
                    const int e = SSL_get_error(c->ssl, static_cast<int>(n));
                    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
                    n = 0;
                }
            } else {
                n = ::recv(c->fd, buf, want, 0);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            }
            if (n <= 0) {  // closed, or reset
                c->gone = true;
                if (c->in.empty() && c->state == State::head) {
                    close_conn(c);
                } else {
                    refuse(c, 0, c->state == State::body ? "the client closed before its request body was complete"
                                                         : "the client closed before its request head was complete");
                }
                return false;
            }
            c->in.append(buf, static_cast<size_t>(n));
        }
        return true;
    }

    // Takes the next request out of the buffer if it is complete. False: handed off (or
    // closed).
    bool take_request(Conn* c) {
        if (c->state != State::head && c->state != State::body) return true;
        if (!c->reader) {
            if (c->in.empty()) return true;
            c->reader = std::make_unique<RequestReader>(limits.max_request_bytes);
        }
        size_t consumed = 0;
        const RequestReader::Step step = c->reader->read(c->in, consumed);
        c->in.erase(0, consumed);
        switch (step) {
            case RequestReader::Step::more:
                return true;
            case RequestReader::Step::send_continue:
                if (!send_interim(c, continue_response())) {
                    refuse(c, 0, "the client closed before its request body was complete");
                    return false;
                }
                [[fallthrough]];
            case RequestReader::Step::body:
                if (c->state != State::body) {
                    c->state = State::body;
                    c->deadline = Clock::now() + std::chrono::milliseconds(limits.body_timeout_ms);
                }
                return true;
            case RequestReader::Step::complete: {
                Work w;
                w.request = c->reader->take();
                c->reader.reset();
                c->keep_alive = w.request->keep_alive;
                c->http11 = w.request->http11();
                w.request->peer_address = c->peer_address;
                w.request->peer_port = c->peer_port;
                w.request->ssl = c->ssl;
                dispatch(c, std::move(w));
                return false;
            }
            case RequestReader::Step::refused: {
                HttpProblem p = c->reader->problem();
                c->reader.reset();
                refuse(c, std::move(p));
                return false;
            }
        }
        return true;
    }

    // The front's only write: a 25-byte interim answer, which one non-blocking write puts
    // into the socket unless the client stopped reading an earlier answer (such a client is
    // dropped). False: the client is gone.
    bool send_interim(Conn* c, std::string_view bytes) {
        const ssize_t n = c->ssl ? SSL_write(c->ssl, bytes.data(), static_cast<int>(bytes.size()))
                                 : ::send(c->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(bytes.size())) return true;
        c->gone = true;
        return false;
    }

    void on_event(Conn* c) {
        if (!read_some(c)) return;
        (void)take_request(c);
    }

    void take_back_returned() {
        std::vector<Conn*> back;
        {
            std::lock_guard lock(mu);
            back.swap(returned);
        }
        for (Conn* c : back) {
            if (c->gone || !c->keep_alive || stopping) {
                close_conn(c);
                continue;
            }
            c->state = State::head;
            c->deadline = Clock::now() + std::chrono::milliseconds(limits.header_timeout_ms);
            watch(*c, EPOLLIN, EPOLL_CTL_ADD);
            on_event(c);  // a pipelined request may be in the buffer (or in the TLS session's)
        }
    }

    void expire(Clock::time_point now) {
        std::vector<Conn*> late;
        for (auto& [fd, c] : conns)
            if (c->state != State::busy && now > c->deadline) late.push_back(c.get());
        for (Conn* c : late) {
            if (c->state == State::handshake || (c->state == State::head && c->in.empty())) {
                close_conn(c);  // silent all along: nothing to answer or audit
            } else if (c->state == State::body) {
                refuse(c, 408, "the request body did not arrive within api.body_timeout");
            } else {
                refuse(c, 408, "the request head did not arrive within api.header_timeout");
            }
        }
    }

    void worker_loop();
};

namespace {

class Exchange final : public HttpExchange {
public:
    Exchange(Conn& c, uint64_t timeout_ms) : c_(c), timeout_ms_(timeout_ms) {}

    bool respond(int status, std::string_view type, std::string_view body, const HttpFields& headers) override {
        auto h = headers;
        h.emplace_back("Content-Type", std::string(type));
        h.emplace_back("Content-Length", std::to_string(body.size()));
        return send(response_head(status, h, c_.keep_alive)) && send(body);
    }

    bool begin_stream(int status, const HttpFields& headers, std::string_view trailer_names) override {
        auto h = headers;
        if (c_.http11) {
            h.emplace_back("Transfer-Encoding", "chunked");
            if (!trailer_names.empty()) h.emplace_back("Trailer", std::string(trailer_names));
        } else {
            c_.keep_alive = false;  // the end of the connection is the end of the answer
        }
        return send(response_head(status, h, c_.keep_alive));
    }

    bool send_stream(std::string_view bytes) override {
        if (!c_.http11) return send(bytes);
        if (bytes.empty()) return true;  // an empty chunk would end the answer
        char size[20];
        const int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
        return send(std::string_view(size, static_cast<size_t>(n))) && send(bytes) && send("\r\n");
    }

    bool end_stream(const HttpFields& trailers) override {
        if (!c_.http11) return true;
        std::string last = "0\r\n";
        for (const auto& [k, v] : trailers) last += k + ": " + v + "\r\n";
        return send(last + "\r\n");
    }

    uint64_t bytes_sent() const override { return sent_; }

    bool client_gone() override {
        if (c_.gone) return true;
        // Between writes: a peer that closed or reset shows as POLLHUP/POLLERR or EOF.
        pollfd p{c_.fd, POLLIN | POLLRDHUP, 0};
        if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))) c_.gone = true;
        return c_.gone;
    }

private:
    bool send(std::string_view bytes) {
        while (!bytes.empty()) {
            if (c_.gone) return false;
            short wait_for = POLLOUT;
            if (c_.ssl) {
                const int n = SSL_write(c_.ssl, bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), 1 << 30)));
                if (n > 0) {
                    bytes.remove_prefix(static_cast<size_t>(n));
                    sent_ += static_cast<uint64_t>(n);
                    continue;
                }
                const int e = SSL_get_error(c_.ssl, n);
                if (e == SSL_ERROR_WANT_READ) wait_for = POLLIN;
                else if (e != SSL_ERROR_WANT_WRITE) return fail();
            } else {
                const ssize_t n = ::send(c_.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
                if (n > 0) {
                    bytes.remove_prefix(static_cast<size_t>(n));
                    sent_ += static_cast<uint64_t>(n);
                    continue;
                }
                if (n < 0 && errno == EINTR) continue;
                if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return fail();
            }
            pollfd p{c_.fd, wait_for, 0};
            int r;
            while ((r = ::poll(&p, 1, static_cast<int>(timeout_ms_))) < 0 && errno == EINTR) {
            }
            if (r <= 0 || (p.revents & (POLLERR | POLLNVAL))) return fail();  // client_timeout
        }
        return true;
    }

    bool fail() {
        c_.gone = true;
        return false;
    }
    Conn& c_;
    const uint64_t timeout_ms_;
    uint64_t sent_ = 0;
};

}  // namespace

void HttpFront::Impl::worker_loop() {
    for (;;) {
        Work w;
        {
            std::unique_lock lock(mu);
            work_ready.wait(lock, [&] { return !work.empty() || stopping; });
            if (work.empty()) return;
            w = std::move(work.front());
            work.pop_front();
        }
        Exchange ex(*w.conn, limits.client_timeout_ms);
        if (w.request) handler->serve(*w.request, ex);
        else handler->refused(*w.refusal, ex);
        {
            std::lock_guard lock(mu);
            returned.push_back(w.conn);
        }
        const uint64_t one = 1;
        (void)!::write(wake_fd, &one, sizeof one);
    }
}

HttpFront::HttpFront() : impl_(std::make_unique<Impl>()) {}
HttpFront::~HttpFront() = default;

Result<std::unique_ptr<HttpFront>> HttpFront::create(const std::string& host, int port, SSL_CTX* tls,
                                                     const HttpLimits& limits, HttpHandler& handler) {
    std::unique_ptr<HttpFront> front(new HttpFront());
    Impl& s = *front->impl_;
    s.limits = limits;
    s.handler = &handler;
    s.tls = tls;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    addrinfo* ai = nullptr;
    const std::string service = std::to_string(port);
    if (const int e = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &ai); e != 0)
        return config_error("api.listen " + host + ": " + ::gai_strerror(e));
    s.listen_fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (s.listen_fd >= 0) (void)::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const bool bound = s.listen_fd >= 0 && ::bind(s.listen_fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
                       ::listen(s.listen_fd, 1024) == 0;
    const int bind_errno = errno;
    ::freeaddrinfo(ai);
    if (!bound) return config_error("cannot bind: " + errno_text(bind_errno));
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&sa), &len);
    s.port = ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
    s.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s.epoll_fd < 0 || s.wake_fd < 0) return runtime_error("api: epoll/eventfd: " + errno_text(errno));
    for (int fd : {s.listen_fd, s.wake_fd}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    }
    return front;
}

int HttpFront::port() const { return impl_->port; }

Status HttpFront::run() {
    Impl& s = *impl_;
    for (unsigned i = 0; i < s.limits.threads; ++i) s.workers.emplace_back([&s] { s.worker_loop(); });
    epoll_event events[256];
    while (!s.stopping) {
        // Deadlines are checked at least four times a second: their unit is seconds.
        const int n = ::epoll_wait(s.epoll_fd, events, 256, 250);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == s.listen_fd) {
                s.accept_all();
            } else if (fd == s.wake_fd) {
                uint64_t v;
                (void)!::read(s.wake_fd, &v, sizeof v);
                s.take_back_returned();
            } else if (auto it = s.conns.find(fd); it != s.conns.end() && it->second->state != State::busy) {
                s.on_event(it->second.get());
            }
        }
        s.expire(Clock::now());
    }
    // Stop: answers being written fail at their next write; queued work is dropped.
    {
        std::lock_guard lock(s.mu);
        s.stopping = true;
        for (auto& [fd, c] : s.conns) ::shutdown(fd, SHUT_RDWR);
    }
    s.work_ready.notify_all();
    for (auto& t : s.workers) t.join();
    s.workers.clear();
    {
        std::lock_guard lock(s.mu);
        s.work.clear();
        s.returned.clear();
    }
    return {};
}

void HttpFront::stop() {
    impl_->stopping = true;
    const uint64_t one = 1;
    (void)!::write(impl_->wake_fd, &one, sizeof one);
}

}  // namespace linecap::api
