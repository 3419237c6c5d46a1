#include "util/sha256.hpp"

#include <openssl/evp.h>

namespace linecap {

struct Sha256::Ctx {
    EVP_MD_CTX* md = nullptr;
    ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
    ctx_->md = EVP_MD_CTX_new();
    reset();
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::reset() {
    ok_ = ctx_ && ctx_->md != nullptr && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1;
}

void Sha256::update(std::span<const uint8_t> bytes) {
    if (!ok_ || bytes.empty()) return;
    if (EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) != 1) ok_ = false;
}

Sha256::Digest Sha256::finish() {
    Digest digest{};
    unsigned int n = 0;
    if (!ok_ || EVP_DigestFinal_ex(ctx_->md, digest.data(), &n) != 1 || n != digest.size()) {
        ok_ = false;
        return {};
    }
    reset();
    return digest;
}

std::string Sha256::hex(const Digest& digest) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(digest.size() * 2);
    for (uint8_t b : digest) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

std::string Sha256::of(std::span<const uint8_t> bytes) {
    Sha256 h;
    h.update(bytes);
    const Digest d = h.finish();
    return h.ok() ? hex(d) : std::string();
}

}  // namespace linecap
