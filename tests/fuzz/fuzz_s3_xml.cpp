// libFuzzer harness for the object-store client's XML answers (s3/xml_answer.hpp): the
// bytes of an answer as a store sends them, fed as libcurl would, in pieces. Byte 0 picks
// the pieces' sizes; the rest is the answer, read under small limits so that every bound
// (answer bytes, one element's text, nesting, entries) is reached. Invariants: the same
// result and the same error however the answer is split; an error is one non-empty line
// without control characters (it goes into a log line and a CLI's stderr).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "s3/xml_answer.hpp"

namespace {

using linecap::s3::XmlAnswer;
using linecap::s3::XmlAnswerReader;
using linecap::s3::XmlLimits;

constexpr XmlLimits kLimits{.answer_bytes = 3000, .text_bytes = 200, .depth = 8, .entries = 40};

struct Outcome {
    bool ok;
    std::string error;
    XmlAnswer answer;
};

Outcome read(std::string_view answer, uint8_t split) {
    XmlAnswerReader reader(kLimits);
    uint32_t state = split;
    size_t at = 0;
    while (at < answer.size()) {
        size_t n = answer.size() - at;
        if (split != 0) {
            state = state * 1103515245u + 12345u;
            n = std::min<size_t>(n, 1 + (state >> 16) % 97);
        }
        if (!reader.feed(answer.substr(at, n))) break;
        at += n;
    }
    const bool ok = reader.finish();
    return {ok, reader.error(), reader.answer()};
}

bool same(const XmlAnswer& a, const XmlAnswer& b) {
    if (a.root != b.root || a.truncated != b.truncated || a.upload_id != b.upload_id || a.code != b.code ||
        a.message != b.message || a.listing.next_token != b.listing.next_token ||
        a.listing.common_prefixes != b.listing.common_prefixes || a.listing.objects.size() != b.listing.objects.size() ||
        a.uploads.size() != b.uploads.size())
        return false;
    for (size_t i = 0; i < a.listing.objects.size(); ++i) {
        const auto &x = a.listing.objects[i], &y = b.listing.objects[i];
        if (x.key != y.key || x.size != y.size || x.etag != y.etag || x.last_modified != y.last_modified) return false;
    }
    for (size_t i = 0; i < a.uploads.size(); ++i) {
        if (a.uploads[i].key != b.uploads[i].key || a.uploads[i].upload_id != b.uploads[i].upload_id) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view answer(reinterpret_cast<const char*>(data) + 1, size - 1);
    const Outcome whole = read(answer, 0);
    const Outcome pieces = read(answer, data[0] == 0 ? 1 : data[0]);
    // The same verdict whatever the split, and the same reason where expat named no fault.
    // When it does, which of two faults comes first depends on how far ahead it could read:
    // "junk after document element" in pieces, "invalid token" further on when it had it
    // all, or a bound passed before a token it was still waiting to finish.
    const std::string_view not_xml = "answer is not XML: ";
    const bool expat_named = whole.error.starts_with(not_xml) || pieces.error.starts_with(not_xml);
    if (whole.ok != pieces.ok || (!expat_named && whole.error != pieces.error)) __builtin_trap();
    if (whole.ok && !same(whole.answer, pieces.answer)) __builtin_trap();
    if (!whole.ok) {
        if (whole.error.empty()) __builtin_trap();
        for (const char c : whole.error)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) __builtin_trap();
    }
    return 0;
}
