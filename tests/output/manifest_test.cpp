// Manifests: the JSON format (round trip, what a parser rejects), and what the writer
// puts in them — the SHA-256 of exactly the bytes on disk, packet count and times, the
// stream, the run and sequence, touching spans, and the drops of the file's span.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "linecap_build.h"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/manifest_hasher.hpp"
#include "util/sha256.hpp"
#include "output/stream_writer.hpp"
#include "util/unique_fd.hpp"
#include "archive/verify.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;
using test::Packet;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint64_t kSecond = 1000000000ull;
constexpr uint32_t kSnaplen = 262144;

Manifest full_manifest() {
    Manifest m;
    m.file = "20231114T221320.000000000Z-p0-q2.pcap";
    m.format = "pcap";
    m.size = 123456;
    m.sha256 = std::string(64, 'a');
    m.packets = 99;
    m.first_ns = kT0;
    m.last_ns = kT0 + 5;
    m.drops = ManifestDrops{1, 2, 3};
    m.received = 105;
    m.filtered = 0;
    m.span_start_ns = kT0 - 10;
    m.span_end_ns = kT0 + 10;
    m.stream = ManifestStream{"p0", 4, 2};
    m.clock = ManifestClock{"port", "nic-clock", "unsynchronised", 16000000, 1500000000, 2, "adjtimex"};
    m.run = "1700000000000000000";
    m.seq = 17;
    m.linecap_version = "0.1.0";
    return m;
}

TEST(ManifestFormat, RoundTrips) {
    const Manifest m = full_manifest();
    const std::string json = to_json(m);
    const Result<Manifest> back = parse_manifest(json);
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << json;
    EXPECT_EQ(back.value(), m);
    EXPECT_LT(json.find("\"drops\": 6"), json.find("drops_by_reason"));
    EXPECT_NE(json.find("\"first_time\": \"2023-11-14T22:13:20.000000000Z\""), std::string::npos) << json;

    Manifest recovered;
    recovered.file = "x \"quoted\"\\name\n.pcapng";
    recovered.format = "pcapng";
    recovered.sha256 = std::string(64, '0');
    recovered.recovered = true;
    const Result<Manifest> r = parse_manifest(to_json(recovered));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value(), recovered);
    EXPECT_EQ(to_json(recovered).find("drops"), std::string::npos);  // unknown: absent
}

TEST(ManifestFormat, RejectsWhatItCannotTrust) {
    EXPECT_FALSE(parse_manifest("").ok());
    EXPECT_FALSE(parse_manifest("[]").ok());
    EXPECT_FALSE(parse_manifest("{\"file\": \"x\"}").ok());
    std::string json = to_json(full_manifest());
    EXPECT_FALSE(parse_manifest(json.substr(0, json.size() / 2)).ok());
    std::string wrong_total = json;
    wrong_total.replace(wrong_total.find("\"drops\": 6"), 10, "\"drops\": 7");
    EXPECT_NE(parse_manifest(wrong_total).error().message.find("drops"), std::string::npos);
    std::string version = json;
    version.replace(version.find("\"manifest_version\": 1"), 21, "\"manifest_version\": 9");
    EXPECT_NE(parse_manifest(version).error().message.find("manifest_version"), std::string::npos);
    std::string sha = json;
    sha.replace(sha.find(std::string(64, 'a')), 64, "abc");
    EXPECT_FALSE(parse_manifest(sha).ok());
    std::string sync = json;
    sync.replace(sync.find("\"unsynchronised\""), 16, "\"maybe\"");
    EXPECT_NE(parse_manifest(sync).error().message.find("clock: \"sync\" is not synced, unknown or unsynchronised"),
              std::string::npos)
        << parse_manifest(sync).error().message;
}

// A draft (archive/manifest_hasher.hpp) is a manifest without its digest: neither parser
// takes the other's.
TEST(ManifestFormat, ADraftHasNoDigestAndAManifestHasOne) {
    Manifest draft = full_manifest();
    draft.sha256.clear();
    const Result<Manifest> back = parse_manifest_draft(to_json(draft));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back.value(), draft);
    EXPECT_FALSE(parse_manifest(to_json(draft)).ok());
    EXPECT_NE(parse_manifest_draft(to_json(full_manifest())).error().message.find("not a draft"), std::string::npos);
    const std::string json = to_json(draft);
    EXPECT_FALSE(parse_manifest_draft(json.substr(0, json.size() - 2)).ok());  // cut short by a crash
}

// A file's clock is the worst the board showed while it was written, and the steps
// counted in that time only.
TEST(ClockSpanOfAFile, WorstStateAndErrorsStepsWithinOnly) {
    ClockQualityBoard board("test-file:x");
    board.publish(ClockSample{ClockSync::synced, 1000, 5000});
    board.count_step();  // before the file: not its step
    ClockSpan span;
    span.begin(board);
    board.publish(ClockSample{ClockSync::unsynchronised, 9000, 4000});
    span.add(board);
    board.publish(ClockSample{ClockSync::synced, 2000, 3000});
    board.count_step();
    span.add(board);
    EXPECT_EQ(span.worst, ClockSync::unsynchronised);
    EXPECT_EQ(span.est_error_ns, 9000u);
    EXPECT_EQ(span.max_error_ns, 5000u);
    EXPECT_EQ(span.steps, 1u);
}

TEST(ManifestFormat, Sha256OfNothing) {
    EXPECT_EQ(Sha256::of({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// `"\uZZZZ"` made the old parser throw std::invalid_argument out of std::stoul
// (SIGABRT in `linecapd verify`, and in retention at every start).
TEST(ManifestFormat, DamageIsOneLineNeverAnAbort) {
    std::string json = to_json(full_manifest());
    json.replace(json.find("\"p0\""), 4, "\"\\uZZZZ\"");
    const Result<Manifest> m = parse_manifest(json);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().message.rfind("invalid JSON at byte ", 0), 0u) << m.error().message;
    EXPECT_EQ(m.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(m.error().message.find("last read"), std::string::npos);  // no echo of the bytes
    for (const std::string& bad : std::vector<std::string>{"{\"file\": \"\\uD800\"}", "{\"a\": 1e999999}", "\xff\xfe", "{\"file\": \"\xc3\"}",
                                  std::string(100000, '['), std::string(100000, '{'), "{\"a\":[[[[[[[[1]]]]]]]]}"}) {
        const Result<Manifest> r = parse_manifest(bad);
        EXPECT_FALSE(r.ok()) << bad.substr(0, 20);
        if (!r.ok()) {
            EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
        }
    }
}

// `"seq": null` read as "no sequence number", so verify saw a missing file.
TEST(ManifestFormat, NullIsDamageNotUnknown) {
    std::string json = to_json(full_manifest());
    json.replace(json.find("\"seq\": 17"), 9, "\"seq\": null");
    const Result<Manifest> m = parse_manifest(json);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().message, "\"seq\" is null");
    json = to_json(full_manifest());
    json.replace(json.find("\"queue\": 2"), 10, "\"queue\": 70000");
    EXPECT_EQ(parse_manifest(json).error().message, "stream: \"queue\" is not at most 65535");
}

TEST(ManifestFormat, ReadingStatesNameTheFile) {
    test::TempDir dir;
    const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    EXPECT_EQ(read_manifest(fd.get(), "a.pcap").state, ManifestRead::State::missing);
    ASSERT_EQ(::mkfifo(dir.file("b.pcap.manifest").c_str(), 0600), 0);  // must not block
    const ManifestRead fifo = read_manifest(fd.get(), "b.pcap");
    EXPECT_EQ(fifo.state, ManifestRead::State::unreadable);
    EXPECT_EQ(fifo.problem, "b.pcap.manifest: not a regular file");
    test::write_file(dir.file("c.pcap.manifest"), std::vector<uint8_t>{'{', '"'});
    const ManifestRead damaged = read_manifest(fd.get(), "c.pcap");
    EXPECT_EQ(damaged.state, ManifestRead::State::damaged);
    EXPECT_EQ(damaged.problem.rfind("c.pcap.manifest: invalid JSON at byte 3: ", 0), 0u) << damaged.problem;
}

TEST(ManifestFormat, WrittenAtomically) {
    test::TempDir dir;
    const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint64_t bytes = 0;
    EXPECT_TRUE(write_manifest(fd, full_manifest(), &bytes).ok());
    EXPECT_EQ(dir.names(), std::vector<std::string>{layout::manifest_name(full_manifest().file)});
    EXPECT_EQ(bytes, test::read_file(dir.file(layout::manifest_name(full_manifest().file))).size());
    const ManifestRead back = read_manifest(fd, full_manifest().file);
    ASSERT_TRUE(back.ok()) << back.problem;
    EXPECT_EQ(back.manifest, full_manifest());
    ::close(fd);
}

class WriterManifestTest : public ::testing::Test {
protected:
    void SetUp() override {
        config = test::test_output_config(dir.path());
        config.manifest = true;
    }
    std::unique_ptr<Writer> make_writer(const std::string& directory) {
        config.directory = directory;
        StreamSpec spec{StreamId{"p0", 2, 5}, 0, kSnaplen};
        spec.capture_counts = [this] { return CaptureCounts{filtered.load(), writer_full.load()}; };
        auto created = Writer::create(config, {spec}, heap_block_memory());
        EXPECT_TRUE(created.ok());
        return created.ok() ? std::move(created).value() : nullptr;
    }

    test::TempDir dir;
    OutputConfig config;
    std::atomic<uint64_t> filtered{0}, writer_full{0};
};

TEST_F(WriterManifestTest, EveryFinishedFileGetsOneThatMatchesIt) {
    auto writer = make_writer(dir.path());
    ASSERT_TRUE(writer);
    const uint64_t before = static_cast<uint64_t>(time(nullptr)) * kSecond;
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    std::vector<std::vector<Packet>> sent;
    for (int i = 0; i < 3; ++i) {
        sent.push_back(test::make_packets(30 + i, kT0 + i * kSecond));
        if (i == 1) filtered = 4;
        worker.send_block(sent.back(), true);
        ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == uint64_t(i) + 1; }));
    }
    writer->stop();

    const auto names = test::pcap_files(dir);
    ASSERT_EQ(names.size(), 3u);
    EXPECT_EQ(dir.names().size(), 6u) << ::testing::PrintToString(dir.names());  // no temporaries
    const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    std::vector<Manifest> ms;
    for (size_t i = 0; i < names.size(); ++i) {
        SCOPED_TRACE(names[i]);
        const ManifestRead read = read_manifest(fd, names[i]);
    const Manifest* m = &read.manifest;
        ASSERT_TRUE(read.ok()) << read.problem;
        const auto bytes = test::read_file(dir.file(names[i]));
        EXPECT_EQ(m->file, names[i]);
        EXPECT_EQ(m->format, "pcap");
        EXPECT_EQ(m->size, bytes.size());
        EXPECT_EQ(m->sha256, Sha256::of(bytes));
        EXPECT_EQ(m->packets, sent[i].size());
        EXPECT_EQ(m->first_ns, sent[i].front().ts_ns);
        EXPECT_EQ(m->last_ns, sent[i].back().ts_ns);
        ASSERT_TRUE(m->drops);
        EXPECT_EQ(m->drops->total(), 0u);
        EXPECT_EQ(m->filtered, i == 1 ? 4u : 0u);
        EXPECT_EQ(m->received, sent[i].size() + (i == 1 ? 4u : 0u));
        EXPECT_EQ(m->stream, (ManifestStream{"p0", 2, 5}));
        EXPECT_EQ(m->seq, i);
        EXPECT_FALSE(m->recovered);
        EXPECT_EQ(m->linecap_version, LINECAP_VERSION);
        ms.push_back(*m);
    }
    ::close(fd);
    EXPECT_FALSE(ms[0].run.empty());
    EXPECT_GE(ms[0].span_start_ns.value_or(0), before);
    for (size_t i = 1; i < ms.size(); ++i) {
        EXPECT_EQ(ms[i].run, ms[0].run);
        EXPECT_EQ(ms[i].span_start_ns, ms[i - 1].span_end_ns);  // spans touch
    }
}

// The writer gives every block straight back (the hasher reads the file, not the block):
// with a handful of blocks cycling through the writer and files rotating on size, every
// packet is in exactly one file once, every manifest matches its file, no marker is left.
TEST_F(WriterManifestTest, BlocksCycleWithoutLossOrRepeatAndEveryManifestMatches) {
    config.blocks_per_queue = 3;
    config.rotate_size_bytes = 256 * 1024;
    auto writer = make_writer(dir.path());
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    constexpr int kBlocks = 400;
    constexpr size_t kPerBlock = 40;
    for (int i = 0; i < kBlocks; ++i)
        worker.send_block(test::make_packets(kPerBlock, kT0 + uint64_t(i) * kSecond / 1000), i % 97 == 96);
    writer->stop();

    const auto names = test::pcap_files(dir);
    ASSERT_GT(names.size(), 3u);
    const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint64_t packets = 0;
    uint64_t last_ns = 0;
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        const ManifestRead read = read_manifest(fd, name);
        ASSERT_TRUE(read.ok()) << read.problem;
        const Manifest* m = &read.manifest;
        const auto bytes = test::read_file(dir.file(name));
        EXPECT_EQ(m->size, bytes.size());
        EXPECT_EQ(m->sha256, Sha256::of(bytes));
        EXPECT_GT(m->first_ns, last_ns);  // files in time order, none repeated
        last_ns = m->last_ns;
        packets += m->packets;
    }
    ::close(fd);
    EXPECT_EQ(packets, uint64_t(kBlocks) * kPerBlock);
    EXPECT_EQ(writer->counters(0).written_packets.load(), uint64_t(kBlocks) * kPerBlock);
    for (const std::string& name : dir.names()) EXPECT_EQ(name.find("pending"), std::string::npos) << name;
    const ManifestCounters* counters = writer->manifest();
    ASSERT_NE(counters, nullptr);
    EXPECT_EQ(counters->backlog_bytes.load(), 0u);
    EXPECT_EQ(counters->backlog_files.load(), 0u);
    EXPECT_EQ(counters->written_files.load(), names.size());
}

// While the writer runs, every finished file has its manifest or its pending marker at
// every moment (what a crash would leave), never neither.
TEST_F(WriterManifestTest, AFinishedFileHasItsManifestOrItsMarkerAtEveryMoment) {
    config.rotate_size_bytes = 64 * 1024;
    auto writer = make_writer(dir.path());
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    std::atomic<bool> done{false};
    std::atomic<int> violations{0};
    std::thread watcher([&] {
        const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        while (!done.load()) {
            for (const std::string& name : test::pcap_files(dir)) {
                const bool manifest = ::faccessat(fd.get(), layout::manifest_name(name).c_str(), F_OK, 0) == 0;
                const bool marker = ::faccessat(fd.get(), layout::manifest_pending_name(name).c_str(), F_OK, 0) == 0;
                if (!manifest && !marker && ::faccessat(fd.get(), layout::manifest_name(name).c_str(), F_OK, 0) != 0)
                    violations.fetch_add(1);
            }
        }
    });
    FakeWorker worker(writer->stream(0));
    for (int i = 0; i < 300; ++i)
        worker.send_block(test::make_packets(40, kT0 + uint64_t(i) * kSecond / 1000), i % 50 == 49);
    writer->stop();
    done = true;
    watcher.join();
    EXPECT_EQ(violations.load(), 0);
}

// The hasher on its own, driven as a writer thread drives it, on files a manifest-less
// writer produced (valid capture files, so that verify can read them).
class ManifestHasherTest : public ::testing::Test {
protected:
    void SetUp() override {
        config = test::test_output_config(dir.path());
        config.manifest = false;
        config.rotate_size_bytes = 0;
        StreamSpec spec{StreamId{"p0", 2, 5}, 0, kSnaplen};
        auto created = Writer::create(config, {spec}, heap_block_memory());
        ASSERT_TRUE(created.ok());
        auto writer = std::move(created).value();
        ASSERT_TRUE(writer->start().ok());
        FakeWorker worker(writer->stream(0));
        for (int i = 0; i < 3; ++i) worker.send_block(test::make_packets(50 + i, kT0 + uint64_t(i) * kSecond), true);
        writer->stop();
        files = test::pcap_files(dir);
        ASSERT_EQ(files.size(), 3u);
        dir_fd = UniqueFd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        context = HasherContext{config, dir_fd.get()};
        // These tests have stop() work the backlog off; the stop budget has a test of its own.
        context.stop_budget = std::chrono::minutes(1);
    }

    uint64_t size_of(const std::string& name) { return test::read_file(dir.file(name)).size(); }

    // What the writer does for one file, from open to finished: here the file is complete
    // already and carries its final name.
    void write_through(ManifestHasher& hasher, const std::string& name, uint64_t seq) {
        const uint64_t size = size_of(name);
        hasher.opened(0, name, 24);
        hasher.appended(0, size / 2);
        hasher.appended(0, size);
        EXPECT_TRUE(hasher.mark_pending(name));
        Manifest m;
        m.file = name;
        m.size = size;
        m.seq = seq;
        m.run = "1";
        hasher.finished(0, std::move(m));
    }

    bool exists(const std::string& name) { return ::faccessat(dir_fd.get(), name.c_str(), F_OK, 0) == 0; }

    VerifyReport verify(std::vector<std::string>* lines = nullptr) {
        const auto r = verify_directory({dir.path(), 0, false}, [&](const std::string& l) {
            if (lines != nullptr) lines->push_back(l);
        });
        EXPECT_TRUE(r.ok());
        return r.ok() ? r.value() : VerifyReport{};
    }

    test::TempDir dir;
    OutputConfig config;
    std::vector<std::string> files;
    UniqueFd dir_fd;
    HasherContext context;
    ManifestCounters counters;
};

// Pending until hashed: the marker says so, verify reports PENDING (not a finding), the
// backlog counts the file; then the manifest matches the file and the marker is gone.
TEST_F(ManifestHasherTest, PendingUntilHashedThenTheManifestMatchesTheFile) {
    ManifestHasher hasher(context, 1, counters);  // not started: works off at stop()
    write_through(hasher, files[0], 0);
    EXPECT_TRUE(exists(layout::manifest_pending_name(files[0])));
    EXPECT_FALSE(exists(layout::manifest_name(files[0])));
    EXPECT_EQ(counters.backlog_files.load(), 1u);
    EXPECT_EQ(counters.backlog_bytes.load(), size_of(files[0]));
    std::vector<std::string> lines;
    const VerifyReport pending = verify(&lines);
    EXPECT_EQ(pending.pending, 1u);
    EXPECT_EQ(pending.missing_manifests, 2u);  // the other two files: never given to the hasher
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                            [&](const std::string& l) { return l.rfind("PENDING " + files[0] + ":", 0) == 0; }))
        << ::testing::PrintToString(lines);

    hasher.stop();
    EXPECT_FALSE(exists(layout::manifest_pending_name(files[0])));
    const ManifestRead read = read_manifest(dir_fd.get(), files[0]);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(files[0]))));
    EXPECT_EQ(read.manifest.seq, 0u);
    EXPECT_FALSE(read.manifest.recovered);
    EXPECT_EQ(counters.backlog_files.load(), 0u);
    EXPECT_EQ(counters.backlog_bytes.load(), 0u);
    EXPECT_EQ(counters.hashed_bytes.load(), size_of(files[0]));
    EXPECT_EQ(counters.written_files.load(), 1u);
    EXPECT_EQ(verify().pending, 0u);
}

// The thread follows the file while it is written (the bytes are hashed before it is
// finished), and writes the manifest once it is.
TEST_F(ManifestHasherTest, FollowsTheWriterAndCompletesOnItsOwn) {
    ManifestHasher hasher(context, 1, counters);
    ASSERT_TRUE(hasher.start().ok());
    const uint64_t size = size_of(files[1]);
    hasher.opened(0, files[1], 24);
    hasher.appended(0, size - 100);
    // The hasher counts a piece as hashed, then takes it off the backlog: wait for both.
    ASSERT_TRUE(test::wait_until(
        [&] { return counters.hashed_bytes.load() == size - 100 && counters.backlog_bytes.load() == 0; }))
        << "hashed " << counters.hashed_bytes.load() << " of " << size - 100 << ", backlog " << counters.backlog_bytes.load();
    hasher.appended(0, size);
    ASSERT_TRUE(hasher.mark_pending(files[1]));
    Manifest m;
    m.file = files[1];
    m.size = size;
    hasher.finished(0, std::move(m));
    ASSERT_TRUE(test::wait_until([&] { return counters.written_files.load() == 1; }));
    EXPECT_FALSE(exists(layout::manifest_pending_name(files[1])));
    const ManifestRead read = read_manifest(dir_fd.get(), files[1]);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(files[1]))));
    hasher.stop();
}

// Retention deletes a pending file (it is the oldest): no manifest appears for it, its
// marker goes, and the backlog forgets it.
TEST_F(ManifestHasherTest, AFileDeletedWhilePendingGetsNoManifest) {
    ManifestHasher hasher(context, 1, counters);
    write_through(hasher, files[0], 0);
    for (const std::string& name : {files[0], layout::manifest_pending_name(files[0])})
        ASSERT_EQ(::unlinkat(dir_fd.get(), name.c_str(), 0), 0);
    hasher.stop();
    EXPECT_FALSE(exists(layout::manifest_name(files[0])));
    EXPECT_FALSE(exists(layout::manifest_pending_name(files[0])));
    EXPECT_EQ(counters.deleted_files.load(), 1u);
    EXPECT_EQ(counters.written_files.load(), 0u);
    EXPECT_EQ(counters.backlog_files.load(), 0u);
    EXPECT_EQ(counters.backlog_bytes.load(), 0u);
}

// A killed daemon leaves markers: the next start hashes those files from their bytes
// ("recovered"), and removes the markers that are stale (a manifest exists) or orphaned
// (the file is gone).
TEST_F(ManifestHasherTest, AKilledRunsPendingFilesAreCompletedAtTheNextStart) {
    test::write_file(dir.file(layout::manifest_pending_name(files[0])), {});
    Manifest kept;
    kept.file = files[1];
    kept.size = size_of(files[1]);
    kept.sha256 = Sha256::of(test::read_file(dir.file(files[1])));
    ASSERT_TRUE(write_manifest(dir_fd.get(), kept).ok());
    test::write_file(dir.file(layout::manifest_pending_name(files[1])), {});
    test::write_file(dir.file(layout::manifest_pending_name("gone.pcap")), {});

    ManifestHasher hasher(context, 1, counters);
    ASSERT_TRUE(hasher.start().ok());
    EXPECT_EQ(counters.backlog_files.load() + counters.written_files.load(), 1u);
    hasher.stop();
    const ManifestRead read = read_manifest(dir_fd.get(), files[0]);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_TRUE(read.manifest.recovered);
    EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(files[0]))));
    EXPECT_EQ(read.manifest.packets, 50u);
    EXPECT_EQ(read_manifest(dir_fd.get(), files[1]).manifest, kept);  // untouched
    for (const std::string& f : {files[0], files[1], std::string("gone.pcap")})
        EXPECT_FALSE(exists(layout::manifest_pending_name(f))) << f;
    EXPECT_EQ(counters.written_files.load(), 1u);
    EXPECT_EQ(counters.backlog_files.load(), 0u);
}

// A stop past its budget (none here) leaves the writer's record of a file not hashed yet in
// its marker; the next start completes the manifest from it: the writer's run and
// sequence, not "recovered", the digest of the file's bytes.
TEST_F(ManifestHasherTest, AStopLeavesTheWritersManifestForTheNextStart) {
    HasherContext no_budget = context;
    no_budget.stop_budget = std::chrono::milliseconds(0);
    {
        ManifestHasher hasher(no_budget, 1, counters);
        write_through(hasher, files[0], 7);
        hasher.stop();
    }
    EXPECT_FALSE(exists(layout::manifest_name(files[0])));
    const ManifestRead draft = read_manifest_draft(dir_fd.get(), files[0]);
    ASSERT_TRUE(draft.ok()) << draft.problem;
    EXPECT_EQ(draft.manifest.seq, 7u);
    EXPECT_TRUE(draft.manifest.sha256.empty());
    EXPECT_EQ(verify().pending, 1u);

    ManifestCounters next;
    ManifestHasher restarted(context, 1, next);
    ASSERT_TRUE(restarted.start().ok());
    ASSERT_TRUE(test::wait_until([&] { return next.written_files.load() == 1; }));
    restarted.stop();
    const ManifestRead read = read_manifest(dir_fd.get(), files[0]);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_FALSE(read.manifest.recovered);
    EXPECT_EQ(read.manifest.seq, 7u);
    EXPECT_EQ(read.manifest.run, "1");
    EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(files[0]))));
    EXPECT_FALSE(exists(layout::manifest_pending_name(files[0])));
}

// A marker whose draft cannot be trusted (cut short, or another file's) is not used: the
// manifest comes from the file's bytes alone, as after a kill.
TEST_F(ManifestHasherTest, ADraftThatIsNotTheFilesIsNotUsed) {
    Manifest other;
    other.file = files[2];
    other.size = size_of(files[2]);
    other.seq = 3;
    const std::string draft = to_json(other);
    test::write_file(dir.file(layout::manifest_pending_name(files[0])),
                     std::vector<uint8_t>(draft.begin(), draft.begin() + long(draft.size() / 2)));
    test::write_file(dir.file(layout::manifest_pending_name(files[1])), std::vector<uint8_t>(draft.begin(), draft.end()));
    ManifestHasher hasher(context, 1, counters);
    ASSERT_TRUE(hasher.start().ok());
    hasher.stop();
    for (const std::string& f : {files[0], files[1]}) {
        const ManifestRead read = read_manifest(dir_fd.get(), f);
        ASSERT_TRUE(read.ok()) << read.problem;
        EXPECT_TRUE(read.manifest.recovered) << f;
        EXPECT_FALSE(read.manifest.seq.has_value()) << f;
        EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(f))));
    }
}

// A volume re-admitted while its writer finishes a file: the writer has put the marker
// and renamed the file, and the rescan lists it before finished() reaches the lane (or
// before the lane writes the manifest). The file is the lane's: its manifest keeps the
// writer's run and sequence, and is not replaced by one made from the bytes alone.
TEST_F(ManifestHasherTest, ARescanLeavesTheFileTheWriterIsFinishingToItsLane) {
    ManifestHasher hasher(context, 1, counters);
    ASSERT_TRUE(hasher.start().ok());
    const std::string name = files[1];
    const std::string part = layout::in_progress_name(name);
    ASSERT_EQ(::renameat(dir_fd.get(), name.c_str(), dir_fd.get(), part.c_str()), 0);
    const uint64_t size = size_of(part);
    hasher.opened(0, part, 24);
    hasher.appended(0, size);
    ASSERT_TRUE(test::wait_until([&] { return counters.hashed_bytes.load() == size; }));  // now waiting for the writer
    ASSERT_TRUE(hasher.mark_pending(name));
    ASSERT_EQ(::renameat(dir_fd.get(), part.c_str(), dir_fd.get(), name.c_str()), 0);
    hasher.rescan();
    ASSERT_TRUE(test::wait_until([&] { return !hasher.rescan_pending(); }));
    Manifest m;
    m.file = name;
    m.size = size;
    m.seq = 7;
    m.run = "1";
    hasher.finished(0, std::move(m));
    hasher.stop();
    const ManifestRead read = read_manifest(dir_fd.get(), name);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_FALSE(read.manifest.recovered);
    EXPECT_EQ(read.manifest.seq, 7u);
    EXPECT_EQ(read.manifest.run, "1");
    EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(name))));
    EXPECT_FALSE(exists(layout::manifest_pending_name(name)));
    EXPECT_EQ(counters.written_files.load(), 1u);
    EXPECT_EQ(counters.backlog_files.load(), 0u);
    EXPECT_EQ(counters.backlog_bytes.load(), 0u);
}

// Beyond kTrackedFiles files waiting on a stream, a finished file is not followed (no
// descriptor held) but hashed by name afterwards, with its full manifest.
TEST_F(ManifestHasherTest, FilesBeyondTheTrackedBoundAreHashedByName) {
    ManifestHasher hasher(context, 1, counters);
    const size_t n = ManifestHasher::kTrackedFiles + 3;
    for (size_t i = 0; i < n; ++i) write_through(hasher, files[i % files.size()], i);
    EXPECT_EQ(counters.backlog_files.load(), n);
    hasher.stop();
    EXPECT_EQ(counters.written_files.load(), n);
    EXPECT_EQ(counters.backlog_files.load(), 0u);
    EXPECT_EQ(counters.backlog_bytes.load(), 0u);
    for (size_t i = 0; i < files.size(); ++i) {
        const ManifestRead read = read_manifest(dir_fd.get(), files[i]);
        ASSERT_TRUE(read.ok()) << read.problem;
        EXPECT_EQ(read.manifest.sha256, Sha256::of(test::read_file(dir.file(files[i]))));
        EXPECT_FALSE(read.manifest.recovered);
        EXPECT_EQ(read.manifest.seq.value_or(0) % files.size(), i);  // the last one written wins
    }
}

TEST_F(WriterManifestTest, DropsOfTheSpanByReason) {
    std::string why;
    auto mount = test::ScratchMount::mount("tmpfs", "size=1m", why);
    if (!mount) GTEST_SKIP() << why;
    auto writer = make_writer(mount->path());
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    const std::string filler = mount->dir().file("filler");
    test::write_file(filler, std::vector<uint8_t>(1 << 20, 1));
    worker.send_block(test::make_packets(20, kT0));  // lost: disk full
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).disk_full_packets.load() == 20; }));
    ASSERT_EQ(::unlink(filler.c_str()), 0);
    writer_full = 3;
    worker.send_block(test::make_packets(10, kT0 + kSecond), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    writer->stop();

    const int fd = ::open(mount->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const auto names = test::pcap_files(mount->dir());
    ASSERT_EQ(names.size(), 1u);
    const ManifestRead read = read_manifest(fd, names[0]);
    const Manifest* m = &read.manifest;
    ::close(fd);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_EQ(m->packets, 10u);
    EXPECT_EQ(m->drops, (ManifestDrops{3, 0, 20}));
    EXPECT_EQ(m->received, 33u);
}

TEST_F(WriterManifestTest, WithDirectIoTheDigestIsOfTheFileNotThePadding) {
    test::TempDir disk("/var/tmp");
    config.o_direct = true;
    auto writer = make_writer(disk.path());
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0));
    worker.send_block(test::make_packets(33, kT0));
    worker.send_block(test::make_packets(17, kT0 + kSecond), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    writer->stop();
    const auto names = test::pcap_files(disk);
    ASSERT_EQ(names.size(), 1u);
    const int fd = ::open(disk.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const ManifestRead read = read_manifest(fd, names[0]);
    const Manifest* m = &read.manifest;
    ::close(fd);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_EQ(m->sha256, Sha256::of(test::read_file(disk.file(names[0]))));
}

}  // namespace
}  // namespace linecap
