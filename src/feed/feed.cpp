#include "feed/feed.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pcap/pcap.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "config/values.hpp"
#include "filter/pcap_program.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"
#include "util/errno_text.hpp"
#include "util/tls_server.hpp"
#include "util/unique_fd.hpp"

namespace linecap {
namespace {

using Clock = std::chrono::steady_clock;

// Staging buffers between the writer threads and the feed thread, each one block. Eight
// give the feed thread the time of eight blocks to catch up (at 1 MiB blocks and 1 Gbit/s,
// about 65 ms) before a block is skipped; the feed thread's work per block is a walk and a
// copy per consumer, far less than that.
constexpr size_t kStagingBuffers = 8;
// How long the feed thread sleeps in poll() when nothing happens: only stop() waits for it.
constexpr int kPollTimeoutMs = 100;
// After the last block: how long stop() keeps sending what consumers still have queued.
constexpr auto kFlushTimeout = std::chrono::seconds(2);
// A TLS consumer that has not completed its handshake by then is closed: it holds a place.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

using FeedConsumerCounters = FeedConsumerCountersOf<OwnedCounter>;

// One record as the consumers get it: a pcap record header and the packet bytes.
struct Record {
    pcap::RecordHeader header;
    const uint8_t* data;
};

// Calls f(Record) for each record of a block of `format` (whole records only: the worker
// never splits one).
template <class F>
void for_each_record(FileKind format, const uint8_t* bytes, size_t size, F&& f) {
    size_t at = 0;
    if (format == FileKind::pcap) {
        while (at + sizeof(pcap::RecordHeader) <= size) {
            Record r;
            std::memcpy(&r.header, bytes + at, sizeof r.header);
            r.data = bytes + at + sizeof r.header;
            at += pcap::record_size(r.header.caplen);
            if (at > size) return;
            f(r);
        }
        return;
    }
    while (at + pcapng::kEpbHeaderSize <= size) {
        uint32_t words[7];  // type, total length, interface, ts high, ts low, caplen, len
        std::memcpy(words, bytes + at, sizeof words);
        if (words[1] < pcapng::kEpbHeaderSize || at + words[1] > size) return;
        if (words[0] == pcapng::kEnhancedPacketBlock) {
            const uint64_t ts_ns = (uint64_t{words[3]} << 32) | words[4];
            Record r;
            r.header = pcap::RecordHeader{static_cast<uint32_t>(ts_ns / 1000000000u),
                                          static_cast<uint32_t>(ts_ns % 1000000000u), words[5], words[6]};
            r.data = bytes + at + pcapng::kEpbHeaderSize;
            f(r);
        }
        at += words[1];
    }
}

std::string peer_text(const sockaddr_storage& peer) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (peer.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr, host, sizeof host);
    else if (peer.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, host, sizeof host);
    return host;
}

uint16_t peer_port(const sockaddr_storage& peer) {
    if (peer.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(peer).sin_port);
    if (peer.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(peer).sin6_port);
    return 0;
}

Result<UniqueFd> listen_on(const std::string& listen) {
    const auto what = [&](const std::string& why) { return config_error("feed.listen " + listen + ": " + why); };
    auto address = parse_listen_address(listen);
    if (!address) return what(address.error().message);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(address->port);
    if (const int rc = ::getaddrinfo(address->host.c_str(), port.c_str(), &hints, &found); rc != 0)
        return what(::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
    int error = 0;
    for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
        UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd) {
            error = errno;
            continue;
        }
        const int on = 1;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), 16) != 0) {
            error = errno;
            continue;
        }
        return fd;
    }
    return what(errno_text(error));
}

// A consumer's records waiting to be sent: whole records only, at most `limit` bytes.
class SendBuffer {
public:
    explicit SendBuffer(size_t limit) : limit_(limit) { bytes_.reserve(limit); }

    size_t pending() const { return bytes_.size() - begin_; }

    // Appends the pieces of one record if all of them fit; false when they do not.
    bool append(const void* head, size_t head_size, const void* body, size_t body_size) {
        if (pending() + head_size + body_size > limit_) return false;
        if (bytes_.size() + head_size + body_size > limit_) compact();
        const auto* h = static_cast<const uint8_t*>(head);
        const auto* b = static_cast<const uint8_t*>(body);
        bytes_.insert(bytes_.end(), h, h + head_size);
        bytes_.insert(bytes_.end(), b, b + body_size);
        return true;
    }

    // Sends what the socket (or the TLS session over it) takes; returns the bytes sent, or
    // -1 with errno (EAGAIN: full). A TLS write that has to be repeated is repeated with
    // the same bytes, perhaps more and moved (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
    ssize_t send_to(int fd, SSL* tls) {
        if (pending() == 0) return 0;
        ssize_t n = 0;
        if (tls == nullptr) {
            n = ::send(fd, bytes_.data() + begin_, pending(), MSG_NOSIGNAL | MSG_DONTWAIT);
        } else {
            const int length = static_cast<int>(std::min<size_t>(pending(), 1 << 30));
            n = ::SSL_write(tls, bytes_.data() + begin_, length);
            if (n <= 0) {
                const int error = ::SSL_get_error(tls, static_cast<int>(n));
                errno = error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ ? EAGAIN : EPIPE;
                ::ERR_clear_error();
                return -1;
            }
        }
        if (n > 0) {
            begin_ += static_cast<size_t>(n);
            if (begin_ == bytes_.size()) bytes_.clear(), begin_ = 0;
        }
        return n;
    }

private:
    void compact() {
        bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<ptrdiff_t>(begin_));
        begin_ = 0;
    }

    const size_t limit_;
    std::vector<uint8_t> bytes_;  // reserved once: appends never reallocate
    size_t begin_ = 0;            // sent up to here
};

struct Consumer {
    Consumer(UniqueFd fd_, std::string name_, FeedConsumerCounters& counters_, size_t buffer_bytes)
        : fd(std::move(fd_)), name(std::move(name_)), counters(counters_), buffer(buffer_bytes) {}

    UniqueFd fd;
    std::unique_ptr<SSL, decltype(&::SSL_free)> tls{nullptr, ::SSL_free};  // after fd: freed first
    bool handshaking = false;         // TLS: no records until the handshake is done
    bool handshake_wants_write = false;
    Clock::time_point handshake_deadline{};
    std::string name;                 // address:port, for the log
    FeedConsumerCounters& counters;   // its address's
    SendBuffer buffer;
    // Records become "sent" when the socket has taken their last byte: (queued bytes at
    // the end of a batch, the batch's records), oldest first.
    std::deque<std::pair<uint64_t, uint64_t>> batches;
    uint64_t queued_bytes = 0;        // ever appended to the buffer
    uint64_t sent_bytes = 0;          // ever sent
    uint64_t batch_records = 0;       // appended since the last mark
    uint64_t sent_packets = 0;        // this connection's, for the log
    uint64_t dropped_packets = 0;

    void mark_batch() {
        if (batch_records == 0) return;
        batches.emplace_back(queued_bytes, batch_records);
        batch_records = 0;
    }
    void drop(uint64_t packets) {
        counters.dropped_packets.add(packets);
        dropped_packets += packets;
    }
};

struct Staged {
    std::unique_ptr<uint8_t[]> bytes;
    size_t used = 0;
    uint64_t packets = 0;
};

}  // namespace

struct Feed::Impl {
    FeedConfig config;
    FileKind format = FileKind::pcap;
    uint32_t snaplen = pcap::kMaxSnaplen;
    std::optional<PcapProgram> filter;
    SslCtx tls;  // feed.tls_cert: every consumer speaks TLS
    std::string address;
    UniqueFd listener;
    UniqueFd wake;  // eventfd: a block was staged

    // Between offer() (writer threads) and the feed thread; the lock is held for a pointer
    // move only.
    std::mutex staging_mutex;
    std::vector<std::unique_ptr<Staged>> staging;  // every buffer
    std::vector<Staged*> free_staging;
    std::vector<Staged*> ready_staging;            // in the order they were offered
    std::atomic<uint64_t> unstaged_packets{0};     // in blocks no buffer was free for
    std::atomic<uint32_t> connected{0};            // read by offer()

    std::thread thread;
    std::atomic<bool> running{false};
    bool started = false;
    bool stopped = false;

    // Feed thread only.
    std::vector<std::unique_ptr<Consumer>> consumers;
    uint64_t unstaged_seen = 0;

    // Written by the feed thread (under counters_mutex only to add an address), read by counts().
    mutable std::mutex counters_mutex;
    std::map<std::string, std::unique_ptr<FeedConsumerCounters>> by_address;
    std::vector<std::string> address_order;
    OwnedCounter accepted;
    OwnedCounter refused;

    FeedConsumerCounters& counters_for(const std::string& host) {
        const std::lock_guard lock(counters_mutex);
        auto& slot = by_address[host];
        if (!slot) {
            slot = std::make_unique<FeedConsumerCounters>();
            address_order.push_back(host);
        }
        return *slot;
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage peer{};
            socklen_t length = sizeof peer;
            UniqueFd fd(::accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer), &length,
                                  SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (!fd) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                    spdlog::warn("feed: accept on {}: {}", address, errno_text(errno));
                return;
            }
            const std::string host = peer_text(peer);
            const std::string name = peer.ss_family == AF_INET6 ? "[" + host + "]:" + std::to_string(peer_port(peer))
                                                                 : host + ":" + std::to_string(peer_port(peer));
            if (consumers.size() >= config.max_consumers) {
                refused.add(1);
                spdlog::warn("feed: refused {}: {} consumers connected (feed.max_consumers)", name, consumers.size());
                continue;
            }
            auto consumer = std::make_unique<Consumer>(std::move(fd), name, counters_for(host), config.buffer_bytes);
            const pcap::FileHeader header = pcap::file_header(snaplen);
            consumer->buffer.append(&header, sizeof header, nullptr, 0);
            consumer->queued_bytes = sizeof header;
            if (tls) {
                consumer->tls.reset(::SSL_new(tls.get()));
                if (!consumer->tls || ::SSL_set_fd(consumer->tls.get(), consumer->fd.get()) != 1) {
                    spdlog::error("feed: TLS for {}: {}", name, tls_error_text());
                    continue;
                }
                ::SSL_set_accept_state(consumer->tls.get());
                consumer->handshaking = true;
                consumer->handshake_deadline = Clock::now() + kHandshakeTimeout;
            }
            accepted.add(1);
            const bool handshaking = consumer->handshaking;
            consumers.push_back(std::move(consumer));
            connected.store(static_cast<uint32_t>(consumers.size()), std::memory_order_release);
            if (!handshaking) log_connected(*consumers.back(), "");
        }
    }

    void log_connected(const Consumer& c, const std::string& how) {
        spdlog::info("feed: consumer {} connected{} ({} of at most {})", c.name, how, consumers.size(),
                     config.max_consumers);
    }

    // One step of a TLS handshake; false when it failed (the consumer goes).
    bool handshake(Consumer& c) {
        const int rc = ::SSL_do_handshake(c.tls.get());
        if (rc == 1) {
            c.handshaking = false;
            std::string subject = "?";
            if (X509* cert = ::SSL_get_peer_certificate(c.tls.get())) {
                char text[512];
                ::X509_NAME_oneline(::X509_get_subject_name(cert), text, sizeof text);
                subject = text;
                ::X509_free(cert);
            }
            log_connected(c, " over TLS, certificate " + subject);
            return true;
        }
        const int error = ::SSL_get_error(c.tls.get(), rc);
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
            c.handshake_wants_write = error == SSL_ERROR_WANT_WRITE;
            return true;
        }
        spdlog::warn("feed: TLS handshake with {} failed: {}", c.name, tls_error_text());
        return false;
    }

    // One staged block to every consumer: each record that passes the filter goes into
    // every buffer it fits in.
    void distribute(const Staged& block) {
        for_each_record(format, block.bytes.get(), block.used, [&](const Record& r) {
            if (filter) {
                pcap_pkthdr h{};
                h.caplen = r.header.caplen;
                h.len = r.header.len;
                if (::pcap_offline_filter(&filter->program(), &h, r.data) == 0) return;
            }
            for (auto& c : consumers) {
                if (c->handshaking) continue;  // not a consumer yet
                if (c->buffer.append(&r.header, sizeof r.header, r.data, r.header.caplen)) {
                    c->queued_bytes += sizeof r.header + r.header.caplen;
                    ++c->batch_records;
                } else {
                    c->drop(1);
                }
            }
        });
        for (auto& c : consumers) c->mark_batch();
    }

    // The blocks staged since the last call, to the consumers; their buffers back.
    void take_staged() {
        std::vector<Staged*> ready;
        {
            const std::lock_guard lock(staging_mutex);
            ready.swap(ready_staging);
        }
        for (Staged* s : ready) distribute(*s);
        const std::lock_guard lock(staging_mutex);
        for (Staged* s : ready) free_staging.push_back(s);
    }

    // Blocks no staging buffer was free for: every consumer missed their packets. (Only a
    // filter could have kept some of them out; unfiltered they are all counted.)
    void count_unstaged() {
        const uint64_t total = unstaged_packets.load(std::memory_order_relaxed);
        const uint64_t missed = total - unstaged_seen;
        unstaged_seen = total;
        if (missed == 0) return;
        for (auto& c : consumers)
            if (!c->handshaking) c->drop(missed);
    }

    // Returns false when the consumer has gone (or its socket failed).
    bool send(Consumer& c) {
        if (c.handshaking) return true;
        for (;;) {
            const ssize_t n = c.buffer.send_to(c.fd.get(), c.tls.get());
            if (n == 0) return true;
            if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            c.sent_bytes += static_cast<uint64_t>(n);
            c.counters.sent_bytes.add(static_cast<uint64_t>(n));
            while (!c.batches.empty() && c.batches.front().first <= c.sent_bytes) {
                c.counters.sent_packets.add(c.batches.front().second);
                c.sent_packets += c.batches.front().second;
                c.batches.pop_front();
            }
        }
    }

    // Consumers send nothing; whatever they do send is read and ignored. False at end of file.
    static bool still_there(Consumer& c) {
        uint8_t ignored[512];
        for (;;) {
            if (c.tls) {
                const int n = ::SSL_read(c.tls.get(), ignored, sizeof ignored);
                if (n > 0) continue;
                const int error = ::SSL_get_error(c.tls.get(), n);
                ::ERR_clear_error();
                return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE;
            }
            const ssize_t n = ::recv(c.fd.get(), ignored, sizeof ignored, MSG_DONTWAIT);
            if (n > 0) continue;
            if (n == 0) return false;
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        }
    }

    void close_consumer(size_t i, const char* why) {
        Consumer& c = *consumers[i];
        if (c.tls && !c.handshaking) ::SSL_shutdown(c.tls.get());  // best effort: the close_notify alert
        ::ERR_clear_error();
        spdlog::info("feed: consumer {} {}: {} packets sent, {} dropped ({} bytes not sent)", c.name, why,
                     c.sent_packets, c.dropped_packets, c.buffer.pending());
        consumers.erase(consumers.begin() + static_cast<ptrdiff_t>(i));
        connected.store(static_cast<uint32_t>(consumers.size()), std::memory_order_release);
    }

    void run() {
        std::vector<pollfd> fds;
        while (running.load(std::memory_order_acquire)) {
            fds.clear();
            fds.push_back({listener.get(), POLLIN, 0});
            fds.push_back({wake.get(), POLLIN, 0});
            for (const auto& c : consumers) {
                const bool wants_write = c->handshaking ? c->handshake_wants_write : c->buffer.pending() > 0;
                fds.push_back({c->fd.get(), static_cast<short>(POLLIN | (wants_write ? POLLOUT : 0)), 0});
            }
            if (::poll(fds.data(), fds.size(), kPollTimeoutMs) < 0 && errno != EINTR) {
                spdlog::error("feed: poll: {}", errno_text(errno));
                std::this_thread::sleep_for(std::chrono::milliseconds(kPollTimeoutMs));
                continue;
            }
            // The consumers polled are the first ones of the list: accept_all appends.
            const size_t polled = fds.size() - 2;
            const auto now = Clock::now();
            for (size_t i = polled; i-- > 0;) {
                const short events = fds[i + 2].revents;
                Consumer& c = *consumers[i];
                if (c.handshaking) {
                    if (events != 0 && !handshake(c))
                        close_consumer(i, "failed its TLS handshake");
                    else if (c.handshaking && now > c.handshake_deadline)
                        close_consumer(i, "did not finish its TLS handshake in time");
                } else if ((events & (POLLIN | POLLHUP | POLLERR)) && !still_there(c)) {
                    close_consumer(i, "disconnected");
                } else if ((events & POLLOUT) && !send(c)) {
                    close_consumer(i, "failed");
                }
            }
            if (fds[1].revents & POLLIN) {
                uint64_t ignored;
                [[maybe_unused]] const ssize_t n = ::read(wake.get(), &ignored, sizeof ignored);
            }
            take_staged();
            count_unstaged();
            // Straight away, not at the next poll: most of the time the socket has room.
            for (size_t i = consumers.size(); i-- > 0;)
                if (!send(*consumers[i])) close_consumer(i, "failed");
            if (fds[0].revents & POLLIN) accept_all();
        }
        finish();
    }

    // After the last block: what is queued goes out while the consumers take it.
    void finish() {
        take_staged();
        count_unstaged();
        const auto deadline = Clock::now() + kFlushTimeout;
        std::vector<pollfd> fds;
        while (Clock::now() < deadline) {
            for (size_t i = consumers.size(); i-- > 0;)
                if (!send(*consumers[i])) close_consumer(i, "failed");
            fds.clear();
            for (const auto& c : consumers)
                if (!c->handshaking && c->buffer.pending() > 0) fds.push_back({c->fd.get(), POLLOUT, 0});
            if (fds.empty()) break;
            ::poll(fds.data(), fds.size(), 50);
        }
        while (!consumers.empty()) close_consumer(consumers.size() - 1, "closed at shutdown");
    }
};

Feed::Feed(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Feed::~Feed() { stop(); }

Result<std::unique_ptr<Feed>> Feed::create(const Config& config) {
    auto impl = std::make_unique<Impl>();
    impl->config = config.feed;
    impl->format = config.output.format;
    // The largest snap length of the fed ports: no record is longer.
    uint32_t snaplen = 0;
    for (const PortConfig& port : config.ports)
        if (config.feed.carries(port.name)) snaplen = std::max<uint32_t>(snaplen, port.snaplen);
    impl->snaplen = snaplen == 0 ? pcap::kMaxSnaplen : std::min(snaplen, pcap::kMaxSnaplen);
    if (config.feed.tls()) {
        // TLS 1.2 or later, and a client certificate that chains to feed.tls_client_ca.
        auto tls = tls_server_context({"feed", config.feed.tls_cert, config.feed.tls_key, config.feed.tls_client_ca},
                                      ClientCertificate::required);
        if (!tls) return tls.error();
        impl->tls = std::move(tls.value());
    }
    if (!config.feed.filter.empty()) {
        auto program = PcapProgram::compile(config.feed.filter, impl->snaplen);
        if (!program) return program.error().context("feed.filter");
        impl->filter = std::move(program.value());
    }
    auto listener = listen_on(config.feed.listen);
    if (!listener) return listener.error();
    impl->listener = std::move(listener.value());
    impl->address = config.feed.listen;
    impl->wake = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!impl->wake) return runtime_error("feed: eventfd: " + errno_text(errno));
    const size_t block_bytes = size_t{config.output.block_size_kb} * 1024;
    for (size_t i = 0; i < kStagingBuffers; ++i) {
        auto staged = std::make_unique<Staged>();
        staged->bytes = std::make_unique<uint8_t[]>(block_bytes);
        impl->free_staging.push_back(staged.get());
        impl->staging.push_back(std::move(staged));
    }
    return std::unique_ptr<Feed>(new Feed(std::move(impl)));
}

void Feed::offer(const Stream& stream, const WriteBlock& block) {
    Impl& impl = *impl_;
    if (block.packets == 0 || impl.connected.load(std::memory_order_acquire) == 0) return;
    if (!impl.config.carries(stream.id.port)) return;
    Staged* staged = nullptr;
    {
        const std::lock_guard lock(impl.staging_mutex);
        if (!impl.free_staging.empty()) {
            staged = impl.free_staging.back();
            impl.free_staging.pop_back();
        }
    }
    if (staged == nullptr) {
        impl.unstaged_packets.fetch_add(block.packets, std::memory_order_relaxed);  // several writer threads
        return;
    }
    std::memcpy(staged->bytes.get(), block.data, block.used);
    staged->used = block.used;
    staged->packets = block.packets;
    {
        const std::lock_guard lock(impl.staging_mutex);
        impl.ready_staging.push_back(staged);
    }
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(impl.wake.get(), &one, sizeof one);
}

Status Feed::start() {
    Impl& impl = *impl_;
    if (impl.started) return runtime_error("feed: start() twice");
    impl.started = true;
    impl.running.store(true, std::memory_order_release);
    try {
        impl.thread = std::thread([&impl] { impl.run(); });
    } catch (const std::system_error& e) {
        impl.running.store(false);
        return runtime_error(std::string("feed: starting its thread: ") + e.what());
    }
    pthread_setname_np(impl.thread.native_handle(), "lc-feed");
    spdlog::info("feed: serving {} on {} (pcap over TCP, {}){}",
                 impl.config.ports.empty() ? std::string("every port") : "ports " + [&] {
                     std::string names;
                     for (const std::string& p : impl.config.ports) names += (names.empty() ? "" : ", ") + p;
                     return names;
                 }(),
                 impl.address, impl.tls ? "TLS, client certificates required" : "plaintext",
                 impl.config.filter.empty() ? "" : ", filter '" + impl.config.filter + "'");
    return {};
}

void Feed::stop() {
    Impl& impl = *impl_;
    if (impl.stopped) return;
    impl.stopped = true;
    impl.running.store(false, std::memory_order_release);
    if (impl.thread.joinable()) impl.thread.join();
    impl.listener.reset();
}

FeedCounts Feed::counts() const {
    const Impl& impl = *impl_;
    FeedCounts out;
    out.consumers = impl.connected.load(std::memory_order_acquire);
    out.connections = FeedConnectionCounts{impl.accepted.get(), impl.refused.get()};
    const std::lock_guard lock(impl.counters_mutex);
    for (const std::string& address : impl.address_order)
        out.addresses.push_back({address, read_counts(*impl.by_address.at(address))});
    return out;
}

const std::string& Feed::address() const { return impl_->address; }

}  // namespace linecap
