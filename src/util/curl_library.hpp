// libcurl, loaded the first time a program needs it rather than when it starts.
//
// Only the object-store client (s3/) and the fan-out client (api/remote) speak HTTP, but
// libcurl brings 30 shared libraries (Kerberos, LDAP, SSH, IDN, …): linked as usual it
// was read and relocated by every start of `linecap`, 19 ms of a cold `linecap extract`
// that reads no object store (45 → 27 ms to start, bench/store/README.md). So it is
// opened with dlopen when a client is first made, and its functions are called through
// the table below, named as libcurl names them less the "curl_" prefix. The handles'
// owners (CurlEasy, CurlMulti, CurlList) are here too.
//
// Builds compile against <curl/curl.h> and do not link libcurl; the package depends on
// libcurl4 by name (debian/control), as the soname here is libcurl's ABI (4).
#pragma once

#include <curl/curl.h>

#include <memory>

#include "util/result.hpp"

namespace linecap::curl {

inline constexpr const char* kSoname = "libcurl.so.4";

struct Library {
    decltype(&::curl_global_init) global_init;
    decltype(&::curl_easy_init) easy_init;
    decltype(&::curl_easy_cleanup) easy_cleanup;
    decltype(&::curl_easy_reset) easy_reset;
    decltype(&::curl_easy_setopt) easy_setopt;
    decltype(&::curl_easy_getinfo) easy_getinfo;
    decltype(&::curl_easy_perform) easy_perform;
    decltype(&::curl_easy_strerror) easy_strerror;
    decltype(&::curl_easy_escape) easy_escape;
    decltype(&::curl_free) free;
    decltype(&::curl_slist_append) slist_append;
    decltype(&::curl_slist_free_all) slist_free_all;
    decltype(&::curl_multi_init) multi_init;
    decltype(&::curl_multi_cleanup) multi_cleanup;
    decltype(&::curl_multi_add_handle) multi_add_handle;
    decltype(&::curl_multi_remove_handle) multi_remove_handle;
    decltype(&::curl_multi_perform) multi_perform;
    decltype(&::curl_multi_poll) multi_poll;
    decltype(&::curl_multi_info_read) multi_info_read;
};

// Opens libcurl and runs curl_global_init, once per process (thread-safe); later calls
// return the first one's outcome. Error: "libcurl (libcurl.so.4): <why>" — not
// installed, a function missing, or the global initialisation failed.
Result<const Library*> load();

// The loaded library. Only after load() succeeded (each client's constructor or entry
// point calls it first); aborts otherwise, as a call through a missing table would.
const Library& library();

// libcurl's functions by their names less "curl_", through library().
inline CURL* easy_init() { return library().easy_init(); }
inline void easy_cleanup(CURL* c) { library().easy_cleanup(c); }
inline void easy_reset(CURL* c) { library().easy_reset(c); }
template <class T>
CURLcode easy_setopt(CURL* c, CURLoption option, T value) {
    return library().easy_setopt(c, option, value);
}
template <class T>
CURLcode easy_getinfo(CURL* c, CURLINFO info, T* value) {
    return library().easy_getinfo(c, info, value);
}
inline CURLcode easy_perform(CURL* c) { return library().easy_perform(c); }
inline const char* easy_strerror(CURLcode rc) { return library().easy_strerror(rc); }
inline char* easy_escape(CURL* c, const char* s, int n) { return library().easy_escape(c, s, n); }
inline void free(void* p) { library().free(p); }
inline curl_slist* slist_append(curl_slist* l, const char* s) { return library().slist_append(l, s); }
inline void slist_free_all(curl_slist* l) { library().slist_free_all(l); }
inline CURLM* multi_init() { return library().multi_init(); }
inline CURLMcode multi_cleanup(CURLM* m) { return library().multi_cleanup(m); }
inline CURLMcode multi_add_handle(CURLM* m, CURL* c) { return library().multi_add_handle(m, c); }
inline CURLMcode multi_remove_handle(CURLM* m, CURL* c) { return library().multi_remove_handle(m, c); }
inline CURLMcode multi_perform(CURLM* m, int* running) { return library().multi_perform(m, running); }
inline CURLMcode multi_poll(CURLM* m, curl_waitfd* fds, unsigned n, int timeout_ms, int* ret) {
    return library().multi_poll(m, fds, n, timeout_ms, ret);
}
inline CURLMsg* multi_info_read(CURLM* m, int* left) { return library().multi_info_read(m, left); }

}  // namespace linecap::curl

namespace linecap {

// libcurl's handles owned: an easy handle, a multi handle, a header list, each freed by
// the call libcurl pairs with it.
struct CurlEasyFree {
    void operator()(CURL* c) const { curl::easy_cleanup(c); }
};
struct CurlMultiFree {
    void operator()(CURLM* m) const { curl::multi_cleanup(m); }
};
struct CurlListFree {
    void operator()(curl_slist* l) const { curl::slist_free_all(l); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyFree>;
using CurlMulti = std::unique_ptr<CURLM, CurlMultiFree>;
using CurlList = std::unique_ptr<curl_slist, CurlListFree>;

}  // namespace linecap
