// File times of a struct stat as nanoseconds since the epoch (what manifests, indexes and
// the scrub compare).
#pragma once

#include <sys/stat.h>

#include <cstdint>

namespace linecap {

inline int64_t stat_mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec; }
inline int64_t stat_ctime_ns(const struct stat& st) { return int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec; }

}  // namespace linecap
