// The merge half of `linecap extract --remote` (remote.hpp): the appliances' answers, once
// received, each read with format::CaptureReader and merged in timestamp order into one
// output through format::CaptureWriter. It is apart from the transfers (libcurl, sockets,
// nameless files) so that it is a function of the answers' bytes alone: an appliance is
// not trusted, and what it may answer is fuzzed (tests/fuzz/fuzz_remote_answer.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/remote.hpp"
#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "util/result.hpp"

namespace linecap::api {

using ErrorLine = std::function<void(const std::string&)>;  // one line per appliance problem

// One appliance's answer as received.
struct ReceivedAnswer {
    std::string base;  // its URL as given, without a trailing '/' (error lines, if_description)
    std::string name;  // its host:port (if_name)
    bool cut = false;  // cut by the client, which said so: the answer may end inside a record
    std::unique_ptr<format::ByteSource> bytes;
};

// Writes the records of every answer, merged by (timestamp, order in ANSWERS: ties go to
// the earlier), to SINK as OUTPUT: pcapng with one interface per appliance and interface of
// its answer ("host:port <its if_name>"), or pcap. An answer that is not a capture file, or
// whose records end in a problem other than its cut (a cut answer ends inside a record), is
// reported through ERROR, one line each; a cut answer keeps the records received whole
// before the cut. REPORT counts the appliances whose answer was a capture file
// (appliances_ok) or not (appliances_failed) and the packets written. Errors: the
// output's only.
Status merge_answers(std::vector<ReceivedAnswer> answers, FileKind output, format::ByteSink& sink, RemoteReport& report,
                     const ErrorLine& error);

}  // namespace linecap::api
