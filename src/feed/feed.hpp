// The live feed over PCAP-over-IP (feed.* in the configuration): a TCP listener that sends
// every connected consumer a nanosecond pcap stream — one global header, then the records
// of the fed ports, matching feed.filter, as the writer writes them.
//
// Where the packets come from, and what that costs capture: the writer calls offer() with
// each block right after writing it (Writer::on_block_written), before the block goes
// back to its worker. offer() does nothing while no consumer is connected (one relaxed
// load); otherwise it copies the block's bytes once into a free staging buffer of the feed
// and wakes the feed thread — one memcpy of at most a block and one eventfd write next to
// the block's write(2), whatever the number of consumers. When every staging buffer is
// taken (the feed thread is behind) the block is not copied and its packets count as
// dropped for every consumer. The worker never sees the feed, and no block is ever held
// for it, so capture never waits for a consumer.
//
// The feed thread (lc-feed) does the rest: it walks the staged records (pcap, or pcapng
// Enhanced Packet Blocks turned into pcap records), runs the filter, and appends each
// record to every consumer's bounded buffer (feed.buffer_bytes); a record that does not
// fit is dropped from that consumer's feed and counted, so a slow consumer loses packets
// in its own feed only. Buffers hold whole records, so every stream stays valid pcap.
// Non-blocking sockets, one poll() loop: accept, send, notice a consumer has gone. With
// feed.tls_cert every connection is TLS (1.2 or later) and must present a client
// certificate that chains to feed.tls_client_ca; it gets records once its handshake is
// done, and its certificate's subject is logged.
//
// Counters: per consumer address (all its connections together; addresses, not
// connections, so the series stay few), written by the feed thread, read by counts() on
// any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "output/block.hpp"
#include "output/stream.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"
#include "util/result.hpp"

namespace linecap {

// What the consumers from one address got and missed, over all their connections.
template <class Counter>
struct FeedConsumerCountersOf {
    Counter sent_packets{};     // records whose last byte reached the socket
    Counter sent_bytes{};       // bytes that reached the socket, pcap header included
    Counter dropped_packets{};  // records of the fed ports that the consumer did not get

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.sent_packets...);
        f(g.sent_bytes...);
        f(g.dropped_packets...);
    }
};
using FeedConsumerCounts = FeedConsumerCountersOf<uint64_t>;

// Labels: address (the consumer's IP address).
inline constexpr FieldMetric<FeedConsumerCounts> kFeedSentPacketsMetric{
    {"linecap_feed_sent_packets_total", "Packets the live feed sent to the consumers from this address.",
     MetricType::counter},
    &FeedConsumerCounts::sent_packets};
inline constexpr FieldMetric<FeedConsumerCounts> kFeedSentBytesMetric{
    {"linecap_feed_sent_bytes_total",
     "Bytes the live feed sent to the consumers from this address (pcap headers and records).", MetricType::counter},
    &FeedConsumerCounts::sent_bytes};
inline constexpr FieldMetric<FeedConsumerCounts> kFeedDroppedPacketsMetric{
    {"linecap_feed_dropped_packets_total",
     "Packets of the fed ports the consumers from this address did not get because they read too slowly (their "
     "own feed only: these are not capture drops, the packets are in the files).",
     MetricType::counter},
    &FeedConsumerCounts::dropped_packets};

struct FeedConnectionCounts {
    uint64_t accepted = 0;
    uint64_t refused = 0;  // beyond feed.max_consumers
};
inline constexpr FamilyMetric<FeedConnectionCounts, 2> kFeedConnectionsMetric{
    {"linecap_feed_connections_total", "Connections to the live feed, by result (refused: feed.max_consumers).",
     MetricType::counter},
    "result",
    {{"accepted", &FeedConnectionCounts::accepted}, {"refused", &FeedConnectionCounts::refused}}};
inline constexpr MetricDecl kFeedConsumersMetric{"linecap_feed_consumers", "Consumers connected to the live feed.",
                                                 MetricType::gauge};

struct FeedAddressCounts {
    std::string address;
    FeedConsumerCounts counts;
};

struct FeedCounts {
    uint64_t consumers = 0;  // connected now
    FeedConnectionCounts connections;
    std::vector<FeedAddressCounts> addresses;  // every address that ever connected, in order of first connection
};

class Feed {
public:
    // Binds feed.listen and compiles feed.filter (errors are configuration errors naming
    // the key); nothing is accepted before start(). `config.feed.enabled` must be set.
    static Result<std::unique_ptr<Feed>> create(const Config& config);
    ~Feed();  // stop()
    Feed(const Feed&) = delete;
    Feed& operator=(const Feed&) = delete;

    // A writer thread, once `block` of `stream` is written: see the top of this file.
    // Never blocks, never fails; the block is the caller's again when it returns.
    void offer(const Stream& stream, const WriteBlock& block);

    // Starts the feed thread.
    Status start();
    // After the last offer(): sends the consumers what is queued for them (for at most two
    // seconds), closes them, joins the thread. Counters stay readable.
    void stop();

    // Any thread.
    FeedCounts counts() const;
    // feed.listen, as bound.
    const std::string& address() const;

private:
    struct Impl;
    explicit Feed(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace linecap
