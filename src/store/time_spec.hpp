// Command-line times: ISO 8601 or Unix seconds, to nanoseconds since the epoch (UTC).
//
//   2026-11-30T02:10:00Z              extended format; 'T' or a space between date and time
//   2026-11-30T02:10:00.5+01:00       fraction of up to 9 digits; offsets ±HH:MM, ±HHMM, ±HH
//   20261130T021000.123456789Z        basic format (as in capture file names)
//   2026-11-30                        a date alone: midnight UTC
//   1700000000 / 1700000000.123456789 Unix seconds with an optional fraction (≤ 9 digits)
//
// A date-time without 'Z' or an offset is refused (local time would make a forensic
// query depend on the machine's time zone). Times before 1970 are refused, and so are
// times after 2554-07-21T23:34:33.709551615Z (2^64 - 1 ns: what a timestamp can hold).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace linecap::store {

Result<uint64_t> parse_time(std::string_view text);

// An expiry: a time as parse_time takes it, or a whole number of seconds, minutes, hours
// or days from `now_ns` ("90m", "30d").
Result<uint64_t> parse_expiry(std::string_view text, uint64_t now_ns);

// "2026-11-30T02:10:00.500000000Z" (always 9 fraction digits, UTC): the manifests' format
// (util/utc_time.hpp format_utc_ns), so the CLI, the API and manifests print times alike.
std::string format_time(uint64_t ns);

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);

}  // namespace linecap::store
