// The capture file reader (pcap and pcapng) and the writer: formats and byte orders,
// the variants libpcap/Wireshark read (FCS bits in the link type, caplen > snaplen,
// len = 0), damage named by offset, and agreement with libpcap record by record.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "format/pcapng_blocks.hpp"
#include "format/pcapng_format.hpp"

using namespace linecap;
using namespace linecap::format;
using Bytes = std::vector<uint8_t>;

namespace {

// Little-endian or big-endian writer of test images.
struct Image {
    bool big = false;
    Bytes b;
    void u8(uint8_t v) { b.push_back(v); }
    void u16(uint16_t v) {
        if (big) u8(uint8_t(v >> 8)), u8(uint8_t(v));
        else u8(uint8_t(v)), u8(uint8_t(v >> 8));
    }
    void u32(uint32_t v) {
        if (big) u16(uint16_t(v >> 16)), u16(uint16_t(v));
        else u16(uint16_t(v)), u16(uint16_t(v >> 16));
    }
    void raw(const Bytes& d) { b.insert(b.end(), d.begin(), d.end()); }
    void pad() { while (b.size() % 4) b.push_back(0); }
    void pcap_header(uint32_t magic, uint32_t snaplen, uint32_t link) {
        u32(magic), u16(2), u16(4), u32(0), u32(0), u32(snaplen), u32(link);
    }
    void pcap_record(uint32_t sec, uint32_t frac, const Bytes& data, uint32_t len) {
        u32(sec), u32(frac), u32(uint32_t(data.size())), u32(len), raw(data);
    }
    // pcapng: a block = type, length, body, length.
    size_t open(uint32_t type) {
        const size_t at = b.size();
        u32(type), u32(0);
        return at;
    }
    void close(size_t at) {
        pad();
        const uint32_t length = uint32_t(b.size() - at + 4);
        u32(length);
        Image l{big, {}};
        l.u32(length);
        std::memcpy(b.data() + at + 4, l.b.data(), 4);
    }
    void shb() {
        const size_t at = open(pcapng::kSectionHeaderBlock);
        u32(pcapng::kByteOrderMagic), u16(1), u16(0), u32(0xffffffff), u32(0xffffffff);
        close(at);
    }
    void idb(uint16_t link, uint32_t snaplen, int tsresol = -1, const std::string& name = "") {
        const size_t at = open(pcapng::kInterfaceDescriptionBlock);
        u16(link), u16(0), u32(snaplen);
        if (tsresol >= 0) u16(pcapng::kIfTsresol), u16(1), u8(uint8_t(tsresol)), pad();
        if (!name.empty()) u16(pcapng::kIfName), u16(uint16_t(name.size())), raw(Bytes(name.begin(), name.end())), pad();
        u16(0), u16(0);
        close(at);
    }
    void epb(uint32_t interface, uint64_t units, const Bytes& data, uint32_t len) {
        const size_t at = open(pcapng::kEnhancedPacketBlock);
        u32(interface), u32(uint32_t(units >> 32)), u32(uint32_t(units)), u32(uint32_t(data.size())), u32(len);
        raw(data);
        close(at);
    }
    void spb(const Bytes& data, uint32_t len) {
        const size_t at = open(pcapng::kSimplePacketBlock);
        u32(len), raw(data);
        close(at);
    }
    void unknown() {
        const size_t at = open(0x00000bad);
        u32(0xdeadbeef);
        close(at);
    }
};

Bytes payload(size_t n, uint8_t seed) {
    Bytes d(n);
    for (size_t i = 0; i < n; ++i) d[i] = uint8_t(seed + i * 7);
    return d;
}

// A source that is not memory (the reader goes through its buffer and refills).
class PreadOnly final : public ByteSource {
public:
    explicit PreadOnly(const Bytes& b) : m_(b) {}
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override { return m_.read_at(dst, n, offset); }
    uint64_t size() const override { return m_.size(); }

private:
    MemorySource m_;
};

struct Got {
    uint64_t ts_ns;
    uint32_t caplen, len, interface;
    Bytes data;
};

std::vector<Got> read_all(const Bytes& img, std::string* error, size_t buffer = 1u << 20, bool pread_only = false) {
    MemorySource mem(img);
    PreadOnly slow(img);
    const ByteSource& src = pread_only ? static_cast<const ByteSource&>(slow) : mem;
    auto h = read_header(src);
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().message);
    std::vector<Got> out;
    if (!h) return out;
    CaptureReader rd(src, h.value(), buffer);
    Record r;
    while (rd.next(r)) out.push_back({r.ts_ns, r.caplen, r.len, r.interface, Bytes(r.data, r.data + r.caplen)});
    *error = rd.error();
    return out;
}

// What libpcap (tcpdump's reader) makes of the same bytes, nanosecond precision.
std::vector<Got> libpcap_all(const Bytes& img, std::string* error) {
    char path[] = "/tmp/lc-format-test.XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, img.data(), img.size()), ssize_t(img.size()));
    close(fd);
    char err[PCAP_ERRBUF_SIZE] = {};
    std::vector<Got> out;
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
    unlink(path);
    if (p == nullptr) {
        *error = err;
        return out;
    }
    pcap_pkthdr* h;
    const u_char* d;
    int rc;
    while ((rc = pcap_next_ex(p, &h, &d)) == 1)
        out.push_back({uint64_t(h->ts.tv_sec) * 1000000000u + uint64_t(h->ts.tv_usec), h->caplen, h->len, 0,
                       Bytes(d, d + h->caplen)});
    *error = rc == -1 ? pcap_geterr(p) : "";
    pcap_close(p);
    return out;
}

void expect_same(const std::vector<Got>& a, const std::vector<Got>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].ts_ns, b[i].ts_ns) << i;
        EXPECT_EQ(a[i].caplen, b[i].caplen) << i;
        EXPECT_EQ(a[i].len, b[i].len) << i;
        EXPECT_EQ(a[i].data, b[i].data) << i;
    }
}

}  // namespace

TEST(CaptureHeader, PcapNanoMicroBothByteOrders) {
    for (bool big : {false, true})
        for (uint32_t magic : {pcap::kMagicNanosecond, pcap::kMagicMicrosecond}) {
            Image i{big, {}};
            i.pcap_header(magic, 4096, 1);
            auto h = parse_header(i.b);
            ASSERT_TRUE(h.ok()) << h.error().message;
            EXPECT_EQ(h->kind, FileKind::pcap);
            EXPECT_EQ(h->swapped, big);
            EXPECT_EQ(h->nanosecond, magic == pcap::kMagicNanosecond);
            EXPECT_EQ(h->snaplen, 4096u);
            EXPECT_EQ(h->data_begin, 24u);
        }
}

TEST(CaptureHeader, ClearErrors) {
    Image i;
    i.pcap_header(pcap::kMagicNanosecond, 4096, 1);
    EXPECT_EQ(parse_header(Bytes()).error().message, "empty file");
    EXPECT_EQ(parse_header(Bytes(i.b.begin(), i.b.begin() + 10)).error().message,
              "shorter than a pcap file header (10 of 24 bytes)");
    Bytes bad = i.b;
    bad[0] = 0x11;
    EXPECT_EQ(parse_header(bad).error().message, "not a pcap or pcapng file (magic 0xa1b23c11)");
    Bytes v3 = i.b;
    v3[4] = 3;
    EXPECT_EQ(parse_header(v3).error().message, "unsupported pcap version 3.4");
    Image ng;
    ng.shb();
    Bytes bom = ng.b;
    bom[8] = 0;
    EXPECT_EQ(parse_header(bom).error().message, "pcapng byte-order magic 0x1a2b3c00");
    EXPECT_EQ(parse_header(ng.b)->kind, FileKind::pcapng);
    EXPECT_EQ(parse_header(ng.b)->data_begin, ng.b.size());
}

TEST(CaptureReader, ReadsAcrossBufferBoundaries) {
    Image i;
    i.pcap_header(pcap::kMagicNanosecond, 2000, 1);
    for (uint32_t k = 0; k < 300; ++k) i.pcap_record(1, k, payload(20 + (k * 37) % 900, uint8_t(k)), 2000);
    for (bool pread_only : {false, true}) {
        std::string err;
        const auto recs = read_all(i.b, &err, 1, pread_only);  // smallest buffer: grows to one record
        EXPECT_EQ(err, "");
        ASSERT_EQ(recs.size(), 300u);
        for (uint32_t k = 0; k < 300; ++k) {
            EXPECT_EQ(recs[k].ts_ns, 1000000000u + k);
            EXPECT_EQ(recs[k].data, payload(20 + (k * 37) % 900, uint8_t(k)));
        }
    }
}

TEST(CaptureReader, TruncatedAndCorruptNameTheOffset) {
    Image i;
    i.pcap_header(pcap::kMagicNanosecond, 2000, 1);
    for (uint32_t k = 0; k < 3; ++k) i.pcap_record(1, k, payload(100, 0), 100);
    const size_t rec = 116;
    std::string err;
    EXPECT_EQ(read_all(Bytes(i.b.begin(), i.b.end() - 5), &err).size(), 2u);
    EXPECT_EQ(err, "truncated record at offset " + std::to_string(24 + 2 * rec) + " (" + std::to_string(rec - 5) +
                       " bytes left at the end of the file)");
    Bytes huge = i.b;
    const uint32_t big = 300000;
    std::memcpy(huge.data() + 24 + rec + 8, &big, 4);
    EXPECT_EQ(read_all(huge, &err).size(), 1u);
    EXPECT_EQ(err, "corrupt record at offset " + std::to_string(24 + rec) + ": caplen 300000 > the maximum 262144");
    // The zero-filled tail a crash leaves is not a run of empty packets.
    Bytes zeros = i.b;
    zeros.resize(zeros.size() + 4096, 0);
    EXPECT_EQ(read_all(zeros, &err).size(), 3u);
    EXPECT_EQ(err, "zero-filled record header at offset " + std::to_string(24 + 3 * rec) +
                       " (a file system's tail after a crash, not a packet)");
}

// what Wireshark and tcpdump read is read the same way.
TEST(CaptureReader, PcapVariantsAsLibpcapReadsThem) {
    for (bool big : {false, true})
        for (uint32_t magic : {pcap::kMagicNanosecond, pcap::kMagicMicrosecond}) {
            Image i{big, {}};
            // FCS length bits above the link type (LINKTYPE_ETHERNET with a 4-byte FCS).
            i.pcap_header(magic, 128, 0x30000001);
            i.pcap_record(10, 1, payload(60, 1), 64);
            i.pcap_record(10, 2, payload(200, 2), 300);  // caplen > snaplen: first 128 bytes
            i.pcap_record(10, 3, payload(60, 3), 0);     // len = 0
            i.pcap_record(10, 4, payload(90, 4), 80);    // caplen > len
            i.pcap_record(11, 5, payload(0, 5), 0);      // empty packet, not a zero fill
            i.pcap_record(12, 6, payload(60, 6), 60);    // still in step after all of them
            std::string err, lerr;
            const auto ours = read_all(i.b, &err);
            EXPECT_EQ(err, "");
            const auto theirs = libpcap_all(i.b, &lerr);
            EXPECT_EQ(lerr, "");
            expect_same(ours, theirs);
            ASSERT_EQ(ours.size(), 6u);
            EXPECT_EQ(ours[1].caplen, 128u);
            EXPECT_EQ(ours[2].len, 0u);
            auto h = parse_header(i.b);
            EXPECT_EQ(link_type(h->link_field), 1);
        }
}

TEST(CaptureReader, PcapngBlocksInterfacesAndResolutions) {
    Image i;
    i.shb();
    i.idb(1, 0, 9, "p0:0");       // ns, no snaplen
    i.unknown();                  // skipped
    i.idb(1, 64, -1, "p0:1");     // default resolution: µs; snaplen 64
    i.epb(0, 1700000000123456789ull, payload(60, 1), 60);
    i.epb(1, 1700000000123456ull, payload(100, 2), 100);  // cut to 64 as libpcap does
    i.spb(payload(60, 3), 60);
    i.epb(0, 1700000001000000000ull, payload(61, 4), 61);  // padding
    std::string err, lerr;
    const auto ours = read_all(i.b, &err, 64, true);
    EXPECT_EQ(err, "");
    ASSERT_EQ(ours.size(), 4u);
    EXPECT_EQ(ours[0].ts_ns, 1700000000123456789ull);
    EXPECT_EQ(ours[1].ts_ns, 1700000000123456000ull);
    EXPECT_EQ(ours[1].caplen, 64u);
    EXPECT_EQ(ours[1].interface, 1u);
    EXPECT_EQ(ours[2].ts_ns, 0u);  // an SPB has no time
    EXPECT_EQ(ours[3].data, payload(61, 4));
    // libpcap agrees on the packets with a time (it cannot mix resolutions: check EPBs on if 0).
    Image one;
    one.shb();
    one.idb(1, 0, 9);
    one.epb(0, 1700000000123456789ull, payload(60, 1), 60);
    one.spb(payload(60, 3), 60);
    one.epb(0, 1700000001000000000ull, payload(61, 4), 61);
    expect_same(read_all(one.b, &err), libpcap_all(one.b, &lerr));
    EXPECT_EQ(lerr, "");
}

TEST(CaptureReader, PcapngSectionsInEitherByteOrder) {
    Image a;  // little-endian section, then a big-endian one with its own interfaces
    a.shb();
    a.idb(1, 0, 9, "first");
    a.epb(0, 5, payload(60, 1), 60);
    Image b{true, {}};
    b.shb();
    b.idb(1, 0, 6, "second-0");
    b.idb(1, 0, 9, "second-1");
    b.epb(1, 7, payload(60, 2), 60);
    b.epb(0, 8, payload(60, 3), 60);
    Bytes img = a.b;
    img.insert(img.end(), b.b.begin(), b.b.end());
    MemorySource src(img);
    auto h = read_header(src);
    ASSERT_TRUE(h.ok());
    CaptureReader rd(src, h.value());
    Record r;
    ASSERT_TRUE(rd.next(r)) << rd.error();
    EXPECT_EQ(r.ts_ns, 5u);
    ASSERT_TRUE(rd.next(r)) << rd.error();
    EXPECT_EQ(r.ts_ns, 7u);
    EXPECT_EQ(r.interface, 1u);
    EXPECT_EQ(rd.interfaces()[1].name, "second-1");
    ASSERT_TRUE(rd.next(r));
    EXPECT_EQ(r.ts_ns, 8000u);
    EXPECT_FALSE(rd.next(r));
    EXPECT_EQ(rd.error(), "");
    EXPECT_EQ(rd.sections(), 2u);
    EXPECT_TRUE(rd.layout_after_data());  // a range read could not start in the second section
}

TEST(CaptureReader, PcapngDamageNamesTheOffset) {
    Image i;
    i.shb();
    i.idb(1, 0, 9);
    const size_t epb = i.b.size();
    i.epb(0, 1, payload(60, 1), 60);
    std::string err;
    Bytes trailer = i.b;
    trailer[trailer.size() - 4] ^= 4;
    read_all(trailer, &err);
    EXPECT_EQ(err, "corrupt block at offset " + std::to_string(epb) + ": its trailing length " +
                       std::to_string((i.b.size() - epb) ^ 4) + " differs from its length " +
                       std::to_string(i.b.size() - epb));
    Bytes iface = i.b;
    iface[epb + 8] = 3;
    read_all(iface, &err);
    EXPECT_EQ(err, "corrupt packet block at offset " + std::to_string(epb) +
                       ": interface 3 is not described (1 in this section)");
    Bytes odd = i.b;
    odd[epb + 4] = 0x61;
    read_all(odd, &err);
    EXPECT_NE(err.find("corrupt block at offset " + std::to_string(epb) + ": length 97"), std::string::npos);
    read_all(Bytes(i.b.begin(), i.b.end() - 3), &err);
    EXPECT_EQ(err, "truncated block at offset " + std::to_string(epb) + " (" + std::to_string(i.b.size() - 3 - epb) +
                       " bytes left at the end of the file)");
}

TEST(CaptureReader, RangesSeekPastTheInterfaces) {
    Image i;
    i.shb();
    i.idb(1, 0, 6);
    std::vector<uint64_t> at;
    for (uint32_t k = 0; k < 5; ++k) {
        at.push_back(i.b.size());
        i.epb(0, 1000 + k, payload(60, uint8_t(k)), 60);
    }
    MemorySource src(i.b);
    auto h = read_header(src);
    ASSERT_TRUE(h.ok());
    CaptureReader rd(src, h.value(), at[3], at[4]);
    Record r;
    ASSERT_TRUE(rd.next(r)) << rd.error();
    EXPECT_EQ(r.ts_ns, 1003000u);  // the interface's µs resolution was read first
    EXPECT_FALSE(rd.next(r));
    rd.seek(at[1], at[1] + 10);
    EXPECT_FALSE(rd.next(r));
    EXPECT_EQ(rd.problem(), CaptureReader::Problem::range_mismatch);
}

TEST(CaptureWriter, PcapngOneInterfacePerSourceThatLibpcapReads) {
    struct Sink final : ByteSink {
        Bytes b;
        Status write(const uint8_t* d, size_t n) override {
            b.insert(b.end(), d, d + n);
            return {};
        }
    } sink;
    CaptureWriter w(sink, FileKind::pcapng, 64);  // a small buffer: many flushes
    ASSERT_TRUE(w.begin(0, 1, "test").ok());
    pcapng::InterfaceInfo a{"p0:0", "port p0 queue 0", 9000, 1}, b{"p0:1", "port p0 queue 1", 9000, 1};
    const uint32_t ia = w.add_interface(a).value();
    ASSERT_TRUE(w.write(ia, 1000, 60, 60, payload(60, 1).data()).ok());
    const uint32_t ib = w.add_interface(b).value();
    ASSERT_TRUE(w.write(ib, 2000, 61, 70, payload(61, 2).data()).ok());
    ASSERT_TRUE(w.write(ia, 3000, 62, 62, payload(62, 3).data()).ok());
    ASSERT_TRUE(w.flush().ok());
    MemorySource src(sink.b);
    auto h = read_header(src);
    ASSERT_TRUE(h.ok());
    CaptureReader rd(src, h.value());
    Record r;
    std::vector<uint32_t> ids;
    while (rd.next(r)) ids.push_back(r.interface);
    EXPECT_EQ(rd.error(), "");
    EXPECT_EQ(ids, (std::vector<uint32_t>{0, 1, 0}));
    ASSERT_EQ(rd.interfaces().size(), 2u);
    EXPECT_EQ(rd.interfaces()[1].name, "p0:1");
    EXPECT_EQ(rd.interfaces()[1].description, "port p0 queue 1");
    std::string err, lerr;
    expect_same(read_all(sink.b, &err), libpcap_all(sink.b, &lerr));
    EXPECT_EQ(lerr, "");
}

TEST(CaptureReader, StrictModeRefusesWhatLinecapdNeverWrites) {
    // Recovery and verify hold the daemon's own files to what it writes: such a record is
    // the garbage a crash leaves (the store reads it as libpcap does: the test above).
    const std::pair<const char*, std::string> cases[] = {
        {"caplen > snaplen", "caplen 200 > snaplen 128"},
        {"len 0", "original length 0"},
        {"caplen > len", "caplen 90 > original length 80"},
        {"fraction", "timestamp fraction 1000000000 out of range"},
    };
    for (const auto& [what, message] : cases) {
        Image i;
        i.pcap_header(pcap::kMagicNanosecond, 128, 1);
        i.pcap_record(10, 1, payload(60, 1), 64);
        const std::string w = what;
        if (w == "caplen > snaplen") i.pcap_record(10, 2, payload(200, 2), 300);
        if (w == "len 0") i.pcap_record(10, 3, payload(60, 3), 0);
        if (w == "caplen > len") i.pcap_record(10, 4, payload(90, 4), 80);
        if (w == "fraction") i.pcap_record(10, 1000000000, payload(60, 5), 60);
        MemorySource src(i.b);
        CaptureReader rd(src, parse_header(i.b).value());
        rd.set_strict(true);
        Record r;
        EXPECT_TRUE(rd.next(r)) << what;
        EXPECT_FALSE(rd.next(r)) << what;
        EXPECT_EQ(rd.error(), "corrupt record at offset 100: " + message) << what;
    }
}
