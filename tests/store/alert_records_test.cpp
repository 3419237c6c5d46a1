// Suricata EVE and Zeek conn.log JSON records as flow queries: the records as those tools
// document them, their spans widened by the margin, Community ID before the 5-tuple, and
// the lines that are no flow record named rather than guessed at.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <sstream>

#include "store/alert_records.hpp"
#include "store/time_spec.hpp"

namespace linecap::store {
namespace {

constexpr uint64_t kSecond = 1000000000ull;

AlertRecords read(const std::string& text, uint64_t margin = 0) {
    std::istringstream in(text);
    auto r = read_alert_records(in, margin);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r.value() : AlertRecords{};
}

void expect_compiles(const std::string& filter) {
    pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
    bpf_program prog{};
    EXPECT_EQ(pcap_compile(p, &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN), 0) << filter << ": " << pcap_geterr(p);
    pcap_freecode(&prog);
    pcap_close(p);
}

// An alert as Suricata 6/7 writes it (EVE JSON output, community-id enabled).
const char* kEveAlert =
    R"({"timestamp":"2026-11-30T02:10:05.250000+0000","flow_id":1143226012461547,"in_iface":"eth0",)"
    R"("event_type":"alert","src_ip":"10.0.0.5","src_port":49152,"dest_ip":"192.0.2.7","dest_port":443,)"
    R"("proto":"TCP","community_id":"1:LQU9qZlK+B5F3KDmev6m5PMibrg=","alert":{"action":"allowed","gid":1,)"
    R"("signature_id":2019401,"rev":3,"signature":"ET POLICY Suspicious TLS","category":"Misc","severity":2},)"
    R"("flow":{"pkts_toserver":4,"pkts_toclient":3,"bytes_toserver":400,"bytes_toclient":900,)"
    R"("start":"2026-11-30T02:10:00.125000+0000"}})";

TEST(AlertRecords, SuricataAlertByCommunityIdOverTheFlowsSpan) {
    const AlertRecords r = read(std::string(kEveAlert) + "\n", 2 * kSecond);
    ASSERT_EQ(r.queries.size(), 1u);
    const FlowQuery& q = r.queries[0];
    EXPECT_EQ(q.community_id, "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
    EXPECT_EQ(q.filter, "host 10.0.0.5 and host 192.0.2.7 and tcp port 49152 and tcp port 443");
    expect_compiles(q.filter);
    EXPECT_EQ(q.from_ns, parse_time("2026-11-30T02:09:58.125Z").value());
    EXPECT_EQ(q.to_ns, parse_time("2026-11-30T02:10:07.25Z").value() + 1);
    EXPECT_EQ(q.source, "line 1: suricata alert 2019401 \"ET POLICY Suspicious TLS\"");
    EXPECT_TRUE(r.skipped.empty());
}

TEST(AlertRecords, SuricataFlowRecordWithoutCommunityIdByFiveTuple) {
    const AlertRecords r = read(
        R"({"timestamp":"2026-11-30T02:11:00.000000+0000","event_type":"flow","src_ip":"2001:db8::1","src_port":53,)"
        R"("dest_ip":"2001:db8::2","dest_port":5353,"proto":"UDP","flow":{"start":"2026-11-30T02:10:00.000000+0000",)"
        R"("end":"2026-11-30T02:10:30.500000+0000","state":"closed"}})"
        "\n");
    ASSERT_EQ(r.queries.size(), 1u);
    EXPECT_EQ(r.queries[0].community_id, "");
    EXPECT_EQ(r.queries[0].filter, "host 2001:db8::1 and host 2001:db8::2 and udp port 53 and udp port 5353");
    expect_compiles(r.queries[0].filter);
    EXPECT_EQ(r.queries[0].from_ns, parse_time("2026-11-30T02:10:00Z").value());
    EXPECT_EQ(r.queries[0].to_ns, parse_time("2026-11-30T02:10:30.5Z").value() + 1);
}

// Zeek conn.log with LogAscii::use_json=T (and the community-id package's field).
TEST(AlertRecords, ZeekConnRecordsFromTsOverTheirDuration) {
    const AlertRecords r = read(
        R"({"ts":1796004600.5,"uid":"CHhAvVGS1DHFjwGM9","id.orig_h":"10.0.0.5","id.orig_p":51234,)"
        R"("id.resp_h":"198.51.100.9","id.resp_p":80,"proto":"tcp","service":"http","duration":1.25,)"
        R"("orig_bytes":100,"resp_bytes":2000,"conn_state":"SF"})"
        "\n"
        R"({"ts":1796004700.0,"uid":"C2","id.orig_h":"10.0.0.5","id.orig_p":8,"id.resp_h":"10.0.0.1","id.resp_p":0,)"
        R"("proto":"icmp","community_id":"1:abc="})"
        "\n",
        kSecond);
    ASSERT_EQ(r.queries.size(), 2u);
    EXPECT_EQ(r.queries[0].filter, "host 10.0.0.5 and host 198.51.100.9 and tcp port 51234 and tcp port 80");
    EXPECT_EQ(r.queries[0].from_ns, 1796004599500000000ull);
    EXPECT_EQ(r.queries[0].to_ns, 1796004602750000001ull);
    EXPECT_EQ(r.queries[0].source, "line 1: zeek conn CHhAvVGS1DHFjwGM9");
    EXPECT_EQ(r.queries[1].community_id, "1:abc=");
    EXPECT_EQ(r.queries[1].filter, "host 10.0.0.5 and host 10.0.0.1 and (icmp or icmp6)");
    expect_compiles(r.queries[1].filter);
    EXPECT_EQ(r.queries[1].from_ns, 1796004699000000000ull);
    EXPECT_EQ(r.queries[1].to_ns, 1796004701000000001ull);
}

TEST(AlertRecords, LinesThatAreNoFlowRecordAreNamed) {
    const AlertRecords r = read(std::string(kEveAlert) + "\n" +
                                R"({"timestamp":"2026-11-30T02:10:05.250000+0000","event_type":"stats","stats":{}})" "\n"
                                "{not json\n"
                                R"({"src_ip":"10.0.0.999","dest_ip":"10.0.0.1","timestamp":"2026-11-30T02:10:05Z"})" "\n"
                                R"({"src_ip":"10.0.0.1","dest_ip":"10.0.0.2"})" "\n"
                                R"({"ts":"yesterday","id.orig_h":"10.0.0.1","id.resp_h":"10.0.0.2"})" "\n"
                                "\n"
                                "[1,2]\n");
    ASSERT_EQ(r.queries.size(), 1u);
    ASSERT_EQ(r.skipped.size(), 6u);
    EXPECT_EQ(r.skipped[0], "line 2: no flow in it (neither src_ip nor id.orig_h)");
    EXPECT_EQ(r.skipped[1], "line 3: not a JSON object");
    EXPECT_EQ(r.skipped[2], "line 4: EVE record without valid src_ip/dest_ip");
    EXPECT_EQ(r.skipped[3], "line 5: EVE record without a readable timestamp or flow.start");
    EXPECT_EQ(r.skipped[4], "line 6: Zeek record without a readable ts");
    EXPECT_EQ(r.skipped[5], "line 8: not a JSON object");
    // Only the stats event is another kind of record; the rest are broken.
    EXPECT_EQ(r.malformed, (std::vector<size_t>{1, 2, 3, 4, 5}));
}

// Hosts as libpcap is sure to read them, of one IP version (an IPv4 and an IPv6 host give a
// filter libpcap refuses: it matches nothing); what the record says, one line whatever it holds.
TEST(AlertRecords, HostsAndTextFromTheRecordStayReadable) {
    const AlertRecords r = read(
        R"({"ts":1796004600.5,"uid":"C1\nC2","id.orig_h":"0:0:0:0:0:ffff:10.0.0.5","id.resp_h":"2001:DB8:0::09"})" "\n"
        R"({"src_ip":"10.0.0.5","dest_ip":"::ffff:10.0.0.6","timestamp":"2026-11-30T02:10:05Z"})" "\n"
        R"({"ts":1796004600.5,"id.orig_h":"2001:db8::1","id.resp_h":"10.0.0.6"})" "\n");
    ASSERT_EQ(r.queries.size(), 1u);
    EXPECT_EQ(r.queries[0].filter, "host ::ffff:10.0.0.5 and host 2001:db8::9");
    expect_compiles(r.queries[0].filter);
    EXPECT_EQ(r.queries[0].source, "line 1: zeek conn C1\\nC2");
    ASSERT_EQ(r.skipped.size(), 2u);
    EXPECT_EQ(r.skipped[0], "line 2: EVE record whose src_ip and dest_ip are of different IP versions");
    EXPECT_EQ(r.skipped[1], "line 3: Zeek record whose id.orig_h and id.resp_h are of different IP versions");
    EXPECT_EQ(r.malformed, (std::vector<size_t>{0, 1}));

    std::string bad_id = kEveAlert;
    bad_id.replace(bad_id.find("1:LQU9"), 30, "1:x\\u000ay");  // a JSON escape: a line break in the id
    auto selections = flow_selections(read(bad_id + "\n"));
    ASSERT_FALSE(selections);
    EXPECT_EQ(selections.error().message.find('\n'), std::string::npos) << selections.error().message;
    EXPECT_NE(selections.error().message.find("line 1: community_id 1:x\\ny: "), std::string::npos)
        << selections.error().message;
}

TEST(AlertRecords, InputThatIsNoJsonLinesIsRefused) {
    std::istringstream tsv("#separator \\x09\n#fields\tts\tuid\n");
    auto r = read_alert_records(tsv, 0);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("line 1: not a JSON object"), std::string::npos) << r.error().message;
    std::istringstream many;
    std::string text;
    for (int i = 0; i < 11; ++i) text += std::string(kEveAlert) + "\n";
    many.str(text);
    auto capped = read_alert_records(many, 0, 10);
    ASSERT_FALSE(capped);
    EXPECT_NE(capped.error().message.find("more than 10 flow records"), std::string::npos);
}

}  // namespace
}  // namespace linecap::store
