// The text forms of configuration values: lcore lists, sizes, durations, PCI and listen
// addresses.
#include "config/values.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rte_config.h>

#include <string>
#include <vector>

namespace linecap {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- parse_uint ---------------------------------------------------------------------

TEST(ParseUint, AcceptsPlainDecimalIntegers) {
    EXPECT_EQ(parse_uint("0"), 0u);
    EXPECT_EQ(parse_uint("007"), 7u);
    EXPECT_EQ(parse_uint("18446744073709551615"), UINT64_MAX);
}

TEST(ParseUint, RejectsAnythingElse) {
    for (const char* text : {"", " 1", "1 ", "+1", "-1", "0x10", "1e3", "1.0", "two", "18446744073709551616"}) {
        EXPECT_EQ(parse_uint(text), std::nullopt) << text;
    }
}

// --- parse_lcore_list ---------------------------------------------------------------

std::vector<unsigned> lcores(std::string_view text) {
    const auto ids = parse_lcore_list(text);
    EXPECT_TRUE(ids.ok()) << text << ": " << ids.error().message;
    return ids.ok() ? ids.value() : std::vector<unsigned>{};
}

std::string lcore_error(std::string_view text) {
    const auto ids = parse_lcore_list(text);
    EXPECT_FALSE(ids.ok()) << text << " parsed";
    return ids.ok() ? "" : ids.error().message;
}

TEST(ParseLcoreList, ExpandsRangesAndLists) {
    EXPECT_THAT(lcores("0-3"), ElementsAre(0, 1, 2, 3));
    EXPECT_THAT(lcores("0,2,4"), ElementsAre(0, 2, 4));
    EXPECT_THAT(lcores("1-2,5"), ElementsAre(1, 2, 5));
    EXPECT_THAT(lcores("7"), ElementsAre(7));
    EXPECT_THAT(lcores("3-3"), ElementsAre(3));
}

TEST(ParseLcoreList, KeepsTheOrderBecauseTheFirstIsTheMainLcore) {
    EXPECT_THAT(lcores("6,0-2"), ElementsAre(6, 0, 1, 2));
    EXPECT_THAT(lcores("5,3,4"), ElementsAre(5, 3, 4));
}

TEST(ParseLcoreList, IgnoresBlanksAroundItems) { EXPECT_THAT(lcores(" 0, 2 - 3 "), ElementsAre(0, 2, 3)); }

TEST(ParseLcoreList, PlacesLcoresOnCpus) {
    EXPECT_THAT(lcores("0@0,1@1,2@1"), ElementsAre(0, 1, 2));
    EXPECT_THAT(lcore_cpus("0@0,1@1,2@1"), ElementsAre(0, 1, 1));
    EXPECT_THAT(lcore_cpus("0-2,5"), ElementsAre(0, 1, 2, 5));
    EXPECT_FALSE(parse_lcore_list("0@,1").ok());
}

TEST(ParseLcoreList, RejectsMalformedLists) {
    for (const char* text : {"", ",", "0,", ",1", "0,,1", "a", "0-", "-3", "1-2-3", "0x1", "1;2", "1 2"}) {
        EXPECT_EQ(lcore_error(text),
                  "expected lcore ids and ranges like 0-3, 0,2,4 or 1-2,5, got '" + std::string(text) + "'")
            << text;
    }
}

TEST(ParseLcoreList, RejectsDuplicates) {
    EXPECT_EQ(lcore_error("0-3,2"), "lcore 2 is listed twice in '0-3,2'; each lcore runs one thread");
    EXPECT_EQ(lcore_error("1,1"), "lcore 1 is listed twice in '1,1'; each lcore runs one thread");
}

TEST(ParseLcoreList, RejectsBackwardRanges) {
    EXPECT_EQ(lcore_error("0,3-1"), "lcore range '3-1' runs backwards; write it as 1-3");
}

TEST(ParseLcoreList, RejectsIdsBeyondRteMaxLcore) {
    const std::string too_big = std::to_string(RTE_MAX_LCORE);
    EXPECT_EQ(lcore_error("0-" + too_big),
              "lcore " + too_big + " is out of range; lcore ids are 0.." + std::to_string(RTE_MAX_LCORE - 1));
    EXPECT_THAT(lcore_error("0,99999999999999999999"), HasSubstr("expected lcore ids"));  // overflow
    EXPECT_THAT(lcores("0," + std::to_string(RTE_MAX_LCORE - 1)), ElementsAre(0, RTE_MAX_LCORE - 1));
}

// --- parse_size ---------------------------------------------------------------------

uint64_t size(std::string_view text) {
    const auto bytes = parse_size(text);
    EXPECT_TRUE(bytes.ok()) << text << ": " << bytes.error().message;
    return bytes.ok() ? bytes.value() : 0;
}

TEST(ParseSize, PlainNumbersAreBytes) {
    EXPECT_EQ(size("0"), 0u);
    EXPECT_EQ(size("4096"), 4096u);
    EXPECT_EQ(size("4096B"), 4096u);
}

TEST(ParseSize, UnitsArePowersOf1024) {
    EXPECT_EQ(size("64K"), 64u << 10);
    EXPECT_EQ(size("64KiB"), 64u << 10);
    EXPECT_EQ(size("500M"), 500ull << 20);
    EXPECT_EQ(size("500MiB"), 500ull << 20);
    EXPECT_EQ(size("2G"), 2ull << 30);
    EXPECT_EQ(size("2GiB"), 2ull << 30);
    EXPECT_EQ(size("1T"), 1ull << 40);
    EXPECT_EQ(size("3TiB"), 3ull << 40);
    EXPECT_EQ(size("10 G"), 10ull << 30);
}

TEST(ParseSize, RejectsAmbiguousAndMalformedSizes) {
    for (const char* text : {"", "G", "2GB", "2g", "1.5G", "-1G", "2 GiBs", "0x10", "lots"}) {
        const auto bytes = parse_size(text);
        ASSERT_FALSE(bytes.ok()) << text;
        EXPECT_EQ(bytes.error().message,
                  "expected bytes or a size like 500M, 2G, 1T, 64KiB (units are powers of 1024), got '" +
                      std::string(text) + "'");
        EXPECT_TRUE(bytes.error().config);
    }
}

TEST(ParseSize, RejectsSizesBeyond64Bits) {
    EXPECT_EQ(size("16777215T"), 16777215ull << 40);
    EXPECT_FALSE(parse_size("16777216T").ok());
}

// --- parse_duration -----------------------------------------------------------------

uint64_t seconds(std::string_view text) {
    const auto value = parse_duration(text);
    EXPECT_TRUE(value.ok()) << text << ": " << value.error().message;
    return value.ok() ? value.value() : 0;
}

TEST(ParseDuration, PlainNumbersAreSeconds) {
    EXPECT_EQ(seconds("0"), 0u);
    EXPECT_EQ(seconds("3600"), 3600u);
}

TEST(ParseDuration, AcceptsOneUnit) {
    EXPECT_EQ(seconds("90s"), 90u);
    EXPECT_EQ(seconds("30m"), 30u * 60);
    EXPECT_EQ(seconds("12h"), 12u * 3600);
    EXPECT_EQ(seconds("14d"), 14u * 86400);
    EXPECT_EQ(seconds("2w"), 2u * 7 * 86400);
}

TEST(ParseDuration, RejectsOtherForms) {
    for (const char* text : {"", "s", "1h30m", "1.5h", "10 sec", "1y", "5M", "-5s"}) {
        const auto value = parse_duration(text);
        ASSERT_FALSE(value.ok()) << text;
        EXPECT_EQ(value.error().message,
                  "expected seconds or a duration like 90s, 30m, 12h, 14d, 2w, got '" + std::string(text) + "'");
    }
    EXPECT_FALSE(parse_duration("99999999999999999w").ok());  // does not fit in 64 bits
}

// --- normalize_pci_address ----------------------------------------------------------

TEST(NormalizePciAddress, AddsTheDefaultDomainAndLowersTheCase) {
    EXPECT_EQ(normalize_pci_address("0000:03:00.0"), "0000:03:00.0");
    EXPECT_EQ(normalize_pci_address("03:00.1"), "0000:03:00.1");
    EXPECT_EQ(normalize_pci_address("AF:1F.7"), "0000:af:1f.7");
    EXPECT_EQ(normalize_pci_address("10DE:0a:00.0"), "10de:0a:00.0");
}

TEST(NormalizePciAddress, RejectsWhatIsNotAPciAddress) {
    for (const char* text : {"", "03:00", "3:00.0", "03:0.0", "000:03:00.0", "00000:03:00.0", "0000:03:00.8",
                             "0000:03:20.0", "0000:03:00.10", "0000:g3:00.0", "0000:03:00:0", "03.00.0", "net_pcap0",
                             "0000:03:00.0,x=1", "1:0000:03:00.0"}) {
        EXPECT_EQ(normalize_pci_address(text), std::nullopt) << text;
    }
}

// --- parse_listen_address -----------------------------------------------------------

TEST(ParseListenAddress, AcceptsIpv4Ipv6AndLocalhost) {
    const auto v4 = parse_listen_address("127.0.0.1:9475");
    ASSERT_TRUE(v4.ok());
    EXPECT_EQ(v4.value().host, "127.0.0.1");
    EXPECT_EQ(v4.value().port, 9475);

    const auto v6 = parse_listen_address("[::1]:9100");
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6.value().host, "::1");
    EXPECT_EQ(v6.value().port, 9100);

    const auto local = parse_listen_address("localhost:65535");
    ASSERT_TRUE(local.ok());
    EXPECT_EQ(local.value().host, "localhost");
    EXPECT_EQ(local.value().port, 65535);

    EXPECT_TRUE(parse_listen_address("0.0.0.0:1").ok());
    EXPECT_TRUE(parse_listen_address("[::]:9475").ok());
}

TEST(ParseListenAddress, RejectsOtherForms) {
    for (const char* text : {"", "9475", ":9475", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                             "127.0.0.1:http", "256.0.0.1:9475", "::1:9475", "[::1]9475", "[127.0.0.1]:9475", "[]:9475",
                             "example.com:9475", "localhost:-1"}) {
        const auto address = parse_listen_address(text);
        ASSERT_FALSE(address.ok()) << text;
        EXPECT_THAT(
            address.error().message,
            HasSubstr("expected host:port with an IPv4 address, [IPv6 address] or localhost and a port 1..65535"));
        EXPECT_THAT(address.error().message, HasSubstr("got '" + std::string(text) + "'"));
    }
}

// --- parse_thread_priority -------------------------------------------------------

TEST(ParseThreadPriority, AcceptsTheFourKinds) {
    EXPECT_EQ(parse_thread_priority("normal").value(), ThreadPriority{});
    EXPECT_EQ(parse_thread_priority("nice:-20").value(), (ThreadPriority{ThreadPriority::Kind::nice, -20}));
    EXPECT_EQ(parse_thread_priority("nice:19").value(), (ThreadPriority{ThreadPriority::Kind::nice, 19}));
    EXPECT_EQ(parse_thread_priority("fifo:1").value(), (ThreadPriority{ThreadPriority::Kind::fifo, 1}));
    EXPECT_EQ(parse_thread_priority("rr:99").value(), (ThreadPriority{ThreadPriority::Kind::rr, 99}));
    EXPECT_EQ(to_string(parse_thread_priority(" nice: -5 ").value()), "nice:-5");
}

TEST(ParseThreadPriority, RejectsOutOfRangeAndOtherForms) {
    for (const char* text : {"", "nice", "nice:-21", "nice:20", "fifo:0", "fifo:100", "rr:-1", "idle:1", "fifo:x",
                             "fifo:1:2", "realtime"}) {
        const auto priority = parse_thread_priority(text);
        ASSERT_FALSE(priority.ok()) << text;
        EXPECT_THAT(priority.error().message, HasSubstr("expected normal, nice:N (-20..19), fifo:N or rr:N (1..99)"));
    }
}

}  // namespace
}  // namespace linecap
