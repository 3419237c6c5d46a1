// The body of POST /api/v1/holds: one JSON object, checked before anything is written.
//
//   {"reason": "case 4711",                       required
//    "from": TIME, "to": TIME,                    as /api/v1/packets takes them
//    "filter": "host 10.0.0.5", "community_id": "1:…",
//    "alert": "EVE or Zeek JSON lines",           instead of from/to/filter/community_id
//    "margin": 60,                                seconds, with "alert" (default 60)
//    "expires": "30d" | TIME}                     default: until released
//
// Unknown keys, values of the wrong type and a body that is not one JSON object are
// refused with one line naming what is wrong (a typo must not make a wider hold).
#pragma once

#include <cstdint>
#include <string>

#include "store/holds.hpp"
#include "util/result.hpp"

namespace linecap::api {

// Fills `request` (whose query already names the store) from the body. Errors are config
// errors (400).
Status parse_hold_request(const std::string& body, uint64_t now_ns, store::HoldRequest& request);

}  // namespace linecap::api
