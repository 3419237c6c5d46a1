// libFuzzer harness for the API's request reading (src/api/http_message.hpp): the bytes an
// unauthenticated client sends to `linecap serve`, through Boost.Beast's parser and the
// front's own rules (Host, Expect, Transfer-Encoding, versions, limits, the path's
// decoding). The first byte says how the rest arrives: whole, or in pieces of 1 to 255
// bytes, as a connection's buffer grows. Every input must give, never a crash or hang:
//   - the same verdict however it arrives, once one is reached: complete with the same
//     request, or refused with the same status and reason;
//   - a refusal whose reason is one line without control characters (it goes into the
//     audit log and a 400 body), with a status the front sends;
//   - a request that, written out again (request line, fields, body), reads back the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/http_message.hpp"

using linecap::api::HttpRequest;
using linecap::api::RequestReader;

namespace {

constexpr size_t kMax = 4096;  // api.max_request_bytes of the tests' configurations

struct Verdict {
    RequestReader::Step step = RequestReader::Step::more;
    HttpRequest request;
    int status = 0;
    std::string reason;
};

Verdict read(std::string_view text, size_t piece) {
    RequestReader reader(kMax);
    std::string buffer;
    size_t fed = 0;
    Verdict v;
    while (fed < text.size()) {
        const size_t n = piece ? std::min(piece, text.size() - fed) : text.size() - fed;
        buffer.append(text.substr(fed, n));
        fed += n;
        size_t consumed = 0;
        v.step = reader.read(buffer, consumed);
        if (consumed > buffer.size()) __builtin_trap();
        buffer.erase(0, consumed);
        if (v.step == RequestReader::Step::complete) {
            v.request = reader.take();
            return v;
        }
        if (v.step == RequestReader::Step::refused) {
            v.status = reader.problem().status;
            v.reason = reader.problem().reason;
            return v;
        }
        // The front never buffers more than a head's limit, or a body and a head after it.
        if (buffer.size() > 2 * kMax + 1) return v;
    }
    return v;
}

bool same(const HttpRequest& a, const HttpRequest& b) {
    return a.method == b.method && a.target == b.target && a.version == b.version && a.path == b.path &&
           a.query == b.query && a.headers == b.headers && a.body == b.body && a.keep_alive == b.keep_alive;
}

std::string write_out(const HttpRequest& r) {
    std::string out = r.method + " " + r.target + " " + r.version + "\r\n";
    for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
    return out + "\r\n" + r.body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 3 * kMax) return 0;
    const size_t piece = data[0];
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    const Verdict whole = read(text, 0);
    const Verdict split = read(text, piece);
    const bool decided = whole.step == RequestReader::Step::complete || whole.step == RequestReader::Step::refused;
    const bool decided_split = split.step == RequestReader::Step::complete || split.step == RequestReader::Step::refused;
    if (decided && decided_split) {
        if (whole.step != split.step || whole.status != split.status) __builtin_trap();
        if (whole.reason != split.reason) __builtin_trap();
        if (whole.step == RequestReader::Step::complete && !same(whole.request, split.request)) __builtin_trap();
    }
    for (const Verdict* v : {&whole, &split}) {
        if (v->step != RequestReader::Step::refused) continue;
        if (v->reason.empty()) __builtin_trap();
        for (char c : v->reason)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) __builtin_trap();
        if (v->status != 400 && v->status != 417 && v->status != 431 && v->status != 505) __builtin_trap();
    }
    // Written out with ": " after each name, a head at the limit may no longer fit it.
    if (whole.step == RequestReader::Step::complete && write_out(whole.request).size() <= kMax) {
        const Verdict again = read(write_out(whole.request), 0);
        if (again.step != RequestReader::Step::complete || !same(whole.request, again.request)) __builtin_trap();
    }
    return 0;
}
