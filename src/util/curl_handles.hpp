// libcurl's handles owned: an easy handle, a multi handle, a header list, each freed by
// the call libcurl pairs with it. Header-only, for the layers that link libcurl (the
// object-store client, the fan-out client); util itself does not.
#pragma once

#include <curl/curl.h>

#include <memory>

namespace linecap {

struct CurlEasyFree {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlMultiFree {
    void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct CurlListFree {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyFree>;
using CurlMulti = std::unique_ptr<CURLM, CurlMultiFree>;
using CurlList = std::unique_ptr<curl_slist, CurlListFree>;

}  // namespace linecap
