// XXH3 (Debian libxxhash-dev) compiled into the worker's code: the per-packet hashes of
// capture/flow_cap.hpp and capture/dedup.hpp are on the hot path, where a call through the
// shared library's dispatch would cost more than hashing a small packet.
#pragma once

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>
