// The writer on an ordinary directory: file contents, naming, rotation, finalisation,
// counters, block memory and threads. Error paths are in writer_errors_test.cpp.
#include "output/writer.hpp"

#include <dirent.h>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "output/capture_file.hpp"
#include "archive/layout.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;
using test::Packet;
using test::PlannedBlock;

constexpr uint64_t kSecond = 1000000000ull;
constexpr uint64_t kT0 = 1700000000ull * kSecond;  // 2023-11-14 22:13:20 UTC
constexpr uint32_t kFullSnaplen = 262144;

std::string default_name(uint64_t first_ts_ns, const std::string& port = "p0", uint16_t queue = 0) {
    return layout::capture_name(FileTemplate::compile(kDefaultFileTemplate).value(), first_ts_ns,
                                 test::test_stream_id(port, queue), 0, FileKind::pcap, 0);
}

class WriterTest : public ::testing::Test {
protected:
    std::unique_ptr<Writer> make_writer(std::vector<StreamSpec> specs) {
        auto writer = Writer::create(config, std::move(specs), heap_block_memory());
        EXPECT_TRUE(writer.ok()) << writer.error().message;
        return writer.ok() ? std::move(writer).value() : nullptr;
    }
    std::unique_ptr<Writer> make_writer(uint32_t snaplen = kFullSnaplen) {
        return make_writer({StreamSpec{test::test_stream_id(), 0, snaplen}});
    }

    // Asserts that the directory holds exactly these finished files (in name order) with
    // exactly these records, byte for byte and as libpcap reads them.
    void expect_files(const std::vector<std::vector<Packet>>& files, uint32_t snaplen = kFullSnaplen) {
        const auto names = test::pcap_files(dir);
        ASSERT_EQ(names.size(), files.size()) << ::testing::PrintToString(dir.names());
        for (size_t i = 0; i < names.size(); ++i) {
            SCOPED_TRACE(names[i]);
            EXPECT_EQ(test::read_file(dir.file(names[i])), test::pcap_file_bytes(snaplen, files[i]));
            const test::PcapRead read = test::read_with_libpcap(dir.file(names[i]));
            EXPECT_EQ(read.error, "");
            EXPECT_EQ(read.snaplen, snaplen);
            EXPECT_TRUE(read.packets == files[i]);
        }
    }

    test::TempDir dir;
    OutputConfig config = test::test_output_config(dir.path());
};

TEST_F(WriterTest, WritesByteExactPcapReadableByLibpcapWithNanosecondTimestamps) {
    constexpr uint32_t kSnaplen = 200;  // some packets are cut, so caplen < len
    auto writer = make_writer(kSnaplen);
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const auto packets = test::make_packets(100, kT0 + 123456789, kSnaplen);
    const std::span<const Packet> all(packets);
    worker.send_block(all.subspan(0, 30));
    worker.send_block(all.subspan(30, 45));
    worker.send_block(all.subspan(75));
    writer->stop();

    EXPECT_EQ(dir.names(), std::vector<std::string>{"20231114T221320.123456789Z-p0-q0.pcap"});
    expect_files({packets}, kSnaplen);
}

// Also: space is allocated ahead of the writes (up to the rotation size) without changing the
// file's size, and what was not used is given back when the file is finished.
TEST_F(WriterTest, FileIsHiddenInProgressAndRenamedWhenFinalised) {
    config.rotate_size_bytes = 64ull << 20;
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    const auto packets = test::make_packets(20, kT0);
    const std::string name = default_name(kT0);
    const auto logical = static_cast<off_t>(test::pcap_file_bytes(kFullSnaplen, packets).size());

    worker.send_block(packets);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).written_packets.load() == 20; }));
    EXPECT_EQ(dir.names(), std::vector<std::string>{layout::in_progress_name(name)});
    EXPECT_TRUE(test::pcap_files(dir).empty());
    struct stat st {};
    ASSERT_EQ(::stat(dir.file(layout::in_progress_name(name)).c_str(), &st), 0);
    EXPECT_EQ(st.st_size, logical);  // readers and recovery see only what was written
    const bool preallocated = uint64_t(st.st_blocks) * 512 >= kPreallocateStep;  // fallocate refused: no

    worker.send_rotation_mark();  // an empty block that only carries the mark
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    EXPECT_EQ(dir.names(), std::vector<std::string>{name});
    expect_files({packets});
    ASSERT_EQ(::stat(dir.file(name).c_str(), &st), 0);
    if (preallocated) {
        EXPECT_LT(uint64_t(st.st_blocks) * 512, uint64_t(logical) + 65536) << "preallocation kept";
    }
    writer->stop();
    EXPECT_EQ(dir.names(), std::vector<std::string>{name});
}

TEST_F(WriterTest, RotationMarkOnABlockWithPacketsFinalisesAfterWritingIt) {
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const auto packets = test::make_packets(30, kT0);
    const std::span<const Packet> all(packets);
    worker.send_block(all.subspan(0, 10));
    worker.send_block(all.subspan(10, 10), /*rotate_after=*/true);
    worker.send_block(all.subspan(20));
    writer->stop();

    EXPECT_EQ(test::pcap_files(dir), (std::vector<std::string>{default_name(packets[0].ts_ns),
                                                                default_name(packets[20].ts_ns)}));
    expect_files({{packets.begin(), packets.begin() + 20}, {packets.begin() + 20, packets.end()}});
    EXPECT_EQ(writer->counters(0).files_finalised.load(), 2u);
}

TEST_F(WriterTest, RotationMarkWithNoOpenFileCreatesNothing) {
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    worker.send_rotation_mark();
    worker.send_rotation_mark();
    writer->stop();
    EXPECT_TRUE(dir.names().empty());
    EXPECT_EQ(writer->counters(0).files_finalised.load(), 0u);
}

TEST_F(WriterTest, SizeRotationSplitsAtBlockBoundariesAndNeverExceedsTheLimit) {
    config.rotate_size_bytes = 100 * 1024;
    config.blocks_per_queue = 4;  // fewer blocks than sent: they must come back
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));

    std::vector<PlannedBlock> blocks;
    uint64_t ts = kT0;
    for (size_t i = 0; i < 40; ++i) {
        const size_t count = 1 + (i * 7) % 40;  // 1 … 40 packets, up to ~60 KiB
        blocks.push_back({test::make_packets(count, ts), i == 17});
        ts += count * 1000 + 1000;
    }
    for (const PlannedBlock& block : blocks) worker.send_block(block.packets, block.rotate_after);
    writer->stop();

    const auto files = test::expected_files(blocks, config.rotate_size_bytes);
    ASSERT_GT(files.size(), 5u);
    expect_files(files);
    for (const std::string& name : test::pcap_files(dir))
        EXPECT_LE(test::read_file(dir.file(name)).size(), config.rotate_size_bytes) << name;
    for (size_t i = 0; i < files.size(); ++i)
        EXPECT_EQ(test::pcap_files(dir)[i], default_name(files[i].front().ts_ns));
}

TEST_F(WriterTest, ABlockLargerThanTheLimitStillGoesIntoOneFileWhole) {
    config.rotate_size_bytes = 1000;
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const auto first = test::make_packets(10, kT0);
    const auto second = test::make_packets(10, kT0 + kSecond);
    worker.send_block(first);
    worker.send_block(second);
    writer->stop();
    expect_files({first, second});
}

TEST_F(WriterTest, NameCollisionsWithinOneSecondGetNumberedSuffixes) {
    config.file_template = "%Y%m%dT%H%M%S-{port}-q{queue}";  // no {nsec}
    test::write_file(dir.file("20231114T221320-p0-q0.pcap"), std::vector<uint8_t>{1, 2, 3});  // not ours
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const auto packets = test::make_packets(9, kT0);
    const std::span<const Packet> all(packets);
    for (size_t i = 0; i < 3; ++i) worker.send_block(all.subspan(i * 3, 3), true);
    writer->stop();

    EXPECT_EQ(dir.names(), (std::vector<std::string>{"20231114T221320-p0-q0-1.pcap", "20231114T221320-p0-q0-2.pcap",
                                                     "20231114T221320-p0-q0-3.pcap", "20231114T221320-p0-q0.pcap"}));
    EXPECT_EQ(test::read_file(dir.file("20231114T221320-p0-q0.pcap")), (std::vector<uint8_t>{1, 2, 3}));
    for (size_t i = 0; i < 3; ++i)
        EXPECT_EQ(test::read_file(dir.file("20231114T221320-p0-q0-" + std::to_string(i + 1) + ".pcap")),
                  test::pcap_file_bytes(kFullSnaplen, all.subspan(i * 3, 3)));
}

TEST_F(WriterTest, SeqCountsTheFilesOfTheStream) {
    config.file_template = "{port}-q{queue}-{seq}";
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const auto packets = test::make_packets(3, kT0);
    for (const Packet& p : packets) worker.send_block({&p, 1}, true);
    writer->stop();
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"p0-q0-0.pcap", "p0-q0-1.pcap", "p0-q0-2.pcap"}));
}

TEST_F(WriterTest, CountersAndLatencyMatchWhatWasWritten) {
    config.rotate_size_bytes = 100 * 1024;
    auto writer = make_writer({StreamSpec{test::test_stream_id("a", 0), 0, kFullSnaplen},
                               StreamSpec{test::test_stream_id("b", 1), 0, 300}});
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    uint64_t packets[2] = {}, wire[2] = {}, blocks = 0;
    for (size_t s = 0; s < 2; ++s) {
        FakeWorker worker(writer->stream(s));
        for (size_t b = 0; b < 12; ++b) {
            const auto block = test::make_packets(25, kT0 + (s * 100 + b) * kSecond, s == 0 ? kFullSnaplen : 300);
            worker.send_block(block, b == 5);
            packets[s] += block.size();
            for (const Packet& p : block) wire[s] += p.len;
            ++blocks;
        }
    }
    writer->stop();

    uint64_t file_bytes = 0;
    for (const std::string& name : dir.names()) file_bytes += test::read_file(dir.file(name)).size();
    uint64_t files_finalised = 0, counted_file_bytes = 0;
    for (size_t s = 0; s < 2; ++s) {
        const StreamCounters& c = writer->counters(s);
        EXPECT_EQ(c.written_packets.load(), packets[s]);
        EXPECT_EQ(c.written_bytes.load(), wire[s]);
        EXPECT_EQ(c.write_error_packets.load(), 0u);
        EXPECT_EQ(c.disk_full_packets.load(), 0u);
        files_finalised += c.files_finalised.load();
        counted_file_bytes += c.file_bytes.load();
    }
    EXPECT_EQ(counted_file_bytes, file_bytes);
    EXPECT_EQ(files_finalised, test::pcap_files(dir).size());
    EXPECT_EQ(dir.names().size(), test::pcap_files(dir).size());

    const WriteLatency& latency = writer->latency();
    EXPECT_EQ(latency.count.load(), blocks);
    uint64_t in_buckets = 0;
    for (const auto& bucket : latency.bucket) in_buckets += bucket.load();
    EXPECT_EQ(in_buckets, blocks);
    EXPECT_GT(latency.sum_ns.load(), 0u);
}

TEST_F(WriterTest, BacklogCountsFullBlocksOfAllStreams) {
    auto writer = make_writer({StreamSpec{test::test_stream_id("a"), 0, kFullSnaplen},
                               StreamSpec{test::test_stream_id("b"), 0, kFullSnaplen}});
    ASSERT_TRUE(writer);
    FakeWorker a(writer->stream(0)), b(writer->stream(1));
    const auto packets = test::make_packets(5, kT0);
    for (int i = 0; i < 3; ++i) a.send_block(packets);
    for (int i = 0; i < 2; ++i) b.send_block(packets);
    EXPECT_EQ(writer->backlog_blocks(), 5u);
    writer->stop();
    EXPECT_EQ(writer->backlog_blocks(), 0u);
    EXPECT_EQ(writer->stream(0).free_blocks.size(), config.blocks_per_queue);
    EXPECT_EQ(writer->stream(1).free_blocks.size(), config.blocks_per_queue);
}

// Block memory comes from BlockMemory (hugepages in the daemon): check what is asked for,
// that every block starts on the free ring, and that all of it is given back.
struct RecordingMemory {
    struct Allocation {
        size_t bytes, align;
        int socket;
        void* p;
    };
    std::vector<Allocation> allocations;
    std::set<void*> released;
    size_t fail_after = SIZE_MAX;

    BlockMemory memory() {
        const BlockMemory heap = heap_block_memory();
        return BlockMemory{
            [this, heap](size_t bytes, size_t align, int socket) -> void* {
                if (allocations.size() >= fail_after) return nullptr;
                void* p = heap.allocate(bytes, align, socket);
                allocations.push_back({bytes, align, socket, p});
                return p;
            },
            [this, heap](void* p) {
                released.insert(p);
                heap.release(p);
            },
        };
    }
};

TEST_F(WriterTest, CreateTakesAlignedBlocksFromBlockMemoryAndReleasesThemAll) {
    config.block_size_kb = 128;
    config.blocks_per_queue = 3;
    RecordingMemory memory;
    {
        auto created = Writer::create(config,
                                      {StreamSpec{test::test_stream_id("a"), 0, 1500},
                                       StreamSpec{test::test_stream_id("b", 1), 1, 9000}},
                                      memory.memory());
        ASSERT_TRUE(created.ok()) << created.error().message;
        Writer& writer = *created.value();
        ASSERT_EQ(memory.allocations.size(), 6u);
        for (size_t i = 0; i < 6; ++i) {
            EXPECT_EQ(memory.allocations[i].bytes, 128u * 1024);
            EXPECT_EQ(memory.allocations[i].align, 4096u);
            EXPECT_EQ(memory.allocations[i].socket, i < 3 ? 0 : 1);
        }
        for (size_t s = 0; s < 2; ++s) {
            Stream& stream = writer.stream(s);
            EXPECT_EQ(stream.index, s);
            EXPECT_EQ(stream.snaplen, s == 0 ? 1500u : 9000u);
            EXPECT_EQ(stream.free_blocks.size(), 3u);
            EXPECT_EQ(stream.full_blocks.size(), 0u);
            std::vector<WriteBlock*> taken;
            while (WriteBlock* block = stream.free_blocks.pop()) taken.push_back(block);
            ASSERT_EQ(taken.size(), 3u);
            for (WriteBlock* block : taken) {
                EXPECT_EQ(reinterpret_cast<uintptr_t>(block->data) % 4096, 0u);
                EXPECT_EQ(block->capacity, 128u * 1024);
                EXPECT_EQ(block->used, 0u);
                EXPECT_EQ(block->stream, s);
                EXPECT_TRUE(stream.free_blocks.push(block));
            }
        }
        EXPECT_TRUE(memory.released.empty());
    }
    EXPECT_EQ(memory.released.size(), 6u);
    for (const auto& a : memory.allocations) EXPECT_EQ(memory.released.count(a.p), 1u);
}

TEST_F(WriterTest, CreateFailsCleanlyWhenBlockMemoryRunsOut) {
    config.blocks_per_queue = 3;
    RecordingMemory memory;
    memory.fail_after = 4;
    auto created = Writer::create(config,
                                  {StreamSpec{test::test_stream_id("a"), 0, 1500},
                                   StreamSpec{test::test_stream_id("b", 1), 0, 1500}},
                                  memory.memory());
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.error().message.find("port b queue 1: allocating write block 1 of 64 KiB"), std::string::npos)
        << created.error().message;
    EXPECT_EQ(memory.released.size(), 4u);
}

TEST_F(WriterTest, CreateRejectsAMissingDirectoryNamingItAndTheReason) {
    config.directory = dir.file("missing");
    auto created = Writer::create(config, {}, heap_block_memory());
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.error().message.find(config.directory), std::string::npos) << created.error().message;
    EXPECT_NE(created.error().message.find("No such file or directory"), std::string::npos) << created.error().message;
}

TEST_F(WriterTest, CreateRejectsAFileAsDirectory) {
    test::write_file(dir.file("file"), std::vector<uint8_t>{0});
    config.directory = dir.file("file");
    auto created = Writer::create(config, {}, heap_block_memory());
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.error().message.find("Not a directory"), std::string::npos) << created.error().message;
}

TEST_F(WriterTest, CreateRejectsAReadOnlyDirectory) {
    std::string why;
    auto mount = test::ScratchMount::mount("tmpfs", "size=1m", why, /*read_only=*/true);
    if (!mount) GTEST_SKIP() << why;
    config.directory = mount->path();
    auto created = Writer::create(config, {}, heap_block_memory());
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.error().message.find(mount->path()), std::string::npos) << created.error().message;
    EXPECT_NE(created.error().message.find("Read-only file system"), std::string::npos) << created.error().message;
}

TEST_F(WriterTest, CreateRejectsWhatItCannotWrite) {
    const auto rejects = [&](OutputConfig c, const std::string& key) {
        auto created = Writer::create(c, {}, heap_block_memory());
        ASSERT_FALSE(created.ok()) << key;
        EXPECT_TRUE(created.error().config);
        EXPECT_NE(created.error().message.find(key), std::string::npos) << created.error().message;
    };
    OutputConfig c = config;
    c.block_size_kb = 6;
    rejects(c, "output.block_size_kb");
    c = config;
    c.file_template = "%Y/%m/{port}";
    rejects(c, "output.file_template");
    c = config;
    c.blocks_per_queue = 0;
    rejects(c, "output.blocks_per_queue");
}

TEST_F(WriterTest, StopIsIdempotentAndTheDestructorFinalises) {
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    EXPECT_FALSE(writer->start().ok());
    const auto packets = test::make_packets(7, kT0);
    FakeWorker(writer->stream(0)).send_block(packets);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).written_packets.load() == 7; }));
    writer.reset();  // no explicit stop()
    expect_files({packets});

    auto second = make_writer();
    ASSERT_TRUE(second);
    second->stop();
    second->stop();
    EXPECT_FALSE(second->start().ok());
}

std::multiset<std::string> writer_thread_names() {
    std::multiset<std::string> names;
    DIR* tasks = ::opendir("/proc/self/task");
    if (tasks == nullptr) return names;
    while (const dirent* entry = ::readdir(tasks)) {
        if (entry->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        if (name.starts_with("lc-writer-")) names.insert(name);
    }
    ::closedir(tasks);
    return names;
}

TEST_F(WriterTest, StreamsAreSpreadOverNamedWriterThreads) {
    config.writer_threads = 2;
    std::vector<StreamSpec> specs;
    for (uint16_t q = 0; q < 5; ++q) specs.push_back({test::test_stream_id("p0", q), 0, kFullSnaplen});
    auto writer = make_writer(specs);
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    EXPECT_EQ(writer_thread_names(), (std::multiset<std::string>{"lc-writer-0", "lc-writer-1"}));

    std::vector<std::vector<Packet>> sent(5);
    for (uint16_t q = 0; q < 5; ++q) {
        sent[q] = test::make_packets(50, kT0 + q * kSecond);
        FakeWorker(writer->stream(q)).send_block(sent[q], true);
    }
    ASSERT_TRUE(test::wait_until([&] {
        uint64_t n = 0;
        for (size_t q = 0; q < 5; ++q) n += writer->counters(q).files_finalised.load();
        return n == 5;
    }));
    writer->stop();
    EXPECT_TRUE(writer_thread_names().empty());
    expect_files(sent);  // file names sort by first timestamp: stream q's file is the q-th
}

TEST_F(WriterTest, NoMoreThreadsThanStreams) {
    config.writer_threads = 8;
    auto writer = make_writer({StreamSpec{test::test_stream_id("a"), 0, kFullSnaplen},
                               StreamSpec{test::test_stream_id("b"), 0, kFullSnaplen}});
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    EXPECT_EQ(writer_thread_names(), (std::multiset<std::string>{"lc-writer-0", "lc-writer-1"}));
}

// A reload can change a port's snap length while files are open. No file may hold a
// record longer than its header says; a lower snap length needs no new file.
TEST_F(WriterTest, RaisedSnapLengthStartsANewFileThatDeclaresIt) {
    auto writer = make_writer(100);
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    const StreamCounters& c = writer->counters(0);
    const auto send = [&](const std::vector<Packet>& packets) {
        const uint64_t before = c.written_packets.load();
        worker.send_block(packets);
        ASSERT_TRUE(test::wait_until([&] { return c.written_packets.load() == before + packets.size(); }));
    };
    const auto short_packets = test::make_packets(10, kT0, 100);
    const auto long_packets = test::make_packets(10, kT0 + kSecond, 1500);
    const auto shorter_packets = test::make_packets(10, kT0 + 2 * kSecond, 64);

    send(short_packets);
    writer->set_snaplen(0, 1500);  // before the workers use it, as the reload does
    send(long_packets);
    writer->set_snaplen(0, 64);
    send(shorter_packets);
    writer->stop();

    const auto names = test::pcap_files(dir);
    ASSERT_EQ(names.size(), 2u);
    std::vector<Packet> second = long_packets;
    second.insert(second.end(), shorter_packets.begin(), shorter_packets.end());
    EXPECT_EQ(test::read_file(dir.file(names[0])), test::pcap_file_bytes(100, short_packets));
    EXPECT_EQ(test::read_file(dir.file(names[1])), test::pcap_file_bytes(1500, second));
    EXPECT_EQ(test::read_with_libpcap(dir.file(names[1])).error, "");
}

class WriterFsyncTest : public WriterTest, public ::testing::WithParamInterface<FsyncPolicy> {};

TEST_P(WriterFsyncTest, EveryPolicyProducesTheSameFiles) {
    config.fsync = GetParam();
    config.fsync_interval_s = 0;  // with interval: a sync after every block
    config.rotate_size_bytes = 64 * 1024;
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    std::vector<PlannedBlock> blocks;
    for (size_t b = 0; b < 6; ++b) blocks.push_back({test::make_packets(30, kT0 + b * kSecond), b == 2});
    FakeWorker worker(writer->stream(0));
    for (const PlannedBlock& block : blocks) worker.send_block(block.packets, block.rotate_after);
    writer->stop();
    expect_files(test::expected_files(blocks, config.rotate_size_bytes));
}

INSTANTIATE_TEST_SUITE_P(Policies, WriterFsyncTest,
                         ::testing::Values(FsyncPolicy::none, FsyncPolicy::rotate, FsyncPolicy::interval));

}  // namespace
}  // namespace linecap
