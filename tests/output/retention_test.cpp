// Retention: oldest first across streams, each budget on its own, sidecars go with their
// file, the files being written count, the legal hold list (entries, reload, unreadable),
// a full disk, the inventory scan, and a Writer that rotates many times staying within
// max_bytes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/retention.hpp"
#include "util/sha256.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
using namespace layout;  // every name in the capture directory
namespace {

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint64_t kSecond = 1000000000ull;

class RetentionTest : public ::testing::Test {
protected:
    void SetUp() override {
        config = test::test_output_config(dir.path());
        dir_fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(dir_fd, 0);
    }
    void TearDown() override { ::close(dir_fd); }

    // A pcap file of `packets` packets from `first_ts` on, 1 ms apart (no manifest).
    uint64_t capture(const std::string& name, uint64_t first_ts, size_t packets = 20) {
        std::vector<test::Packet> p;
        for (size_t i = 0; i < packets; ++i) p.push_back(test::make_packet(first_ts + i * 1000000, 500));
        const auto bytes = test::pcap_file_bytes(262144, p);
        test::write_file(dir.file(name), bytes);
        return bytes.size();
    }
    // The same with a manifest that tells other times than the file (the manifest wins).
    void manifest(const std::string& name, uint64_t first_ns, uint64_t last_ns) {
        Manifest m;
        m.file = name;
        m.sha256 = Sha256::of(test::read_file(dir.file(name)));
        m.size = test::read_file(dir.file(name)).size();
        m.packets = 1;
        m.first_ns = first_ns;
        m.last_ns = last_ns;
        ASSERT_TRUE(write_manifest(dir_fd, m).ok());
    }
    bool exists(const std::string& name) const { return std::filesystem::exists(dir.file(name)); }

    std::unique_ptr<RetentionManager> manager(RetentionEnvironment env = {}) {
        if (!env.filesystem) env.filesystem = [this] { return fs; };
        return std::make_unique<RetentionManager>(config, dir_fd, std::move(env), counters);
    }
    // A file system of `capacity` bytes whose only content is the test directory.
    RetentionEnvironment filesystem_holding_the_directory(uint64_t capacity) const {
        RetentionEnvironment env;
        env.filesystem = [this, capacity] {
            uint64_t used = 0;
            for (const auto& e : std::filesystem::directory_iterator(dir.path())) used += e.file_size();
            return FilesystemSpace{capacity - used, capacity};
        };
        return env;
    }
    std::vector<std::string> kept(const RetentionManager& m) const {
        std::vector<std::string> names;
        for (const FinishedFile& f : m.files()) names.push_back(f.name);
        return names;
    }

    test::TempDir dir;
    int dir_fd = -1;
    OutputConfig config;
    RetentionCounters counters;
    std::optional<FilesystemSpace> fs = FilesystemSpace{1ull << 40, 1ull << 41};
    test::LogCapture log;
};

TEST_F(RetentionTest, TheInventoryIsOrderedByFirstPacketAcrossStreams) {
    capture("z-p0-q0.pcap", kT0 + 3 * kSecond);
    capture("a-p1-q0.pcap", kT0 + 1 * kSecond);
    capture("m-p0-q1.pcapng.pcap", kT0 + 2 * kSecond);
    capture("b.pcap", kT0 + 9 * kSecond);
    manifest("b.pcap", kT0, kT0 + 500);  // manifest times win over the file's
    capture(".hidden.pcap.part", kT0);
    capture("notes.txt", kT0);
    auto m = manager();
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"b.pcap", "a-p1-q0.pcap", "m-p0-q1.pcapng.pcap", "z-p0-q0.pcap"}));
    EXPECT_EQ(m->files()[1].first_ns, kT0 + kSecond);
    EXPECT_EQ(counters.files.load(), 4u);
    EXPECT_EQ(counters.oldest_packet_ns.load(), kT0);
    // Nothing is deleted without limits.
    EXPECT_EQ(counters.deleted_files.load(), 0u);
    EXPECT_FALSE(m->enabled());
}

// retention reads manifests with the parser that `"\uZZZZ"` made abort, so one
// damaged manifest could take the daemon down at every start. It is named in a warning,
// and the file's age comes from its first packet.
TEST_F(RetentionTest, ADamagedManifestIsAWarningNotACrash) {
    capture("a.pcap", kT0);
    capture("b.pcap", kT0 + kSecond);
    capture("c.pcap", kT0 + 2 * kSecond);
    const std::string bad_escape = R"({"manifest_version": 1, "file": "\uZZZZ"})";
    test::write_file(dir.file("a.pcap.manifest"), std::vector<uint8_t>(bad_escape.begin(), bad_escape.end()));
    const std::string seq_null = R"({"manifest_version": 1, "file": "b.pcap", "seq": null})";
    test::write_file(dir.file("b.pcap.manifest"), std::vector<uint8_t>(seq_null.begin(), seq_null.end()));
    auto m = manager();
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"a.pcap", "b.pcap", "c.pcap"}));
    EXPECT_EQ(m->files()[0].first_ns, kT0);
    EXPECT_EQ(m->files()[1].first_ns, kT0 + kSecond);
    EXPECT_EQ(log.count("a.pcap.manifest: invalid JSON at byte"), 1u) << log.text();
    EXPECT_EQ(log.count("b.pcap.manifest: "), 1u) << log.text();
}

TEST_F(RetentionTest, MaxBytesDeletesTheOldestFirstWithTheirSidecars) {
    uint64_t size = 0;
    for (int i = 0; i < 5; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    test::write_file(dir.file("f0.pcap.idx"), std::vector<uint8_t>(10, 1));
    // The scrub's damage marker is a sidecar too: never a capture file of its own.
    test::write_file(dir.file(damaged_marker_name("f1.pcap")), std::vector<uint8_t>(20, 'x'));
    manifest("f0.pcap", kT0, kT0 + 19000000);
    manifest("f1.pcap", kT0 + kSecond, kT0 + kSecond + 19000000);
    config.retention.max_bytes = 3 * size + 100;
    auto m = manager();
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f2.pcap", "f3.pcap", "f4.pcap"}));
    for (const char* gone : {"f0.pcap", "f0.pcap.idx", "f0.pcap.manifest", "f1.pcap", "f1.pcap.manifest",
                             "f1.pcap.damaged"})
        EXPECT_FALSE(exists(gone)) << gone;
    EXPECT_EQ(counters.deleted_files.load(), 2u);
    EXPECT_GT(counters.deleted_bytes.load(), 2 * size);
    EXPECT_EQ(counters.oldest_packet_ns.load(), kT0 + 2 * kSecond);
    EXPECT_EQ(log.count("retention: deleted"), 2u) << log.text();
    EXPECT_EQ(log.count("f0.pcap"), 1u);
    EXPECT_EQ(counters.budget_unmet.load(), 0u);

    // Files the writer reports are managed too; the budget holds after each.
    for (int i = 5; i < 8; ++i) {
        const std::string name = "f" + std::to_string(i) + ".pcap";
        m->add(FinishedFile{name, capture(name, kT0 + i * kSecond), kT0 + i * kSecond, kT0 + i * kSecond + 1});
        m->enforce(kT0 + 100 * kSecond);
    }
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f5.pcap", "f6.pcap", "f7.pcap"}));
}

// With the archive tier on, the archived files go first; an unarchived one only when a
// limit must still win, and then it is counted and logged by name. max_age waits for the
// archive.
TEST_F(RetentionTest, WithTheArchiveOnlyArchivedFilesGoUnlessALimitMustWin) {
    uint64_t size = 0;
    for (int i = 0; i < 5; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    for (const char* archived : {"f1.pcap", "f3.pcap"})
        test::write_file(dir.file(archived_marker_name(archived)), std::vector<uint8_t>(5, 'x'));
    config.archive.url = "s3://bucket/site";
    config.retention.max_bytes = 3 * size + 100;
    auto m = manager();
    m->enforce(kT0 + 100 * kSecond);
    // Two files must go: the archived f1 and f3, not the older, unarchived f0.
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f0.pcap", "f2.pcap", "f4.pcap"}));
    EXPECT_FALSE(exists("f1.pcap.archived"));
    EXPECT_EQ(counters.deleted_unarchived.load(), 0u);

    // No archived file left: the limit wins over the oldest unarchived one, loudly.
    config.retention.max_bytes = 2 * size + 100;
    auto tighter = manager();
    tighter->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*tighter), (std::vector<std::string>{"f2.pcap", "f4.pcap"}));
    EXPECT_EQ(counters.deleted_unarchived.load(), 1u);
    EXPECT_EQ(log.count("f0.pcap"), 1u) << log.text();
    EXPECT_EQ(log.count("before it was archived"), 1u) << log.text();

    // max_age is no limit that must win: an expired file waits for its archive copy.
    config.retention.max_bytes = 0;
    config.retention.max_age_s = 1;
    manifest("f2.pcap", kT0 + 2 * kSecond, kT0 + 2 * kSecond + 19000000);
    manifest("f4.pcap", kT0 + 4 * kSecond, kT0 + 4 * kSecond + 19000000);
    auto aged = manager();
    aged->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*aged), (std::vector<std::string>{"f2.pcap", "f4.pcap"}));
    test::write_file(dir.file(archived_marker_name("f4.pcap")), std::vector<uint8_t>(5, 'x'));
    aged->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(kept(*aged), (std::vector<std::string>{"f2.pcap"}));
    EXPECT_EQ(counters.deleted_unarchived.load(), 1u);
}

TEST_F(RetentionTest, AnIndexWrittenLaterCountsOnceAndOnlyForItsFile) {
    const uint64_t a = capture("a.pcap", kT0), b = capture("b.pcap", kT0 + kSecond);
    auto m = manager();
    m->add(FinishedFile{"a.pcap", a, kT0, kT0 + 1});
    m->add(FinishedFile{"b.pcap", b, kT0 + kSecond, kT0 + kSecond + 1});
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(counters.bytes.load(), a + b);
    // The background indexer wrote a.pcap's index; reported twice (idempotent), and once
    // for a file retention does not know.
    test::write_file(dir.file("a.pcap.idx"), std::vector<uint8_t>(300, 1));
    m->sidecar_changed("a.pcap");
    m->sidecar_changed("a.pcap");
    m->sidecar_changed("unknown.pcap");
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(counters.bytes.load(), a + b + 300);
    EXPECT_EQ(m->files()[0].bytes, a + 300);
    // A rebuilt, smaller index.
    test::write_file(dir.file("a.pcap.idx"), std::vector<uint8_t>(100, 1));
    m->sidecar_changed("a.pcap");
    m->enforce(kT0 + 100 * kSecond);
    EXPECT_EQ(counters.bytes.load(), a + b + 100);
}

TEST_F(RetentionTest, TheFilesBeingWrittenCountAgainstTheBudget) {
    uint64_t size = 0;
    for (int i = 0; i < 4; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    config.retention.max_bytes = 4 * size;
    auto m = manager(RetentionEnvironment{{}, [&] { return InProgressBytes{10, 2 * size}; }});
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f2.pcap", "f3.pcap"}));
}

TEST_F(RetentionTest, MaxPercentOfTheFilesystem) {
    uint64_t size = 0;
    for (int i = 0; i < 4; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    fs = FilesystemSpace{1ull << 30, 10 * size};
    config.retention.max_percent = 25;  // 2.5 files
    auto m = manager();
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f2.pcap", "f3.pcap"}));
    EXPECT_NE(log.text().find("max_percent"), std::string::npos) << log.text();
}

TEST_F(RetentionTest, MinFreeBytes) {
    uint64_t size = 0;
    for (int i = 0; i < 4; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    // A filesystem of 6 files' size holding these 4: free = 2 files.
    const RetentionEnvironment env = filesystem_holding_the_directory(6 * size);
    config.retention.min_free_bytes = 3 * size + 1;
    auto m = manager(env);
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f2.pcap", "f3.pcap"}));
    EXPECT_NE(log.text().find("min_free_bytes"), std::string::npos) << log.text();
}

TEST_F(RetentionTest, MaxAgeGoesByTheLastPacket) {
    capture("old.pcap", kT0);
    manifest("old.pcap", kT0, kT0 + 10 * kSecond);
    capture("long.pcap", kT0 + kSecond);
    manifest("long.pcap", kT0 + kSecond, kT0 + 60 * kSecond);  // started early, ends late
    capture("new.pcap", kT0 + 50 * kSecond);
    manifest("new.pcap", kT0 + 50 * kSecond, kT0 + 50 * kSecond + 19000000);
    config.retention.max_age_s = 30;
    auto m = manager();
    m->enforce(kT0 + 45 * kSecond);  // cutoff kT0 + 15 s
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"long.pcap", "new.pcap"}));
    EXPECT_NE(log.text().find("max_age"), std::string::npos);
    m->enforce(kT0 + 95 * kSecond);  // cutoff kT0 + 65 s: long.pcap goes, new.pcap (50 s) too
    EXPECT_TRUE(kept(*m).empty());
    EXPECT_EQ(counters.oldest_packet_ns.load(), 0u);
}

TEST_F(RetentionTest, MaxAgeNeverDeletesAFileBeforeAnOlderOne) {
    capture("a-q0.pcap", kT0);
    manifest("a-q0.pcap", kT0, kT0 + 40 * kSecond);  // still young at the end
    capture("b-q1.pcap", kT0 + kSecond);
    manifest("b-q1.pcap", kT0 + kSecond, kT0 + 5 * kSecond);  // expired, but starts later
    config.retention.max_age_s = 30;
    auto m = manager();
    m->enforce(kT0 + 40 * kSecond);  // cutoff kT0 + 10 s
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"a-q0.pcap", "b-q1.pcap"}));
    m->enforce(kT0 + 71 * kSecond);  // both expired: in order
    EXPECT_TRUE(kept(*m).empty());
    EXPECT_LT(log.text().find("a-q0.pcap"), log.text().find("b-q1.pcap"));
}

TEST_F(RetentionTest, TheLegalHoldListIsHonouredAndReloaded) {
    uint64_t size = 0;
    for (int i = 0; i < 6; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    std::filesystem::create_directory(dir.file("sub"));
    test::TempDir etc;
    const std::string hold = etc.file("hold.list");
    std::ofstream(hold) << "# legal hold\n"
                        << "f0.pcap   # a name in the output directory\n"
                        << dir.file("f2.pcap") << "\n"
                        << "\n"
                        << dir.path() << "/f4.*\n";
    config.retention.hold_file = hold;
    config.retention.max_bytes = 1;  // everything that may go, goes
    auto m = manager();
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f0.pcap", "f2.pcap", "f4.pcap"}));
    EXPECT_EQ(counters.held_files.load(), 3u);
    EXPECT_EQ(counters.budget_unmet.load(), 1u);
    EXPECT_EQ(log.count("on the legal hold list; not deleted"), 3u);
    EXPECT_EQ(log.count("cannot meet the limits"), 1u);
    m->enforce(kT0);  // logged once, not every pass
    EXPECT_EQ(log.count("on the legal hold list; not deleted"), 3u);
    EXPECT_EQ(log.count("cannot meet the limits"), 1u);

    // Released from hold: deleted on the next pass (the list is re-read when it changes).
    std::ofstream(hold) << dir.path() << "\n";  // the whole directory: everything held
    ::utimensat(AT_FDCWD, hold.c_str(), nullptr, 0);
    capture("f9.pcap", kT0 + 9 * kSecond);
    m->add(FinishedFile{"f9.pcap", size, kT0 + 9 * kSecond, kT0 + 9 * kSecond});
    m->enforce(kT0);
    EXPECT_EQ(kept(*m).size(), 4u);
    std::ofstream(hold) << "f4.pcap\n# longer than before, so the change is seen\n";
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f4.pcap"}));
    EXPECT_EQ(counters.held_files.load(), 1u);
}

TEST_F(RetentionTest, AnUnreadableHoldListHoldsEverything) {
    for (int i = 0; i < 3; ++i) capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    config.retention.hold_file = dir.file("no-such-hold.list");
    config.retention.max_bytes = 1;
    auto m = manager();
    m->enforce(kT0);
    EXPECT_EQ(kept(*m).size(), 3u);
    EXPECT_EQ(counters.budget_unmet.load(), 1u);
    EXPECT_EQ(log.count("deleting nothing until it can be read"), 1u) << log.text();
    std::ofstream(dir.file("no-such-hold.list")) << "f2.pcap\n";
    m->enforce(kT0);
    EXPECT_EQ(kept(*m), (std::vector<std::string>{"f2.pcap"}));
}

TEST_F(RetentionTest, ADiskFullRequestMakesRoomOnlyWhenRetentionIsOn) {
    uint64_t size = 0;
    for (int i = 0; i < 4; ++i) size = capture("f" + std::to_string(i) + ".pcap", kT0 + i * kSecond);
    const RetentionEnvironment env = filesystem_holding_the_directory(4 * size);  // full
    {
        auto off = manager(env);
        off->request_room(size + 1);
        off->enforce(kT0);
        EXPECT_EQ(kept(*off).size(), 4u);
        EXPECT_EQ(log.count("no capture file is deleted"), 1u) << log.text();
    }
    config.retention.max_age_s = 365 * 86400;  // on, but not limiting
    auto on = manager(env);
    on->enforce(kT0 + kSecond);
    EXPECT_EQ(kept(*on).size(), 4u);
    on->request_room(size + 1);  // two files
    on->enforce(kT0 + kSecond);
    EXPECT_EQ(kept(*on), (std::vector<std::string>{"f2.pcap", "f3.pcap"}));
    EXPECT_NE(log.text().find("disk full"), std::string::npos);
}

// A Writer rotating many times: what is on disk never exceeds max_bytes (checked after
// every file), the newest files are the ones kept, and retention counts what it deleted.
TEST(WriterRetention, ManyRotationsStayWithinMaxBytes) {
    test::TempDir dir;
    test::LogCapture log;
    OutputConfig config = test::test_output_config(dir.path());
    config.manifest = true;
    config.rotate_size_bytes = 128 * 1024;
    config.retention.max_bytes = 7 * config.rotate_size_bytes;  // 4 reserved for the two streams
    auto created = Writer::create(config, {StreamSpec{StreamId{"p0", 0, 0}, 0, 262144},
                                           StreamSpec{StreamId{"p0", 0, 1}, 0, 262144}},
                                  heap_block_memory());
    ASSERT_TRUE(created.ok());
    auto writer = std::move(created).value();
    ASSERT_TRUE(writer->start().ok());
    test::FakeWorker w0(writer->stream(0)), w1(writer->stream(1));
    const auto disk_bytes = [&] {  // while retention deletes: a vanished file counts 0
        uint64_t n = 0;
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir.path(), ec)) {
            const auto size = std::filesystem::file_size(e.path(), ec);
            if (!ec) n += size;
        }
        return n;
    };
    uint64_t peak = 0;
    for (int i = 0; i < 40; ++i) {
        w0.send_block(test::make_packets(60, kT0 + i * kSecond));                 // ~40 KiB
        w1.send_block(test::make_packets(60, kT0 + i * kSecond + kSecond / 2), i % 5 == 4);
        peak = std::max(peak, disk_bytes());
        // Every block written and every finished file seen by retention: the steady state.
        ASSERT_TRUE(test::wait_until([&] {
            const uint64_t files =
                writer->counters(0).files_finalised.load() + writer->counters(1).files_finalised.load();
            return writer->stream(0).free_blocks.size() == config.blocks_per_queue &&
                   writer->stream(1).free_blocks.size() == config.blocks_per_queue &&
                   writer->retention().files.load() + writer->retention().deleted_files.load() >= files;
        }));
        peak = std::max(peak, disk_bytes());
    }
    writer->stop();
    EXPECT_LE(peak, config.retention.max_bytes);
    EXPECT_LE(disk_bytes(), config.retention.max_bytes);
    EXPECT_GT(writer->retention().deleted_files.load(), 10u);
    EXPECT_EQ(log.count("retention: deleted"), writer->retention().deleted_files.load());
    // Oldest first: every file left starts after every file deleted.
    const auto left = test::pcap_files(dir);
    ASSERT_FALSE(left.empty());
    EXPECT_GE(left.front(), "20231114T221329");  // the first ~10 s of files are gone
}

}  // namespace
}  // namespace linecap
