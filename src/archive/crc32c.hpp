// CRC-32C (Castagnoli): the checksum of the index file format. Uses the SSE4.2 crc32
// instruction when the CPU has it (checked at run time), else portable slicing-by-8.
//
// Detects every burst error up to 32 bits and any corruption of a section with
// probability 1 - 2^-32; it is not a defence against deliberate tampering (the SHA-256
// manifest is).
#pragma once

#include <cstddef>
#include <cstdint>

namespace linecap {

// crc32c(data) for a whole buffer; crc32c_extend continues a running CRC.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }
// The portable implementation alone (tests compare it with the hardware one).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);

}  // namespace linecap
