// Stenographer's query language, as Debian's stenoread and stenocurl send it (POST /query),
// compiled to this store's query: a libpcap filter and a half-open time range.
//
//   host 8.8.8.8 | host 2001:db8::1        net 10.0.0.0/8 | net 10.0.0.0 mask 255.0.0.0
//   port 80 (TCP or UDP)                   ip proto 6 (IPv4 or IPv6) | tcp | udp | icmp
//   vlan 100 (the outer or inner 802.1Q tag)   mpls 17 (the outermost label, untagged or behind one tag)
//   before|after 2012-11-03T11:05:00Z      before|after 45m ago (integer s, m, h; "1h30m")
//   and / &&, or / || — equal precedence, evaluated left to right; parentheses group
//
// Times are exact here ([after, before) to the nanosecond, the capture files' own stamps);
// Stenographer's own are whole files and a minute of slack. Bounds that leave no time
// match nothing (an empty range); a network keeps only the bits of its prefix or mask
// (net 10.1.2.3/8 is 10.0.0.0/8), as in Stenographer. A time may only constrain the
// whole query (a term of the top-level "and" chain): "host a or after T" has no single range
// and is refused, as are words Stenographer does not know (not, hostnames).
// The server applies the filter through VLAN tags, as Stenographer does (through_vlan_tags).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace linecap::api {

struct StenoQuery {
    std::string filter;  // libpcap syntax; empty: every packet
    uint64_t from_ns = 0;
    uint64_t to_ns = UINT64_MAX;
};

// NOW_NS anchors "ago". Errors name the word and its position ("at character 12").
Result<StenoQuery> compile_steno_query(std::string_view query, uint64_t now_ns);

// Stenographer reads a packet's addresses, ports and protocol through up to two VLAN
// tags (stenotype walks the 802.1Q headers), where a libpcap expression sees only an
// untagged frame's: "host A" does not match a tagged packet. FILTER as it applies to the
// frame untagged, behind one tag, or behind two:
//   (F) or (vlan and ((F) or (vlan and (F))))
// libpcap's "vlan" moves every later offset past the tag, so each copy of F reads the
// headers behind the tags checked before it. The store's index plan of the result is
// F's (its keys are read through the tags as well). "" stays "" (every packet).
std::string through_vlan_tags(const std::string& filter);

}  // namespace linecap::api
