// Community ID v1 (Corelight's community-id-spec): a direction-free flow identifier that
// Zeek, Suricata, Arkime, Security Onion and Wireshark log, so an analyst can pivot from
// an alert to its packets by one string.
//
//   sha1(seed(2) . saddr . daddr . proto(1) . 0(1) . sport(2) . dport(2))  → "1:" base64
//
// with the endpoints ordered so that the smaller (address, port) comes first, all in
// network byte order. TCP, UDP and SCTP hash their ports; ICMP and ICMPv6 hash
// (type, counterpart type) for the request/reply pairs (echo, timestamp, information,
// router solicitation/advertisement, address mask; ICMPv6 echo, router and neighbour
// discovery, MLD query/report, who-are-you, home agent discovery) and otherwise
// (type, code) without reordering — a one-way message; every other IP protocol hashes
// the addresses and protocol alone. The layout walk is the index's (packet/packet_keys.hpp):
// Ethernet with up to four VLAN tags (the tags are not part of the ID), IPv4 (options
// skipped), IPv6 (extension headers skipped, the final protocol counts).
//
// A packet has no Community ID when it is not IPv4/IPv6, when it is truncated before the
// fields the ID needs, or when it is a non-first fragment of a protocol with ports (the
// ports are not in it; the spec leaves reassembly to the monitor).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace linecap {

using CommunityIdDigest = std::array<uint8_t, 20>;

// One packet's flow tuple, as it appears in the packet (not yet ordered).
struct FlowTuple {
    bool ipv6 = false;
    std::array<uint8_t, 16> src{};  // IPv4: the first 4 bytes
    std::array<uint8_t, 16> dst{};
    uint8_t proto = 0;
    bool has_ports = false;  // TCP, UDP, SCTP, ICMP, ICMPv6
    uint16_t sport = 0;      // ICMP: type
    uint16_t dport = 0;      // ICMP: code
};

std::optional<FlowTuple> flow_tuple(const uint8_t* frame, uint32_t caplen);

CommunityIdDigest community_id_digest(const FlowTuple& tuple, uint16_t seed = 0);
std::optional<CommunityIdDigest> community_id_digest(const uint8_t* frame, uint32_t caplen, uint16_t seed = 0);

// "1:" + base64 of the digest.
std::string format_community_id(const CommunityIdDigest& digest);

// Parses "1:<28 base64 characters>". Errors name what is wrong.
Result<CommunityIdDigest> parse_community_id(std::string_view text);

}  // namespace linecap
