// libFuzzer target: the configuration reader (config/config.hpp) on arbitrary bytes. It
// must never throw, abort or hang (yaml-cpp 0.7 loops for ever on some inputs: see
// load_single_document), and report every problem as one configuration error on one line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const linecap::Result<linecap::Config> config = linecap::parse_config(text, "fuzz.yaml");
    if (!config.ok() && (!config.error().config || config.error().message.empty() ||
                         config.error().message.find('\n') != std::string::npos))
        std::abort();
    return 0;
}
