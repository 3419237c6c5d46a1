// strerror text for an errno value, thread-safe (writer threads and the indexer log
// concurrently). In util so that every layer (output's writer, the store's tools) uses
// the same one.
#pragma once

#include <cstring>
#include <string>

namespace linecap {

namespace detail {
// glibc's GNU strerror_r returns the text (not necessarily in `buffer`); XSI strerror_r
// returns 0 or an error number. Overloads pick whichever this libc provides.
inline const char* strerror_result(const char* text, const char*) { return text; }
inline const char* strerror_result(int rc, const char* buffer) { return rc == 0 ? buffer : ""; }
}  // namespace detail

inline std::string errno_text(int error) {
    char buffer[128] = {};
    const std::string text = detail::strerror_result(strerror_r(error, buffer, sizeof buffer), buffer);
    return text.empty() ? "errno " + std::to_string(error) : text;
}

}  // namespace linecap
