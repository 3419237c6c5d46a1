#include "output/file_naming.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace linecap {
namespace {

// 2023-11-14 22:13:20 UTC
constexpr uint64_t kSeconds = 1700000000;
constexpr uint64_t kTs = kSeconds * 1000000000ull + 123456789;

StreamId stream(const std::string& port = "p0", uint16_t queue = 3) { return StreamId{port, 7, queue}; }

TEST(RenderFileStem, DefaultTemplate) {
    EXPECT_EQ(render_file_stem("%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}", kTs, stream(), 0),
              "20231114T221320.123456789Z-p0-q3");
}

TEST(RenderFileStem, NanosecondsAreNineDigits) {
    EXPECT_EQ(render_file_stem("{nsec}", kSeconds * 1000000000ull + 5, stream(), 0), "000000005");
    EXPECT_EQ(render_file_stem("{nsec}", kSeconds * 1000000000ull, stream(), 0), "000000000");
}

TEST(RenderFileStem, SequenceAndRepeatedPlaceholders) {
    EXPECT_EQ(render_file_stem("{port}_{seq}_{port}_{queue}", kTs, stream("uplink-a", 12), 42),
              "uplink-a_42_uplink-a_12");
}

TEST(RenderFileStem, UnknownPlaceholdersAndBracesStayAsTheyAre) {
    EXPECT_EQ(render_file_stem("{host}-{port", kTs, stream(), 0), "{host}-{port");
}

TEST(RenderFileStem, PercentInsideAPortNameIsNotAConversion) {
    EXPECT_EQ(render_file_stem("{port}-%H", kTs, stream("a%Yb"), 0), "a%Yb-22");
}

TEST(RenderFileStem, TemplateWithoutConversionsOrEmptyStrftimeResult) {
    EXPECT_EQ(render_file_stem("plain", kTs, stream(), 0), "plain");
    EXPECT_EQ(render_file_stem("%p", kTs, stream(), 0), "PM");  // C locale
}

TEST(RenderFileStem, LongResultsGrowTheBuffer) {
    std::string long_template;
    for (int i = 0; i < 300; ++i) long_template += "%Y";
    EXPECT_EQ(render_file_stem(long_template, kTs, stream(), 0).size(), 1200u);
}

TEST(RenderFileStem, AlwaysUtcWhateverTheLocalTimeZone) {
    const char* old = std::getenv("TZ");
    const std::string saved = old ? old : "";
    ::setenv("TZ", "America/New_York", 1);
    ::tzset();
    const std::string rendered = render_file_stem("%Y%m%dT%H%M%S", kTs, stream(), 0);
    if (old) ::setenv("TZ", saved.c_str(), 1); else ::unsetenv("TZ");
    ::tzset();
    EXPECT_EQ(rendered, "20231114T221320");
}

TEST(FileNames, Extensions) {
    EXPECT_STREQ(file_extension(FileFormat::pcap), ".pcap");
    EXPECT_STREQ(file_extension(FileFormat::pcapng), ".pcapng");
}

TEST(FileNames, NumberedAlternativesGoBeforeTheExtension) {
    EXPECT_EQ(numbered_file_name("20231114T221320-p0", 0, ".pcap"), "20231114T221320-p0.pcap");
    EXPECT_EQ(numbered_file_name("20231114T221320-p0", 1, ".pcap"), "20231114T221320-p0-1.pcap");
    EXPECT_EQ(numbered_file_name("x", 12, ".pcapng"), "x-12.pcapng");
}

TEST(FileNames, InsertBeforeExtension) {
    EXPECT_EQ(insert_before_extension("a.b.pcap", "recovered"), "a.b-recovered.pcap");
    EXPECT_EQ(insert_before_extension("noext", "1"), "noext-1");
    EXPECT_EQ(insert_before_extension(".hidden", "1"), ".hidden-1");
}

TEST(FileNames, InProgressNameIsHiddenAndNeverMatchesPcapGlob) {
    const std::string part = in_progress_name("x.pcap");
    EXPECT_EQ(part, ".x.pcap.part");
    EXPECT_FALSE(part.ends_with(".pcap"));
    EXPECT_EQ(final_name_of_in_progress(part), "x.pcap");
}

TEST(FileNames, OnlyInProgressNamesMapBackToFinalNames) {
    EXPECT_EQ(final_name_of_in_progress("x.pcap"), std::nullopt);
    EXPECT_EQ(final_name_of_in_progress("x.pcap.part"), std::nullopt);
    EXPECT_EQ(final_name_of_in_progress(".x.pcap"), std::nullopt);
    EXPECT_EQ(final_name_of_in_progress(".part"), std::nullopt);
    EXPECT_EQ(final_name_of_in_progress("..part"), std::nullopt);
    EXPECT_EQ(final_name_of_in_progress(".a.part"), "a");
}

}  // namespace
}  // namespace linecap
