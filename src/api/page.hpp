// The page served at "/": one self-contained HTML document (inline style and script, no
// external assets, no build step) for a person: port and disk status, a query form
// (time range, filter, Community ID), the answer's size before downloading, download.
#pragma once

namespace linecap::api {

const char* page_html();

}  // namespace linecap::api
