#include "packet/packet_keys.hpp"

#include <cstring>

namespace linecap {
namespace {

using namespace wire;

inline void add_proto(PacketKeys& k, uint8_t v) {
    for (unsigned i = 0; i < k.n_protos; ++i)
        if (k.protos[i] == v) return;
    if (k.n_protos < PacketKeys::kMaxProtos) k.protos[k.n_protos++] = v;
}
inline void add_port(PacketKeys& k, uint16_t v) {
    for (unsigned i = 0; i < k.n_ports; ++i)
        if (k.ports[i] == v) return;
    if (k.n_ports < PacketKeys::kMaxPorts) k.ports[k.n_ports++] = v;
}
inline void add_addr4(PacketKeys& k, uint32_t v) {
    if (k.n_addr4 < PacketKeys::kMaxAddr4) k.addr4[k.n_addr4++] = v;
}
inline void add_addr6(PacketKeys& k, const uint8_t* p) {
    if (k.n_addr6 < PacketKeys::kMaxAddr6) std::memcpy(k.addr6[k.n_addr6++].data(), p, 16);
}

// Ports of a TCP/UDP/SCTP header at frame offset `off`.
inline void add_ports_at(PacketKeys& k, const uint8_t* f, uint32_t caplen, uint64_t off) {
    if (off + 2 <= caplen) add_port(k, be16(f + off));
    if (off + 4 <= caplen) add_port(k, be16(f + off + 2));
}

void ipv4(const uint8_t* f, uint32_t caplen, uint32_t l3, PacketKeys& k) {
    if (l3 + 10 > caplen) return;
    const uint8_t proto = f[l3 + 9];
    add_proto(k, proto);
    if (l3 + 16 <= caplen) add_addr4(k, be32(f + l3 + 12));
    if (l3 + 20 <= caplen) add_addr4(k, be32(f + l3 + 16));
    if (ipv4_has_ports(f + l3)) add_ports_at(k, f, caplen, uint64_t{l3} + 4u * (f[l3] & 0x0f));
}

void ipv6(const uint8_t* f, uint32_t caplen, uint32_t l3, PacketKeys& k) {
    if (l3 + 7 > caplen) return;
    const uint8_t nh = f[l3 + 6];
    add_proto(k, nh);
    if (l3 + 24 <= caplen) add_addr6(k, f + l3 + 8);
    if (l3 + 40 <= caplen) add_addr6(k, f + l3 + 24);
    if (has_ports(nh)) add_ports_at(k, f, caplen, uint64_t{l3} + 40);
    if (nh == 44 && l3 + 41 <= caplen) add_proto(k, f[l3 + 40]);

    // A proper walk over the common extension headers.
    const Ipv6UpperLayer upper = ipv6_upper_layer(f, caplen, l3);
    if (!upper.complete) return;
    add_proto(k, upper.proto);
    if (upper.first_fragment && has_ports(upper.proto)) add_ports_at(k, f, caplen, upper.offset);
}

}  // namespace

Ipv6UpperLayer ipv6_upper_layer(const uint8_t* f, uint32_t caplen, uint32_t l3) {
    Ipv6UpperLayer u;
    if (uint64_t{l3} + 7 > caplen) return u;
    uint8_t cur = f[l3 + 6];
    uint64_t off = uint64_t{l3} + 40;
    for (int i = 0; i < 8; ++i) {
        if (cur == 0 || cur == 43 || cur == 60 || cur == 135) {  // hop-by-hop, routing, dstopts, mobility
            if (off + 2 > caplen) return u;
            const uint8_t next = f[off];
            off += (uint64_t{f[off + 1]} + 1) * 8;
            cur = next;
        } else if (cur == 51) {  // AH: length in 4-octet units minus 2
            if (off + 2 > caplen) return u;
            const uint8_t next = f[off];
            off += (uint64_t{f[off + 1]} + 2) * 4;
            cur = next;
        } else if (cur == 44) {  // fragment
            if (off + 4 > caplen) return u;
            const uint8_t next = f[off];
            if ((be16(f + off + 2) & 0xfff8) != 0) u.first_fragment = false;
            off += 8;
            cur = next;
        } else {
            break;
        }
    }
    u.proto = cur;
    u.offset = off;
    u.complete = true;
    return u;
}

bool flow_key_walked(const uint8_t* f, uint32_t caplen, FlowKey& k) {
    using namespace wire;
    uint16_t type = 0;
    uint32_t l3 = 0;
    if (!link_layer(f, caplen, type, l3)) return false;
    uint32_t ports = 0;  // as loaded: source in the first two bytes, destination in the next
    if (type == kEtherIPv4) {
        if (uint64_t{l3} + 20 > caplen) return false;
        const uint8_t* ip = f + l3;
        const uint64_t l4 = uint64_t{l3} + 4u * (ip[0] & 0x0f);
        if (ipv4_has_ports(ip) && l4 + 4 <= caplen) ports = load32(f + l4);
        ipv4_flow_key(ip, ports, k);
        return true;
    }
    if (type != kEtherIPv6 || uint64_t{l3} + 40 > caplen) return false;
    struct Head {  // the IPv6 key's first 8 bytes
        uint8_t version, proto;
        uint16_t port_lo, port_hi, zero;
    };
    Head h{};
    h.version = 6;
    const Ipv6UpperLayer upper = ipv6_upper_layer(f, caplen, l3);
    h.proto = upper.complete ? upper.proto : f[l3 + 6];
    if (upper.complete && upper.first_fragment && has_ports(upper.proto) && upper.offset + 4 <= caplen)
        ports = load32(f + upper.offset);
    const uint16_t sport = static_cast<uint16_t>(ports), dport = static_cast<uint16_t>(ports >> 16);
    const uint64_t src[2] = {load64(f + l3 + 8), load64(f + l3 + 16)};
    const uint64_t dst[2] = {load64(f + l3 + 24), load64(f + l3 + 32)};
    const bool src_lower = src[0] != dst[0] ? src[0] < dst[0] : src[1] != dst[1] ? src[1] < dst[1] : sport <= dport;
    h.port_lo = src_lower ? sport : dport;
    h.port_hi = src_lower ? dport : sport;
    const uint64_t* lo = src_lower ? src : dst;
    const uint64_t* hi = src_lower ? dst : src;
    static_assert(sizeof(Head) == 8);
    k.words = {std::bit_cast<uint64_t>(h), lo[0], lo[1], hi[0], hi[1]};
    k.size = FlowKey::kIpv6Size;
    return true;
}

void extract_keys(const uint8_t* f, uint32_t caplen, PacketKeys& k) {
    k.clear();
    uint16_t type = 0;
    uint32_t l3 = 0;
    if (!link_layer(f, caplen, type, l3)) return;
    switch (type) {
        case kEtherIPv4: ipv4(f, caplen, l3, k); break;
        case kEtherIPv6: ipv6(f, caplen, l3, k); break;
        case kEtherArp:
        case kEtherRarp:
            if (l3 + 18 <= caplen) add_addr4(k, be32(f + l3 + 14));
            if (l3 + 28 <= caplen) add_addr4(k, be32(f + l3 + 24));
            break;
        default: break;
    }
}

std::string link_type_problem(const format::Interface& interface, uint64_t offset) {
    if (format::link_type(interface.link_field) == pcap::kLinktypeEthernet) return {};
    return "packet at offset " + std::to_string(offset) + ": link type " +
           std::to_string(format::link_type(interface.link_field)) + " is not supported (only Ethernet, 1)";
}

}  // namespace linecap
