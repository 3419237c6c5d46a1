// The `linecap` command-line tool: extract, index, stats over a capture store.
// Exit codes: 0 ok, 1 errors (some files unreadable; the rest was still processed),
// 3 extract read files whose bytes may not be what was captured (marked damaged by the
// scrub, or changed after they were indexed) and --accept-damaged was not given; it takes
// precedence over 1. 64 usage (EX_USAGE).
#pragma once

namespace linecap::store {

inline constexpr int kExitOk = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUntrusted = 3;
inline constexpr int kExitUsage = 64;

int linecap_tool_main(int argc, char** argv);

}  // namespace linecap::store
