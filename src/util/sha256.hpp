// Sha256: incremental SHA-256 over OpenSSL's EVP interface: the manifests, and the payload hash
// every object-store request carries (s3/client.cpp).
//
// The writer feeds it every byte it appends to a capture file, so finalising a file
// never re-reads it; `linecapd verify` and crash recovery hash whole files with it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace linecap {

class Sha256 {
public:
    using Digest = std::array<uint8_t, 32>;

    Sha256();   // ready to update; ok() is false if OpenSSL could not set up the context
    ~Sha256();
    Sha256(Sha256&&) noexcept;
    Sha256& operator=(Sha256&&) noexcept;
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    bool ok() const { return ok_; }
    void reset();
    void update(std::span<const uint8_t> bytes);
    // The digest of everything since the last reset(); the context is reset afterwards.
    Digest finish();

    static std::string hex(const Digest& digest);
    static std::string of(std::span<const uint8_t> bytes);  // hex digest, one call

private:
    struct Ctx;
    std::unique_ptr<Ctx> ctx_;
    bool ok_ = false;
};

}  // namespace linecap
