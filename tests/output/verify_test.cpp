// `linecapd verify`: a directory written by the writer verifies; every kind of damage or
// hole is reported on its own line, and the exit status says whether there was any.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "util/sha256.hpp"
#include "archive/verify.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint64_t kSecond = 1000000000ull;

class VerifyTest : public ::testing::Test {
protected:
    // `files` files of one stream, each in its own span, by a writer run.
    void write_run(size_t files, uint64_t first_ts, uint16_t queue = 0) {
        OutputConfig config = test::test_output_config(dir.path());
        config.manifest = true;
        auto created = Writer::create(config, {StreamSpec{StreamId{"p0", 0, queue}, 0, 262144}}, heap_block_memory());
        ASSERT_TRUE(created.ok());
        auto writer = std::move(created).value();
        ASSERT_TRUE(writer->start().ok());
        test::FakeWorker worker(writer->stream(0));
        for (size_t i = 0; i < files; ++i) {
            worker.send_block(test::make_packets(10, first_ts + i * kSecond), true);
            ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == i + 1; }));
        }
        writer->stop();
    }

    struct Outcome {
        VerifyReport report;
        std::vector<std::string> lines;
        bool has(const std::string& prefix, const std::string& part = "") const {
            for (const std::string& l : lines)
                if (l.starts_with(prefix) && l.find(part) != std::string::npos) return true;
            return false;
        }
    };
    Outcome verify(uint64_t max_gap_ns = 0) {
        Outcome o;
        const auto r = verify_directory({dir.path(), max_gap_ns, false}, [&](const std::string& l) { o.lines.push_back(l); });
        EXPECT_TRUE(r.ok());
        if (r.ok()) o.report = r.value();
        return o;
    }

    test::TempDir dir;
};

TEST_F(VerifyTest, WhatTheWriterWroteVerifies) {
    write_run(3, kT0);
    write_run(2, kT0 + 10 * kSecond, 1);
    const Outcome o = verify();
    EXPECT_EQ(o.report.files, 5u);
    EXPECT_EQ(o.report.verified, 5u);
    EXPECT_EQ(o.report.findings(), 0u) << ::testing::PrintToString(o.lines);
    ASSERT_EQ(o.lines.size(), 1u);
    EXPECT_NE(o.lines[0].find(": OK"), std::string::npos) << o.lines[0];
}

TEST_F(VerifyTest, ChangedOrTruncatedFilesAreMismatches) {
    write_run(3, kT0);
    const auto names = test::pcap_files(dir);
    auto bytes = test::read_file(dir.file(names[0]));
    bytes[bytes.size() - 3] ^= 0xff;  // packet data: still a valid file
    test::write_file(dir.file(names[0]), bytes);
    bytes = test::read_file(dir.file(names[1]));
    bytes.resize(bytes.size() - 5);   // a partial last record
    test::write_file(dir.file(names[1]), bytes);
    const Outcome o = verify();
    EXPECT_EQ(o.report.mismatched, 2u);
    EXPECT_TRUE(o.has("MISMATCH " + names[0], "sha256"));
    EXPECT_FALSE(o.has("MISMATCH " + names[0], "packets"));
    EXPECT_TRUE(o.has("INVALID " + names[1], "complete records"));
    EXPECT_TRUE(o.has("MISMATCH " + names[1], "size"));
    EXPECT_EQ(o.report.verified, 1u);
}

TEST_F(VerifyTest, MissingAndOrphanManifests) {
    write_run(3, kT0);
    const auto names = test::pcap_files(dir);
    ASSERT_EQ(::unlink(dir.file(layout::manifest_name(names[0])).c_str()), 0);
    ASSERT_EQ(::unlink(dir.file(names[2]).c_str()), 0);
    test::write_file(dir.file(layout::manifest_name(names[1])), std::vector<uint8_t>{'{', '}'});
    const Outcome o = verify();
    EXPECT_TRUE(o.has("NO-MANIFEST " + names[0]));
    EXPECT_TRUE(o.has("ORPHAN " + layout::manifest_name(names[2])));
    EXPECT_TRUE(o.has("BAD-MANIFEST " + layout::manifest_name(names[1])));
    EXPECT_EQ(o.report.findings(), 3u) << ::testing::PrintToString(o.lines);
}

TEST_F(VerifyTest, DeletingTheOldestFilesIsNoGapButARestartIs) {
    write_run(4, kT0);
    const auto names = test::pcap_files(dir);
    // What retention does: the oldest go first. The first file left has seq 3: no finding.
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_EQ(::unlink(dir.file(names[i]).c_str()), 0);
        ASSERT_EQ(::unlink(dir.file(layout::manifest_name(names[i])).c_str()), 0);
    }
    EXPECT_EQ(verify().report.findings(), 0u);
    write_run(2, kT0 + 100 * kSecond);  // the daemon again, later
    const Outcome o = verify();
    EXPECT_EQ(o.report.gaps, 1u) << ::testing::PrintToString(o.lines);
    EXPECT_TRUE(o.has("GAP p0:0", "the daemon was not capturing between"));
}

TEST_F(VerifyTest, HolesLossesAndRecoveries) {
    write_run(3, kT0);
    auto names = test::pcap_files(dir);
    ASSERT_EQ(::unlink(dir.file(names[1]).c_str()), 0);
    ASSERT_EQ(::unlink(dir.file(layout::manifest_name(names[1])).c_str()), 0);
    Outcome o = verify();
    EXPECT_TRUE(o.has("GAP p0:0", "1 file(s) missing (sequence 1 of run")) << ::testing::PrintToString(o.lines);
    EXPECT_EQ(o.report.gaps, 1u);

    // Drops recorded, and a recovered file.
    const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ManifestRead m = read_manifest(fd, names[2]);
    ASSERT_TRUE(m.ok()) << m.problem;
    m.manifest.drops = ManifestDrops{0, 0, 7};
    ASSERT_TRUE(write_manifest(fd, m.manifest).ok());
    m = read_manifest(fd, names[0]);
    ASSERT_TRUE(m.ok()) << m.problem;
    m.manifest.recovered = true;
    ASSERT_TRUE(write_manifest(fd, m.manifest).ok());
    ::close(fd);
    o = verify();
    EXPECT_TRUE(o.has("LOSS " + names[2], "7 packets dropped"));
    EXPECT_TRUE(o.has("RECOVERED " + names[0]));
    EXPECT_EQ(o.report.findings(), 3u) << ::testing::PrintToString(o.lines);
}

TEST_F(VerifyTest, MaxGapReportsPausesBetweenConsecutiveFiles) {
    write_run(3, kT0);  // files 1 s apart, 10 µs of packets each
    EXPECT_EQ(verify(2 * kSecond).report.findings(), 0u);
    const Outcome o = verify(kSecond / 2);
    EXPECT_EQ(o.report.gaps, 2u) << ::testing::PrintToString(o.lines);
    EXPECT_TRUE(o.has("GAP p0:0", "no packet for"));
}

TEST_F(VerifyTest, CommandLine) {
    write_run(1, kT0);
    const auto run = [](std::vector<std::string> args) {
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        return verify_command(static_cast<int>(argv.size()), argv.data());
    };
    EXPECT_EQ(run({"verify", dir.path()}), 0);
    EXPECT_EQ(run({"verify", "--verbose", "--max-gap", "5m", dir.path()}), 0);
    EXPECT_EQ(run({"verify"}), 64);
    EXPECT_EQ(run({"verify", "--bogus", dir.path()}), 64);
    EXPECT_EQ(run({"verify", "--max-gap", "soon", dir.path()}), 64);
    EXPECT_EQ(run({"verify", dir.file("missing")}), 1);
    ASSERT_EQ(::unlink(dir.file(layout::manifest_name(test::pcap_files(dir)[0])).c_str()), 0);
    EXPECT_EQ(run({"verify", dir.path()}), 1);
}

}  // namespace
}  // namespace linecap
