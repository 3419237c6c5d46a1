// libFuzzer target: output.file_template and the file names it reads back.
//
// Input: a template, then optionally a NUL and a file name. Whatever the bytes, compile()
// accepts or refuses in one message. A template it accepts must read back every name it
// renders: the time (to its precision), the port and the queue, for any port name the
// configuration allows and any time from 2001 to 2060 (the %y window), and no name may
// be longer than max_rendered_bytes() says. Any name (a directory entry: untrusted) is
// parsed against the template, and against the default one, without harm.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "config/file_template.hpp"
#include "archive/layout.hpp"

using namespace linecap;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

constexpr size_t kMaxPortName = 32;  // config: port names of 1..32 of [A-Za-z0-9_-]
constexpr uint64_t kNs = 1000000000ull;
constexpr uint64_t k2001 = 978307200ull * kNs, k2061 = 2871763200ull * kNs;

uint64_t take64(std::string_view& s) {
    uint64_t v = 0;
    for (int i = 0; i < 8 && !s.empty(); ++i, s.remove_prefix(1)) v = v << 8 | static_cast<uint8_t>(s[0]);
    return v;
}

void parse_any(const FileTemplate& t, std::string_view name) {
    if (name.size() > 255) return;  // NAME_MAX: no directory holds a longer name
    const auto p = layout::parse_capture_name(t, name);
    if (p && p->has_time) check(p->precision_ns >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    const std::string_view text = input.substr(0, nul);
    std::string_view name = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

    static const FileTemplate fallback = FileTemplate::compile(kDefaultFileTemplate).value();
    parse_any(fallback, name);

    auto t = FileTemplate::compile(text);
    if (!t.ok()) {
        check(!t.error().message.empty());
        return 0;
    }
    parse_any(t.value(), name);

    // A stream and a time from the name's bytes.
    std::string_view rest = name;
    const uint64_t ts = k2001 + take64(rest) % (k2061 - k2001);
    const uint64_t queue = take64(rest) % 1024;  // config: rx_queues <= 1024
    const uint64_t seq = take64(rest);
    std::string port;
    for (const char c : rest.substr(0, kMaxPortName)) {
        constexpr char kPortChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        port += kPortChars[static_cast<uint8_t>(c) % (sizeof kPortChars - 1)];
    }
    if (port.empty()) port = "p0";

    const std::string stem = t->render(ts, port, queue, seq);
    check(stem.size() <= t->max_rendered_bytes(kMaxPortName));
    const auto back = t->parse(stem);
    check(back.has_value());
    if (back->has_time) check(back->time_ns <= ts && ts - back->time_ns < back->precision_ns);
    if (t->text().find("{port}") != std::string::npos) check(back->port == port);
    if (t->text().find("{queue}") != std::string::npos) check(back->queue == static_cast<int64_t>(queue));
    return 0;
}
