// CRC-32C (Castagnoli), software slicing-by-8: the checksum of the index file format.
//
// Detects every burst error up to 32 bits and any corruption of a section with
// probability 1 - 2^-32; it is not a defence against deliberate tampering (the SHA-256
// manifest is). Portable C++ (no SSE4.2 dependency) at about 1.5 GB/s, far more than
// index files (a fraction of a percent of the capture) need.
#pragma once

#include <cstddef>
#include <cstdint>

namespace linecap::store {

// crc32c(data) for a whole buffer; crc32c_extend continues a running CRC.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }

}  // namespace linecap::store
