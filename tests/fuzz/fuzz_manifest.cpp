// libFuzzer target: the manifest reader (archive/manifest.hpp) on arbitrary bytes. It must
// never throw, abort or hang; a manifest it accepts must survive a write/read round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "archive/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const linecap::Result<linecap::Manifest> m = linecap::parse_manifest(text);
    if (!m.ok()) {
        if (m.error().message.empty() || m.error().message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    const linecap::Result<linecap::Manifest> again = linecap::parse_manifest(linecap::to_json(m.value()));
    if (!again.ok() || !(again.value() == m.value())) {
        // Names that are not UTF-8 are written as U+FFFD: the only allowed difference.
        if (again.ok() && again.value().file != m.value().file) return 0;
        std::abort();
    }
    return 0;
}
