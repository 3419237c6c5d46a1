// The feed without DPDK: blocks built by hand are offered as the writer offers them, and
// consumers are plain sockets. What each consumer reads must be a pcap stream of exactly
// the offered (and matching) records; a consumer that does not read loses records in its
// own feed only, counted.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "config/config.hpp"
#include "config/values.hpp"
#include "feed/feed.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"
#include "util/unique_fd.hpp"

namespace linecap {
namespace {

using namespace std::chrono_literals;

uint16_t free_port() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &length);
    return ntohs(a.sin_port);
}

Config feed_config(const std::string& filter = "", FileKind format = FileKind::pcap) {
    Config config;
    PortConfig port;
    port.name = "p0";
    port.snaplen = 2000;
    config.ports = {port};
    PortConfig other;
    other.name = "p1";
    config.ports.push_back(other);
    config.output.format = format;
    config.output.block_size_kb = 64;
    config.feed.enabled = true;
    config.feed.listen = "127.0.0.1:" + std::to_string(free_port());
    config.feed.ports = {"p0"};
    config.feed.filter = filter;
    config.feed.buffer_bytes = 1 << 20;
    config.feed.max_consumers = 2;
    return config;
}

UniqueFd connect_to(const std::string& listen, int receive_buffer = 0) {
    const auto address = parse_listen_address(listen);
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    if (receive_buffer > 0) ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(address->port);
    ::inet_pton(AF_INET, address->host.c_str(), &a.sin_addr);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    return fd;
}

// A block of `count` UDP-looking frames of `size` bytes (byte 12..13 = IPv4, 23 = UDP),
// frame i carrying i in its last bytes, timestamps 1 s + i ns.
struct TestBlock {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 1024);
    WriteBlock block;

    TestBlock(FileKind format, uint32_t first, uint32_t count, uint32_t size, uint8_t proto = 17) {
        block.data = bytes.data();
        block.capacity = static_cast<uint32_t>(bytes.size());
        for (uint32_t i = first; i < first + count; ++i) {
            std::vector<uint8_t> frame(size, 0);
            frame[12] = 0x08;
            frame[14] = 0x45;
            frame[23] = proto;
            std::memcpy(frame.data() + size - 4, &i, 4);
            const uint64_t ts = 1000000000ull + i;
            uint8_t* at = block.tail();
            if (format == FileKind::pcap) {
                at += pcap::encode_record_header(at, ts, size, size);
                std::memcpy(at, frame.data(), size);
                block.used += static_cast<uint32_t>(pcap::record_size(size));
            } else {
                uint8_t* data = at + pcapng::encode_epb_header(at, ts, size, size);
                std::memcpy(data, frame.data(), size);
                pcapng::encode_epb_trailer(data + size, size);
                block.used += static_cast<uint32_t>(pcapng::record_size(size));
            }
            block.packets += 1;
        }
    }
};

// A consumer reading on a thread of its own, as fast as the feed sends. A test offers the
// next block once the one before has arrived (wait_for): a writer the feed keeps up with
// whatever the machine's load, not a pace guessed with sleeps. take() reads to the end of
// the stream, which the feed's stop() or a refusal makes.
class Reader {
public:
    explicit Reader(int fd) : fd_(fd) {
        timeval tv{0, 50 * 1000};  // how often the thread looks at stopping_
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        thread_ = std::thread([this] { run(); });
    }
    ~Reader() {
        stopping_ = true;
        thread_.join();
    }

    // True once `n` bytes have arrived, false if they have not within the bound.
    bool wait_for(size_t n, std::chrono::milliseconds bound = 20s) {
        std::unique_lock lock(mutex_);
        return arrived_.wait_for(lock, bound, [&] { return bytes_.size() >= n || closed_; }) && bytes_.size() >= n;
    }

    // Everything the consumer read, once the feed has closed the connection (bounded).
    std::vector<uint8_t> take(std::chrono::milliseconds bound = 20s) {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(arrived_.wait_for(lock, bound, [&] { return closed_; })) << "the feed did not close the stream";
        return bytes_;
    }

private:
    void run() {
        uint8_t buffer[65536];
        while (!stopping_) {
            const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
            std::lock_guard lock(mutex_);
            if (n <= 0) {
                closed_ = true;
                arrived_.notify_all();
                return;
            }
            bytes_.insert(bytes_.end(), buffer, buffer + n);
            arrived_.notify_all();
        }
    }

    int fd_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<uint8_t> bytes_;
    bool closed_ = false;
    std::thread thread_;
};

// The bytes of a pcap stream of `records` records of `frame_size` bytes, file header included.
size_t stream_bytes(uint32_t records, uint32_t frame_size) {
    return sizeof(pcap::FileHeader) + size_t{records} * (sizeof(pcap::RecordHeader) + frame_size);
}

struct Parsed {
    pcap::FileHeader header{};
    std::vector<uint32_t> sequence;  // of each record
    bool whole = true;               // no partial record at the end
};

Parsed parse(const std::vector<uint8_t>& stream) {
    Parsed p;
    if (stream.size() < sizeof p.header) {
        p.whole = false;
        return p;
    }
    std::memcpy(&p.header, stream.data(), sizeof p.header);
    size_t at = sizeof p.header;
    while (at + sizeof(pcap::RecordHeader) <= stream.size()) {
        pcap::RecordHeader r;
        std::memcpy(&r, stream.data() + at, sizeof r);
        if (at + sizeof r + r.caplen > stream.size()) break;
        uint32_t seq;
        std::memcpy(&seq, stream.data() + at + sizeof r + r.caplen - 4, 4);
        EXPECT_EQ(r.ts_sec, 1u);
        EXPECT_EQ(r.ts_frac, seq);
        p.sequence.push_back(seq);
        at += sizeof r + r.caplen;
    }
    p.whole = at == stream.size();
    return p;
}

Stream stream_of(const std::string& port) { return Stream(StreamId{port, 0, 0}, 0, 1); }

void wait_connected(const Feed& feed, uint64_t n) {
    for (int i = 0; i < 2000 && feed.counts().consumers != n; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(feed.counts().consumers, n);
}

void check_feed_of(FileKind format) {
    auto feed = Feed::create(feed_config("", format));
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    UniqueFd consumer = connect_to((*feed)->address());
    wait_connected(**feed, 1);
    Reader reader(consumer.get());
    const Stream p0 = stream_of("p0");
    const Stream p1 = stream_of("p1");
    size_t expected = sizeof(pcap::FileHeader);
    for (uint32_t b = 0; b < 10; ++b) {
        (*feed)->offer(p0, TestBlock(format, b * 20, 20, 100 + b).block);
        (*feed)->offer(p1, TestBlock(format, 9000, 5, 60).block);  // not a fed port
        expected += stream_bytes(20, 100 + b) - sizeof(pcap::FileHeader);
        ASSERT_TRUE(reader.wait_for(expected)) << "block " << b << " did not arrive";
    }
    (*feed)->stop();
    const Parsed got = parse(reader.take());
    EXPECT_EQ(got.header.magic, pcap::kMagicNanosecond);
    EXPECT_EQ(got.header.snaplen, 2000u);
    EXPECT_EQ(got.header.linktype, pcap::kLinktypeEthernet);
    ASSERT_EQ(got.sequence.size(), 200u);
    for (uint32_t i = 0; i < 200; ++i) EXPECT_EQ(got.sequence[i], i);
    EXPECT_TRUE(got.whole);
    const FeedCounts counts = (*feed)->counts();
    ASSERT_EQ(counts.addresses.size(), 1u);
    EXPECT_EQ(counts.addresses[0].address, "127.0.0.1");
    EXPECT_EQ(counts.addresses[0].counts.sent_packets, 200u);
    EXPECT_EQ(counts.addresses[0].counts.dropped_packets, 0u);
    EXPECT_EQ(counts.connections.accepted, 1u);
    EXPECT_EQ(counts.consumers, 0u);
}

TEST(Feed, SendsThePcapRecordsOfTheFedPorts) { check_feed_of(FileKind::pcap); }

TEST(Feed, TurnsPcapngBlocksIntoPcapRecords) { check_feed_of(FileKind::pcapng); }

TEST(Feed, SendsOnlyWhatTheFilterMatches) {
    auto feed = Feed::create(feed_config("tcp"));
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    UniqueFd consumer = connect_to((*feed)->address());
    wait_connected(**feed, 1);
    Reader reader(consumer.get());
    const Stream p0 = stream_of("p0");
    (*feed)->offer(p0, TestBlock(FileKind::pcap, 0, 10, 80, 17).block);
    (*feed)->offer(p0, TestBlock(FileKind::pcap, 10, 10, 80, 6).block);
    ASSERT_TRUE(reader.wait_for(stream_bytes(10, 80)));
    (*feed)->stop();  // the end of the stream: nothing more can arrive
    const Parsed got = parse(reader.take());
    ASSERT_EQ(got.sequence.size(), 10u);
    EXPECT_EQ(got.sequence.front(), 10u);
    EXPECT_TRUE(got.whole);
}

TEST(Feed, RefusesAFilterLibpcapRejects) {
    auto feed = Feed::create(feed_config("udp port"));
    ASSERT_FALSE(feed.ok());
    EXPECT_NE(feed.error().message.find("feed.filter"), std::string::npos) << feed.error().message;
    EXPECT_TRUE(feed.error().config);
}

// One consumer reads, one never does: the reader gets every record; the other's drops are
// counted, and its stream (what it got) is still whole records.
TEST(Feed, ASlowConsumerLosesPacketsInItsOwnFeedOnly) {
    auto feed = Feed::create(feed_config());
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    UniqueFd stalled = connect_to((*feed)->address(), 4096);
    UniqueFd consumer = connect_to((*feed)->address());
    wait_connected(**feed, 2);
    Reader reader(consumer.get());
    const Stream p0 = stream_of("p0");
    constexpr uint32_t kBlocks = 400, kPerBlock = 40;  // 400 × 40 × 1016 bytes: 16 MiB, far over 1 MiB
    for (uint32_t b = 0; b < kBlocks; ++b) {
        (*feed)->offer(p0, TestBlock(FileKind::pcap, b * kPerBlock, kPerBlock, 1000).block);
        ASSERT_TRUE(reader.wait_for(stream_bytes((b + 1) * kPerBlock, 1000))) << "block " << b << " did not arrive";
    }
    const FeedCounts counts = (*feed)->counts();
    ASSERT_EQ(counts.addresses.size(), 1u);  // both from 127.0.0.1
    const uint64_t dropped = counts.addresses[0].counts.dropped_packets;
    EXPECT_GT(dropped, 0u);
    // The stalled consumer now reads what it was sent: whole records, in order, with gaps.
    Reader draining(stalled.get());
    (*feed)->stop();
    const Parsed got = parse(reader.take());
    ASSERT_EQ(got.sequence.size(), kBlocks * kPerBlock);
    for (uint32_t i = 0; i < got.sequence.size(); ++i) ASSERT_EQ(got.sequence[i], i);
    const Parsed slow = parse(draining.take());
    EXPECT_TRUE(slow.whole);
    EXPECT_EQ(slow.sequence.size() + dropped, kBlocks * kPerBlock);
    EXPECT_TRUE(std::is_sorted(slow.sequence.begin(), slow.sequence.end()));
    EXPECT_EQ((*feed)->counts().addresses[0].counts.sent_packets, 2 * kBlocks * kPerBlock - dropped);
}

// Blocks offered faster than the feed thread takes them (more than its staging buffers at
// once): what is not staged is counted as dropped, what is sent is whole and in order.
TEST(Feed, CountsTheBlocksItCouldNotStage) {
    auto feed = Feed::create(feed_config());
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    UniqueFd consumer = connect_to((*feed)->address());
    wait_connected(**feed, 1);
    std::vector<TestBlock> blocks;
    for (uint32_t b = 0; b < 40; ++b) blocks.emplace_back(FileKind::pcap, b * 20, 20, 1000);
    Reader reader(consumer.get());
    for (const TestBlock& b : blocks) (*feed)->offer(stream_of("p0"), b.block);
    (*feed)->stop();
    const Parsed got = parse(reader.take());
    EXPECT_TRUE(got.whole);
    EXPECT_TRUE(std::is_sorted(got.sequence.begin(), got.sequence.end()));
    const FeedConsumerCounts counts = (*feed)->counts().addresses.at(0).counts;
    EXPECT_EQ(counts.sent_packets, got.sequence.size());
    EXPECT_EQ(counts.sent_packets + counts.dropped_packets, 800u);
}

TEST(Feed, RefusesConsumersBeyondTheMaximum) {
    auto feed = Feed::create(feed_config());
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    UniqueFd a = connect_to((*feed)->address());
    UniqueFd b = connect_to((*feed)->address());
    wait_connected(**feed, 2);
    UniqueFd c = connect_to((*feed)->address());
    EXPECT_TRUE(Reader(c.get()).take().empty());  // closed at once, nothing sent
    EXPECT_EQ((*feed)->counts().connections.refused, 1u);
    a.reset();
    wait_connected(**feed, 1);
}

TEST(Feed, OffersNothingWithoutConsumers) {
    auto feed = Feed::create(feed_config());
    ASSERT_TRUE(feed.ok()) << feed.error().message;
    ASSERT_TRUE((*feed)->start().ok());
    (*feed)->offer(stream_of("p0"), TestBlock(FileKind::pcap, 0, 10, 80).block);
    UniqueFd late = connect_to((*feed)->address());
    wait_connected(**feed, 1);
    Reader reader(late.get());
    (*feed)->offer(stream_of("p0"), TestBlock(FileKind::pcap, 10, 10, 80).block);
    ASSERT_TRUE(reader.wait_for(stream_bytes(10, 80)));
    (*feed)->stop();  // the end of the stream: nothing more can arrive
    const Parsed got = parse(reader.take());
    ASSERT_EQ(got.sequence.size(), 10u);
    EXPECT_EQ(got.sequence.front(), 10u);
}

}  // namespace
}  // namespace linecap
