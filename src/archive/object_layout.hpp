// The archive tier's layout in an object store: which object holds what, the one contract
// between the archiver that writes it and the readers (`linecap extract/stats --archive`,
// the API) that query it in place.
//
//   s3://BUCKET/PREFIX/                  one appliance's archive; PREFIX defaults to its
//                                        host name, so several appliances share a bucket
//   PREFIX/linecap-store.json            what a reader needs to read the names: the file
//                                        template, the rotation interval, the appliance
//                                        (written by the archiver when it starts)
//   PREFIX/STORED                        a capture file's stored form, its bytes as they are
//                                        on the appliance: x.pcap, x.pcapng or x.pcap.zst
//   PREFIX/NAME.idx                      its index, when it has one (NAME: the capture
//                                        file's name, x.pcap — sidecars keep that name
//                                        whatever the stored form, as on disk)
//   PREFIX/NAME.manifest                 its manifest, uploaded last: a file is archived
//                                        when its manifest object exists, and only then
//
// Every object is uploaded whole or not at all (archive's s3 upload: a single PUT, or a
// multipart upload that is no object until completed), with its SHA-256 in the metadata,
// verified by a HEAD before the next object of the file goes up. A reader therefore lists
// PREFIX, takes the capture files whose manifest object is there and ignores the rest:
// what a crash left behind is a capture object without its manifest, redone by the next
// start.
#pragma once

#include <string>
#include <string_view>

#include "util/result.hpp"

namespace linecap::object_layout {

// "s3://BUCKET[/PREFIX]": where an archive is. PREFIX without a trailing '/'; empty when
// the URL names only the bucket (a reader then spans every appliance's prefix in it).
struct ArchiveLocation {
    std::string bucket;
    std::string prefix;
};

// Errors: "archive URL 'X': <why>" (not s3://, no bucket, an empty path segment, ...).
Result<ArchiveLocation> parse_url(std::string_view url);

// "PREFIX/NAME" ("NAME" under an empty prefix).
std::string object_key(std::string_view prefix, std::string_view name);
// The name under PREFIX of KEY; empty when KEY is not directly under it.
std::string_view name_under(std::string_view prefix, std::string_view key);

inline constexpr std::string_view kStoreDescriptionName = "linecap-store.json";

// User metadata (x-amz-meta-*) of every archived object.
inline constexpr const char* kMetaSha256 = "linecap-sha256";               // of the object's bytes
inline constexpr const char* kMetaCaptureSha256 = "linecap-capture-sha256";  // the manifest's, capture objects only

}  // namespace linecap::object_layout
