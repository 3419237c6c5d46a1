// The capture directory's names (archive/layout.hpp), the file name template they are made
// from (config/file_template.hpp), and layout::AtomicFile.
#include "archive/layout.hpp"
#include "archive/object_layout.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#include "output_test_support.hpp"

namespace linecap {
namespace {

// 2023-11-14 22:13:20 UTC
constexpr uint64_t kSeconds = 1700000000;
constexpr uint64_t kTs = kSeconds * 1000000000ull + 123456789;

FileTemplate compiled(const std::string& text) {
    Result<FileTemplate> t = FileTemplate::compile(text);
    EXPECT_TRUE(t.ok()) << text << ": " << (t.ok() ? "" : t.error().message);
    return t.ok() ? t.value() : FileTemplate{};
}

std::string refusal(const std::string& text) {
    Result<FileTemplate> t = FileTemplate::compile(text);
    return t.ok() ? "accepted" : t.error().message;
}

TEST(FileTemplate, RendersTheDefault) {
    EXPECT_EQ(compiled(kDefaultFileTemplate).render(kTs, "p0", 3, 0), "20231114T221320.123456789Z-p0-q3");
    EXPECT_EQ(compiled("{nsec}-{port}-{queue}").render(kSeconds * 1000000000ull + 5, "p", 1, 0), "000000005-p-1");
    EXPECT_EQ(compiled("%F_%T-%j-%y-{seq}-{port}.{queue}").render(kTs, "a", 2, 42),
              "2023-11-14_22:13:20-318-23-42-a.2");
    EXPECT_EQ(compiled("%s.{nsec}-{port}-q{queue}%%").render(kTs, "a", 2, 0), "1700000000.123456789-a-q2%");
}

TEST(FileTemplate, AlwaysUtcWhateverTheLocalTimeZone) {
    const char* old = std::getenv("TZ");
    const std::string saved = old ? old : "";
    ::setenv("TZ", "America/New_York", 1);
    ::tzset();
    const std::string rendered = compiled("%Y%m%dT%H%M%S").render(kTs, "p0", 0, 0);
    const auto parsed = compiled("%Y%m%dT%H%M%S").parse(rendered);
    if (old) ::setenv("TZ", saved.c_str(), 1); else ::unsetenv("TZ");
    ::tzset();
    EXPECT_EQ(rendered, "20231114T221320");
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->time_ns, kSeconds * 1000000000ull);
}

// `--check` accepted templates the `linecap` tool then refused.
TEST(FileTemplate, RefusesWhatCannotBeReadBack) {
    EXPECT_NE(refusal("{port}{queue}%").find("lone '%'"), std::string::npos);
    EXPECT_NE(refusal("%Y{port}{queue}%Q").find("%Q is not supported"), std::string::npos);
    EXPECT_NE(refusal("%b-{port}-{queue}").find("%b is not supported"), std::string::npos);
    // {port} glued to {queue}: "tap0" queue 12 would read back as "tap01" queue 2.
    EXPECT_NE(refusal("%s-{port}{queue}").find("reads back as port"), std::string::npos) << refusal("%s-{port}{queue}");
    EXPECT_NE(refusal("{queue}{seq}-{port}").find("reads back"), std::string::npos);
    // Found by fuzz_template: a number glued before {port}, and a port name starting with a
    // digit ("7-x", seq 31 → "317-x" read back as seq 317, port "-x").
    EXPECT_NE(refusal("cap-%s-{seq}{port}%Y").find("reads back as port"), std::string::npos);
    EXPECT_NE(refusal("{queue}{port}%s").find("reads back"), std::string::npos);
    // Found by fuzz_template's long runs: a literal digit between {port} and a number, or
    // between two numbers, read back wrong only for numbers holding that digit (port p0,
    // queue 943: "p04943" read back as p049, queue 3; "{seq}3{queue}" likewise).
    EXPECT_NE(refusal("%y%j%%-MH-{port}4{queue}").find("reads back"), std::string::npos);
    EXPECT_NE(refusal("{queue}7{port}-%s").find("reads back"), std::string::npos);
    const std::string two_ways = "could be read back two ways";
    for (const char* t : {"%F_%T%T_{seq}3{queue}_{port}", "{port}-{queue}3{seq}", "{seq}%Y{queue}-{port}",
                          "%Y{queue}5{port}", "{port}1%Y{queue}x"}) {
        EXPECT_NE(refusal(t).find("read"), std::string::npos) << t << ": " << refusal(t);
    }
    for (const char* t : {"%F_%T%T_{seq}3{queue}_{port}", "{seq}7{queue}-{port}", "{port}1%Y{queue}x"})
        EXPECT_NE(refusal(t).find(two_ways), std::string::npos) << t << ": " << refusal(t);
    // One number of variable width per run of digits, away from {port}: read one way.
    for (const char* t : {"%Y%m%d%H%M%S{queue}-{port}", "{port}-%Y{queue}%m", "%s{nsec}-{port}-q{queue}x{seq}",
                          "{port}%H%M-{queue}"}) {
        EXPECT_EQ(refusal(t), "accepted") << t;
    }
    EXPECT_NE(refusal("{port}-{queue}-{port}").find("appears twice"), std::string::npos);
    EXPECT_NE(refusal(std::string("a\0b", 3)).find("NUL"), std::string::npos);
    EXPECT_NE(refusal("a/{port}").find("not a path"), std::string::npos);
    EXPECT_NE(refusal(".{port}").find("must not start with '.'"), std::string::npos);
    EXPECT_NE(refusal("{host}").find("unknown placeholder '{host}'"), std::string::npos);
    EXPECT_EQ(refusal("%F_%T-{port}.{queue}-{seq}"), "accepted");
    EXPECT_EQ(refusal("{seq}_{nsec}_{queue}_{port}"), "accepted");
}

TEST(FileTemplate, LongestRenderedStem) {
    // 15 + 1 + 9 + 2 + 32 (port) + 2 + 4 (queue)
    EXPECT_EQ(compiled(kDefaultFileTemplate).max_rendered_bytes(32), 65u);
    EXPECT_EQ(compiled("{seq}").max_rendered_bytes(32), 20u);
}

TEST(FileTemplate, ParsesNamesBack) {
    const FileTemplate t = compiled(kDefaultFileTemplate);
    auto p = t.parse("20261130T021000.000000123Z-p0-q3");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->has_time);
    EXPECT_EQ(p->time_ns, 1796004600000000123ull);
    EXPECT_EQ(p->precision_ns, 1u);
    EXPECT_EQ(p->port, "p0");
    EXPECT_EQ(p->queue, 3);
    EXPECT_FALSE(t.parse("capture"));
    EXPECT_FALSE(t.parse("20261130T021000Z-p0-q3"));
    auto minutes = compiled("cap-%Y%m%d%H%M").parse("cap-202611300210");
    ASSERT_TRUE(minutes);
    EXPECT_EQ(minutes->precision_ns, 60000000000u);
    EXPECT_FALSE(minutes->has_stream);
    auto epoch = compiled("%s.{nsec}-{port}-q{queue}").parse("1796004600.000000001-p0-q1");
    ASSERT_TRUE(epoch);
    EXPECT_EQ(epoch->time_ns, 1796004600000000001ull);
    // Beyond what 64-bit nanoseconds hold: no time, not a wrapped one.
    auto far = compiled("%s-{port}-q{queue}").parse("99999999999-p0-q1");
    ASSERT_TRUE(far);
    EXPECT_FALSE(far->has_time);
}

// Found by fuzz_template: {seq} renders any 64-bit count (up to 20 digits) but names
// were read with at most 18 digits, so a file with a sequence number of 10^18 or more
// was not a capture name to the tool.
TEST(FileTemplate, ReadsBackEveryRenderedSequenceNumber) {
    const FileTemplate t = compiled("%F_%T_{seq}_{port}_q{queue}");
    for (const uint64_t seq : {uint64_t{0}, uint64_t{999999999999999999ull}, uint64_t{4192904438487670629ull},
                               UINT64_MAX}) {
        const std::string stem = t.render(1796004600000000000ull, "p0", 53, seq);
        const auto p = t.parse(stem);
        ASSERT_TRUE(p) << stem;
        EXPECT_EQ(p->port, "p0");
        EXPECT_EQ(p->queue, 53);
        EXPECT_EQ(p->time_ns, 1796004600000000000ull);
    }
}

TEST(Layout, CaptureNamesRoundTripWithTheirSuffixes) {
    const FileTemplate t = compiled(kDefaultFileTemplate);
    const StreamId stream{"uplink-a", 7, 12};
    const std::string name = layout::capture_name(t, kTs, stream, 0, FileKind::pcap, 0);
    EXPECT_EQ(name, "20231114T221320.123456789Z-uplink-a-q12.pcap");
    EXPECT_EQ(layout::capture_name(t, kTs, stream, 0, FileKind::pcapng, 2),
              "20231114T221320.123456789Z-uplink-a-q12-2.pcapng");
    for (const std::string& n : {name, layout::numbered_name(name, 1), layout::recovered_name(name),
                                 layout::numbered_name(layout::recovered_name(layout::numbered_name(name, 3)), 4)}) {
        const auto p = layout::parse_capture_name(t, n);
        ASSERT_TRUE(p) << n;
        EXPECT_EQ(p->port, "uplink-a") << n;
        EXPECT_EQ(p->queue, 12) << n;
        EXPECT_EQ(p->time_ns, kTs) << n;
    }
    EXPECT_FALSE(layout::parse_capture_name(t, layout::in_progress_name(name)));
    EXPECT_FALSE(layout::parse_capture_name(t, layout::manifest_name(name)));
}

TEST(Layout, EveryKindOfName) {
    EXPECT_EQ(layout::extension(FileKind::pcap), ".pcap");
    EXPECT_EQ(layout::extension(FileKind::pcapng), ".pcapng");
    EXPECT_EQ(layout::numbered_name("a.b.pcap", 1), "a.b-1.pcap");
    EXPECT_EQ(layout::numbered_name("x.pcap", 0), "x.pcap");
    EXPECT_EQ(layout::recovered_name("x.pcapng"), "x-recovered.pcapng");
    EXPECT_EQ(layout::corrupt_name("x.pcap"), "x.pcap.corrupt");
    EXPECT_EQ(layout::numbered_name(layout::corrupt_name("x.pcap"), 2), "x.pcap-2.corrupt");
    EXPECT_TRUE(layout::is_capture_name("x.pcap"));
    EXPECT_TRUE(layout::is_capture_name("x.pcapng"));
    EXPECT_FALSE(layout::is_capture_name(".x.pcap"));
    EXPECT_FALSE(layout::is_capture_name("x.pcap.idx"));

    const std::string part = layout::in_progress_name("x.pcap");
    EXPECT_EQ(part, ".x.pcap.part");
    EXPECT_EQ(layout::final_name_of_in_progress(part), "x.pcap");
    for (const char* not_part : {"x.pcap", "x.pcap.part", ".x.pcap", ".part", "..part"})
        EXPECT_EQ(layout::final_name_of_in_progress(not_part), std::nullopt) << not_part;

    EXPECT_EQ(layout::manifest_name("a.pcap"), "a.pcap.manifest");
    EXPECT_EQ(layout::index_name("dir/a.pcap"), "dir/a.pcap.idx");
    EXPECT_EQ(layout::capture_name_of_manifest("a.pcap.manifest"), "a.pcap");
    EXPECT_EQ(layout::capture_name_of_manifest(".a.pcap.manifest"), std::nullopt);
    EXPECT_EQ(layout::capture_name_of_index("a.pcap.idx"), "a.pcap");
    EXPECT_EQ(layout::capture_name_of_index("a.pcap"), std::nullopt);
    EXPECT_EQ(layout::sidecar_names("a.pcap")[0], "a.pcap.manifest");
    EXPECT_EQ(layout::sidecar_names("a.pcap")[1], "a.pcap.idx");

    EXPECT_EQ(layout::final_name_of_temporary(".a.pcap.idx.tmp.Ab3xYz"), "a.pcap.idx");
    EXPECT_EQ(layout::final_name_of_temporary("a.pcap.idx.tmp.Ab3xYz"), std::nullopt);
    EXPECT_EQ(layout::final_name_of_temporary(".a.pcap.idx.tmp.Ab3"), std::nullopt);
    EXPECT_EQ(layout::final_name_of_temporary(".a.pcap.manifest.tmp"), std::nullopt);
}

TEST(AtomicFile, CommitsWholeOrLeavesNothing) {
    test::TempDir dir;
    const std::vector<uint8_t> bytes{'a', 'b', 'c'};
    ASSERT_TRUE(layout::atomic_write(dir.path() + "/out", bytes, 0644).ok());
    EXPECT_EQ(dir.names(), std::vector<std::string>{"out"});
    EXPECT_EQ(test::read_file(dir.file("out")), bytes);
    ASSERT_TRUE(layout::atomic_write(dir.path() + "/out", std::vector<uint8_t>{'x'}, 0644).ok());  // replaces
    EXPECT_EQ(test::read_file(dir.file("out")), std::vector<uint8_t>{'x'});
    {
        layout::AtomicFile file;
        ASSERT_TRUE(file.open(dir.path() + "/other", 0644).ok());
        EXPECT_TRUE(layout::final_name_of_temporary(file.temporary_name()));
        EXPECT_EQ(dir.names().size(), 2u);  // out and the temporary
    }  // destroyed without commit
    EXPECT_EQ(dir.names(), std::vector<std::string>{"out"});
}

// A temporary that cannot be removed when its AtomicFile gives it up (the volume failing
// at that moment) is removed by the next AtomicFile opened once it can be, not left for the
// next start's recovery. The unlink is made to fail for real: a file mounted over the
// temporary makes it a mount point, and unlink(2) refuses those with EBUSY.
TEST(AtomicFile, RemovesATemporaryItCouldNotRemoveOnceItCan) {
    test::TempDir dir;
    test::write_file(dir.file("cover"), std::vector<uint8_t>{'c'});
    std::string temporary;
    struct Unmount {  // a failed assertion still leaves no mount behind
        const std::string& path;
        ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{temporary};
    {
        layout::AtomicFile file;
        ASSERT_TRUE(file.open(dir.path() + "/a.pcap.idx", 0644).ok());
        temporary = dir.file(file.temporary_name());
        ASSERT_EQ(::mount(dir.file("cover").c_str(), temporary.c_str(), nullptr, MS_BIND, nullptr), 0)
            << "bind mount: " << std::strerror(errno);
        ASSERT_NE(::unlink(temporary.c_str()), 0);
        ASSERT_EQ(errno, EBUSY);
    }  // given up; its removal fails
    EXPECT_EQ(::access(temporary.c_str(), F_OK), 0);
    ASSERT_EQ(::umount2(temporary.c_str(), 0), 0) << std::strerror(errno);
    EXPECT_EQ(::access(temporary.c_str(), F_OK), 0);  // nothing removes it by itself

    ASSERT_TRUE(layout::atomic_write(dir.path() + "/b.pcap.idx", std::vector<uint8_t>{'x'}, 0644).ok());
    EXPECT_NE(::access(temporary.c_str(), F_OK), 0) << temporary << " is still there";
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"b.pcap.idx", "cover"}));
}

TEST(AtomicFile, NeverReplacesWhatIsNotARegularFile) {
    test::TempDir dir;
    ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
    ASSERT_EQ(::symlink("out", dir.file("link").c_str()), 0);
    ASSERT_EQ(::mkdir(dir.file("sub").c_str(), 0700), 0);
    for (const char* name : {"fifo", "link", "sub"}) {
        const IoStatus status = layout::atomic_write(dir.path() + "/" + name, std::vector<uint8_t>{'x'}, 0644);
        EXPECT_FALSE(status.ok()) << name;
        EXPECT_NE(status.message().find("not a regular file"), std::string::npos) << status.message();
    }
    struct stat st {};
    ASSERT_EQ(::lstat(dir.file("fifo").c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    ASSERT_EQ(::lstat(dir.file("link").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_FALSE(::access(dir.file("out").c_str(), F_OK) == 0);  // the link was not followed
    EXPECT_EQ(dir.names().size(), 3u);                            // no temporary left
    const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    EXPECT_NE(layout::not_replaceable(fd.get(), "fifo").value_or("").find("a FIFO"), std::string::npos);
    EXPECT_EQ(layout::not_replaceable(fd.get(), "absent"), std::nullopt);
}

// The archive tier's object keys (archive/object_layout.hpp).
TEST(ObjectLayout, ParsesArchiveUrls) {
    auto at = object_layout::parse_url("s3://bucket/site/sensor-1/");
    ASSERT_TRUE(at.ok()) << at.error().message;
    EXPECT_EQ(at->bucket, "bucket");
    EXPECT_EQ(at->prefix, "site/sensor-1");
    auto bucket_only = object_layout::parse_url("s3://bucket");
    ASSERT_TRUE(bucket_only.ok());
    EXPECT_EQ(bucket_only->prefix, "");
    for (const char* bad : {"http://bucket/x", "s3://", "s3:///x", "s3://b/a//c", "bucket/x"}) {
        auto refused = object_layout::parse_url(bad);
        ASSERT_FALSE(refused.ok()) << bad;
        EXPECT_NE(refused.error().message.find(bad), std::string::npos) << refused.error().message;
    }
}

TEST(ObjectLayout, KeysAndNamesUnderAPrefix) {
    EXPECT_EQ(object_layout::object_key("sensor-1", "x.pcap.idx"), "sensor-1/x.pcap.idx");
    EXPECT_EQ(object_layout::object_key("", "x.pcap"), "x.pcap");
    EXPECT_EQ(object_layout::name_under("sensor-1", "sensor-1/x.pcap.zst"), "x.pcap.zst");
    EXPECT_EQ(object_layout::name_under("sensor-1", "sensor-10/x.pcap"), "");
    EXPECT_EQ(object_layout::name_under("sensor-1", "sensor-1/deeper/x.pcap"), "");
    EXPECT_EQ(object_layout::name_under("", "x.pcap"), "x.pcap");
    EXPECT_EQ(object_layout::name_under("", "sensor-1/x.pcap"), "");
}

}  // namespace
}  // namespace linecap
