// one_line: text from outside (a configuration value, a filter expression, a library's
// message quoting it) made fit for an error that must stay one line: line breaks, tabs
// and other control characters become escapes. In util/ so that every layer reports
// what it was given the same way.
#pragma once

#include <string>
#include <string_view>

namespace linecap {

inline std::string one_line(std::string_view text) {
    std::string escaped;
    escaped.reserve(text.size());
    for (const char c : text) {
        if (c == '\n') {
            escaped += "\\n";
        } else if (c == '\t') {
            escaped += "\\t";
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            escaped += {'\\', 'x', hex[(c >> 4) & 0xf], hex[c & 0xf]};
        } else {
            escaped += c;
        }
    }
    return escaped;
}

}  // namespace linecap
