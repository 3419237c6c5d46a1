// Worker-side pieces that need no running port: queue assignment, the TSC clock,
// rotation boundaries and record copying from (multi-segment) mbufs.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "capture/assignment.hpp"
#include "capture/record_copy.hpp"
#include "capture/tsc_clock.hpp"
#include "capture/worker.hpp"

namespace linecap {
namespace {

Config two_port_config(std::vector<unsigned> lcores, unsigned q0, unsigned q1) {
    Config c;
    c.eal.lcore_ids = std::move(lcores);
    PortConfig a;
    a.name = "a";
    a.rx_queues = q0;
    PortConfig b;
    b.name = "b";
    b.rx_queues = q1;
    c.ports = {a, b};
    return c;
}

TEST(Assignment, RoundRobinOverWorkers) {
    auto r = assign_queues(two_port_config({0, 1, 2}, 2, 1));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ(r.value()[0].lcore, 1u);
    EXPECT_EQ(r.value()[0].queues, (std::vector<QueueRef>{{0, 0}, {1, 0}}));
    EXPECT_EQ(r.value()[1].queues, (std::vector<QueueRef>{{0, 1}}));
}

TEST(Assignment, IdleWorkerIsAnError) {
    auto r = assign_queues(two_port_config({0, 1, 2, 3}, 1, 1));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("no queue"), std::string::npos);
    EXPECT_TRUE(r.error().config);
}

TEST(Assignment, ExplicitMappingMustCoverEveryQueueOnce) {
    Config c = two_port_config({0, 1, 2}, 2, 1);
    c.capture.workers = {{1, {{"a", 0}, {"b", 0}}}, {2, {{"a", 1}}}};
    auto ok = assign_queues(c);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok.value()[1].queues, (std::vector<QueueRef>{{0, 1}}));

    c.capture.workers = {{1, {{"a", 0}, {"b", 0}}}};
    auto missing = assign_queues(c);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("a:1 is not mapped"), std::string::npos);

    c.capture.workers = {{1, {{"a", 0}, {"a", 1}, {"b", 0}}}, {2, {{"a", 1}}}};
    auto twice = assign_queues(c);
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message.find("a:1 is mapped to lcores 1 and 2"), std::string::npos);
}

TEST(TscClock, Converts) {
    const uint64_t hz = 2'000'000'000;
    TscClock clock(hz, 1000, 5'000'000'000);
    EXPECT_EQ(clock.to_ns(1000), 5'000'000'000u);
    EXPECT_EQ(clock.to_ns(1000 + hz), 6'000'000'000u);
    EXPECT_EQ(clock.to_ns(1000 + hz / 2), 5'500'000'000u);
}

// DPDK's nominal TSC rate is rounded to 10 MHz: a 2.6948 GHz counter taken for 2.69 GHz
// runs 1.8 ms a second ahead. Disciplined once a second against realtime, the clock
// measures the true rate, never steps back, and stays within a few microseconds.
TEST(TscClock, DisciplineMeasuresTheRateAndSlewsWithoutSteppingBack) {
    const uint64_t true_hz = 2'694'841'000, nominal_hz = 2'690'000'000;
    const uint64_t t0 = 5'000'000'000;
    TscClock clock(nominal_hz, 0, t0);
    uint64_t last = 0;
    int64_t worst_after_settling = 0;
    for (uint64_t second = 1; second <= 20; ++second) {
        for (uint64_t step = 1; step <= 10; ++step) {  // what a worker sees between ticks
            const uint64_t counter = ((second - 1) * 10 + step) * true_hz / 10;
            const uint64_t ns = clock.to_ns(counter);
            ASSERT_GE(ns, last) << "stepped back at " << second << "." << step;
            last = ns;
            const uint64_t truth = t0 + ((second - 1) * 10 + step) * 100'000'000;
            if (second > 2) worst_after_settling = std::max(worst_after_settling, std::abs(static_cast<int64_t>(ns - truth)));
        }
        clock.discipline(second * true_hz, t0 + second * 1'000'000'000);
    }
    EXPECT_NEAR(static_cast<double>(clock.hz()), static_cast<double>(true_hz), 10.0);
    EXPECT_LE(worst_after_settling, 10'000) << "ns from realtime once disciplined";
}

TEST(TscClock, RealtimeStepsForwardAreFollowedAndBackwardsSlewed) {
    const uint64_t hz = 1'000'000'000;
    TscClock clock(hz, 0, 1'000'000'000'000);
    clock.discipline(hz, 1'000'000'000'000 + hz + 3'600'000'000'000);  // the clock set an hour ahead
    EXPECT_EQ(clock.to_ns(hz), 1'000'000'000'000 + hz + 3'600'000'000'000);
    const uint64_t before = clock.to_ns(2 * hz);
    clock.discipline(2 * hz, 1'000'000'000'000);  // and back again
    EXPECT_GE(clock.to_ns(2 * hz), before);
    EXPECT_GT(clock.to_ns(3 * hz), clock.to_ns(2 * hz));
    EXPECT_LT(clock.to_ns(3 * hz) - clock.to_ns(2 * hz), hz) << "slews back at most kMaxSlewPpm";
}

TEST(Rotation, BoundariesAreAlignedToTheClock) {
    const uint64_t five_min = 300'000'000'000ull;
    EXPECT_EQ(next_rotation_boundary(1'000'000'000'000ull, five_min), 1'200'000'000'000ull);
    EXPECT_EQ(next_rotation_boundary(1'200'000'000'000ull, five_min), 1'500'000'000'000ull);
}

// An mbuf chain over plain memory: enough for rte_pktmbuf_mtod and the copy path.
struct FakeChain {
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<rte_mbuf> mbufs;
    FakeChain(const std::vector<uint8_t>& packet, std::vector<uint32_t> segment_sizes) {
        buffers.resize(segment_sizes.size());
        mbufs.resize(segment_sizes.size());
        size_t off = 0;
        for (size_t i = 0; i < segment_sizes.size(); ++i) {
            buffers[i].assign(packet.begin() + off, packet.begin() + off + segment_sizes[i]);
            off += segment_sizes[i];
            std::memset(&mbufs[i], 0, sizeof(rte_mbuf));
            mbufs[i].buf_addr = buffers[i].data();
            mbufs[i].data_off = 0;
            mbufs[i].data_len = uint16_t(segment_sizes[i]);
            mbufs[i].next = i + 1 < segment_sizes.size() ? &mbufs[i + 1] : nullptr;
        }
        mbufs[0].pkt_len = uint32_t(packet.size());
        mbufs[0].nb_segs = uint16_t(segment_sizes.size());
    }
};

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(i * 31 + 7);
    return p;
}

TEST(RecordCopy, SingleSegmentWholePacket) {
    auto packet = pattern(1514);
    FakeChain chain(packet, {1514});
    std::vector<uint8_t> mem(4096);
    WriteBlock block;
    block.data = mem.data();
    block.capacity = uint32_t(mem.size());
    append_record(block, &chain.mbufs[0], record_caplen(&chain.mbufs[0], 262144), 1'700'000'000'123'456'789ull);
    ASSERT_EQ(block.used, 16u + 1514u);
    pcap::RecordHeader h;
    std::memcpy(&h, mem.data(), sizeof h);
    EXPECT_EQ(h.ts_sec, 1'700'000'000u);
    EXPECT_EQ(h.ts_frac, 123'456'789u);
    EXPECT_EQ(h.caplen, 1514u);
    EXPECT_EQ(h.len, 1514u);
    EXPECT_EQ(0, std::memcmp(mem.data() + 16, packet.data(), packet.size()));
    EXPECT_EQ(block.packets, 1u);
    EXPECT_EQ(block.wire_bytes, 1514u);
}

TEST(RecordCopy, JumboAcrossSegmentsIsCopiedInOrder) {
    auto packet = pattern(9014);
    FakeChain chain(packet, {2048, 2048, 2048, 2048, 822});
    std::vector<uint8_t> mem(16384);
    WriteBlock block;
    block.data = mem.data();
    block.capacity = uint32_t(mem.size());
    append_record(block, &chain.mbufs[0], record_caplen(&chain.mbufs[0], 262144), 1);
    EXPECT_EQ(block.used, 16u + 9014u);
    EXPECT_EQ(0, std::memcmp(mem.data() + 16, packet.data(), packet.size()));
}

TEST(RecordCopy, SnaplenTruncatesAcrossSegmentsAndKeepsTheWireLength) {
    auto packet = pattern(5000);
    FakeChain chain(packet, {2048, 2048, 904});
    std::vector<uint8_t> mem(8192);
    WriteBlock block;
    block.data = mem.data();
    block.capacity = uint32_t(mem.size());
    const uint32_t caplen = record_caplen(&chain.mbufs[0], 3000);
    ASSERT_EQ(caplen, 3000u);
    append_record(block, &chain.mbufs[0], caplen, 1);
    pcap::RecordHeader h;
    std::memcpy(&h, mem.data(), sizeof h);
    EXPECT_EQ(h.caplen, 3000u);
    EXPECT_EQ(h.len, 5000u);
    EXPECT_EQ(block.used, 16u + 3000u);
    EXPECT_EQ(0, std::memcmp(mem.data() + 16, packet.data(), 3000));
}

TEST(RecordCopy, PcapngEnhancedPacketBlockIsPaddedAndClosed) {
    auto packet = pattern(61);  // 61 bytes: 3 bytes of padding
    FakeChain chain(packet, {61});
    std::vector<uint8_t> mem(4096, 0xee);
    WriteBlock block;
    block.data = mem.data();
    block.capacity = uint32_t(mem.size());
    const uint64_t ts = 0x0001'0002'0003'0004ull;
    append_record<FileKind::pcapng>(block, &chain.mbufs[0], 61, ts);
    ASSERT_EQ(block.used, 28u + 64u + 4u);
    uint32_t w[7];
    std::memcpy(w, mem.data(), sizeof w);
    EXPECT_EQ(w[0], 6u);             // EPB
    EXPECT_EQ(w[1], 96u);            // total length
    EXPECT_EQ(w[2], 0u);             // interface 0
    EXPECT_EQ(w[3], 0x00010002u);    // ts high
    EXPECT_EQ(w[4], 0x00030004u);    // ts low
    EXPECT_EQ(w[5], 61u);
    EXPECT_EQ(w[6], 61u);
    EXPECT_EQ(0, std::memcmp(mem.data() + 28, packet.data(), 61));
    EXPECT_EQ(mem[28 + 61], 0);
    EXPECT_EQ(mem[28 + 63], 0);
    uint32_t trailer;
    std::memcpy(&trailer, mem.data() + 92, 4);
    EXPECT_EQ(trailer, 96u);
    EXPECT_EQ(mem[96], 0xee);  // nothing written past the block
}

}  // namespace
}  // namespace linecap
