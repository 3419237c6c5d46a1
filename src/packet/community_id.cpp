#include "packet/community_id.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

#include "packet/packet_keys.hpp"

namespace linecap {
namespace {

using namespace wire;  // EtherTypes, protocol numbers, be16: packet_keys.hpp's
constexpr uint8_t kIcmp = 1, kIcmp6 = 58;

// The request/reply counterparts of ICMP and ICMPv6 types (the spec takes them from Zeek);
// -1: a one-way message.
int icmp4_counterpart(uint8_t type) {
    switch (type) {
        case 8: return 0;    // echo request ↔ reply
        case 0: return 8;
        case 13: return 14;  // timestamp
        case 14: return 13;
        case 15: return 16;  // information
        case 16: return 15;
        case 10: return 9;   // router solicitation ↔ advertisement
        case 9: return 10;
        case 17: return 18;  // address mask
        case 18: return 17;
        default: return -1;
    }
}

int icmp6_counterpart(uint8_t type) {
    switch (type) {
        case 128: return 129;  // echo request ↔ reply
        case 129: return 128;
        case 133: return 134;  // router solicitation ↔ advertisement
        case 134: return 133;
        case 135: return 136;  // neighbour solicitation ↔ advertisement
        case 136: return 135;
        case 130: return 131;  // MLD query ↔ report
        case 131: return 130;
        case 139: return 140;  // who-are-you request ↔ reply
        case 140: return 139;
        case 144: return 145;  // home agent address discovery request ↔ reply
        case 145: return 144;
        default: return -1;
    }
}

// Ports (or ICMP type/code) of the upper-layer header at `off`; false when truncated.
bool read_ports(const uint8_t* f, uint32_t caplen, uint64_t off, FlowTuple& t) {
    if (has_ports(t.proto)) {
        if (off + 4 > caplen) return false;
        t.sport = be16(f + off);
        t.dport = be16(f + off + 2);
        t.has_ports = true;
    } else if (t.proto == kIcmp || t.proto == kIcmp6) {
        if (off + 2 > caplen) return false;
        t.sport = f[off];
        t.dport = f[off + 1];
        t.has_ports = true;
    }
    return true;
}

}  // namespace

std::optional<FlowTuple> flow_tuple(const uint8_t* f, uint32_t caplen) {
    uint16_t type = 0;
    uint32_t l3 = 0;
    if (!link_layer(f, caplen, type, l3)) return std::nullopt;
    FlowTuple t;
    if (type == kEtherIPv4) {
        if (uint64_t{l3} + 20 > caplen) return std::nullopt;
        t.proto = f[l3 + 9];
        std::memcpy(t.src.data(), f + l3 + 12, 4);
        std::memcpy(t.dst.data(), f + l3 + 16, 4);
        const bool first_fragment = (be16(f + l3 + 6) & 0x1fff) == 0;
        const bool needs_upper = has_ports(t.proto) || t.proto == kIcmp;
        if (needs_upper && !first_fragment) return std::nullopt;
        if (!read_ports(f, caplen, uint64_t{l3} + 4u * (f[l3] & 0x0f), t)) return std::nullopt;
        return t;
    }
    if (type == kEtherIPv6) {
        if (uint64_t{l3} + 40 > caplen) return std::nullopt;
        t.ipv6 = true;
        std::memcpy(t.src.data(), f + l3 + 8, 16);
        std::memcpy(t.dst.data(), f + l3 + 24, 16);
        const Ipv6UpperLayer upper = ipv6_upper_layer(f, caplen, l3);
        if (!upper.complete) return std::nullopt;
        t.proto = upper.proto;
        const bool needs_upper = has_ports(t.proto) || t.proto == kIcmp6;
        if (needs_upper && !upper.first_fragment) return std::nullopt;
        if (!read_ports(f, caplen, upper.offset, t)) return std::nullopt;
        return t;
    }
    return std::nullopt;
}

CommunityIdDigest community_id_digest(const FlowTuple& in, uint16_t seed) {
    FlowTuple t = in;
    const size_t alen = t.ipv6 ? 16 : 4;
    bool one_way = false;
    if (t.has_ports && (t.proto == kIcmp || t.proto == kIcmp6)) {
        const int other = t.proto == kIcmp ? icmp4_counterpart(static_cast<uint8_t>(t.sport))
                                           : icmp6_counterpart(static_cast<uint8_t>(t.sport));
        if (other < 0) one_way = true;  // (type, code), kept in packet order
        else t.dport = static_cast<uint16_t>(other);
    }
    const int cmp = std::memcmp(t.src.data(), t.dst.data(), alen);
    const bool ordered = cmp < 0 || (cmp == 0 && t.sport < t.dport);
    if (!one_way && !ordered) {
        std::swap(t.src, t.dst);
        std::swap(t.sport, t.dport);
    }
    uint8_t buf[2 + 16 + 16 + 2 + 4];
    size_t n = 0;
    buf[n++] = static_cast<uint8_t>(seed >> 8);
    buf[n++] = static_cast<uint8_t>(seed);
    std::memcpy(buf + n, t.src.data(), alen);
    n += alen;
    std::memcpy(buf + n, t.dst.data(), alen);
    n += alen;
    buf[n++] = t.proto;
    buf[n++] = 0;
    if (t.has_ports) {
        buf[n++] = static_cast<uint8_t>(t.sport >> 8);
        buf[n++] = static_cast<uint8_t>(t.sport);
        buf[n++] = static_cast<uint8_t>(t.dport >> 8);
        buf[n++] = static_cast<uint8_t>(t.dport);
    }
    CommunityIdDigest d{};
    SHA1(buf, n, d.data());
    return d;
}

std::optional<CommunityIdDigest> community_id_digest(const uint8_t* frame, uint32_t caplen, uint16_t seed) {
    const auto t = flow_tuple(frame, caplen);
    if (!t) return std::nullopt;
    return community_id_digest(*t, seed);
}

std::string format_community_id(const CommunityIdDigest& d) {
    unsigned char b64[32] = {};
    const int n = EVP_EncodeBlock(b64, d.data(), static_cast<int>(d.size()));
    return "1:" + std::string(reinterpret_cast<const char*>(b64), static_cast<size_t>(n));
}

Result<CommunityIdDigest> parse_community_id(std::string_view text) {
    const std::string shown = text.size() > 64 ? std::string(text.substr(0, 64)) + "…" : std::string(text);
    if (!text.starts_with("1:"))
        return runtime_error("community id '" + shown + "': expected version 1 (\"1:\" followed by base64)");
    const std::string_view b64 = text.substr(2);
    if (b64.size() != 28 || b64[27] != '=' ||
        !std::all_of(b64.begin(), b64.end() - 1, [](char c) {
            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        }))
        return runtime_error("community id '" + shown + "': expected 28 base64 characters after \"1:\" (a SHA-1)");
    unsigned char out[21] = {};
    // EVP_DecodeBlock keeps the padding's zero byte: 28 characters → 21 bytes.
    if (EVP_DecodeBlock(out, reinterpret_cast<const unsigned char*>(b64.data()), 28) != 21)
        return runtime_error("community id '" + shown + "': not valid base64");
    CommunityIdDigest d{};
    std::memcpy(d.data(), out, d.size());
    return d;
}

}  // namespace linecap
