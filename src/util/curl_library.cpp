#include "util/curl_library.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace linecap::curl {
namespace {

struct Loaded {
    Library library{};
    std::string error;  // "" when loaded
};

Loaded open_library() {
    Loaded out;
    // Never closed: handles and callbacks may live until the process ends.
    void* handle = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        out.error = std::string("libcurl (") + kSoname + "): " + (why ? why : "cannot be loaded") +
                    " (install libcurl4)";
        return out;
    }
    bool complete = true;
    auto bind = [&](auto& slot, const char* name) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, name));
        if (slot == nullptr && complete) {
            complete = false;
            out.error = std::string("libcurl (") + kSoname + "): no function " + name;
        }
    };
    Library& l = out.library;
    bind(l.global_init, "curl_global_init");
    bind(l.easy_init, "curl_easy_init");
    bind(l.easy_cleanup, "curl_easy_cleanup");
    bind(l.easy_reset, "curl_easy_reset");
    bind(l.easy_setopt, "curl_easy_setopt");
    bind(l.easy_getinfo, "curl_easy_getinfo");
    bind(l.easy_perform, "curl_easy_perform");
    bind(l.easy_strerror, "curl_easy_strerror");
    bind(l.easy_escape, "curl_easy_escape");
    bind(l.free, "curl_free");
    bind(l.slist_append, "curl_slist_append");
    bind(l.slist_free_all, "curl_slist_free_all");
    bind(l.multi_init, "curl_multi_init");
    bind(l.multi_cleanup, "curl_multi_cleanup");
    bind(l.multi_add_handle, "curl_multi_add_handle");
    bind(l.multi_remove_handle, "curl_multi_remove_handle");
    bind(l.multi_perform, "curl_multi_perform");
    bind(l.multi_poll, "curl_multi_poll");
    bind(l.multi_info_read, "curl_multi_info_read");
    if (!complete) return out;
    // Before any handle, once per process (libcurl's rule for curl_global_init).
    if (const CURLcode rc = l.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
        out.error = std::string("libcurl (") + kSoname + "): curl_global_init: " + l.easy_strerror(rc);
    return out;
}

const Loaded& loaded() {
    static const Loaded once = open_library();  // thread-safe initialisation
    return once;
}

}  // namespace

Result<const Library*> load() {
    const Loaded& l = loaded();
    if (!l.error.empty()) return runtime_error(l.error);
    return &l.library;
}

const Library& library() {
    const Loaded& l = loaded();
    if (!l.error.empty()) {
        std::fprintf(stderr, "%s\n", l.error.c_str());
        std::abort();
    }
    return l.library;
}

}  // namespace linecap::curl
