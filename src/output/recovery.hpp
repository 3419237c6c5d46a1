// Startup recovery of capture files left under their in-progress name by a crash or kill.
//
// Run before the writer starts. Every ".<name>.part" in the output directory is either
// repaired — cut back to its last complete, plausible record and renamed to <name> (or
// <name-stem>-recovered.<ext> if <name> exists) — or, if it is not a pcap file at all
// (shorter than a file header, unknown magic), moved aside to <name>.corrupt. Nothing is
// ever deleted: these files are evidence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/io_status.hpp"
#include "util/result.hpp"

namespace linecap {

// The longest prefix of a pcap file that is a file header followed by complete records.
// Reads nanosecond and microsecond pcap in either byte order. A record ends the prefix
// when its header or data runs past the end of the file, or when it is implausible:
// caplen > snaplen or > pcap::kMaxSnaplen, caplen > len, len == 0, or a fractional
// timestamp out of range. The last three catch the zero-filled or garbage tail a file
// system can leave after a crash, which the length checks alone would accept.
struct PcapScan {
    IoStatus io;                     // a read failed: the other fields are meaningless
    bool header_valid = false;
    std::string header_problem;      // why not, when !header_valid
    uint64_t packets = 0;            // complete records in the prefix
    uint64_t valid_bytes = 0;        // header + complete records
    uint64_t file_bytes = 0;
};
PcapScan scan_pcap(int fd);

struct RecoveredFile {
    enum class Outcome {
        recovered,    // truncated to complete records, renamed to its final name
        moved_aside,  // not a pcap file: renamed to <name>.corrupt
        failed,       // an I/O error; left where it was
    };
    Outcome outcome = Outcome::failed;
    std::string in_progress_name;    // ".x.pcap.part"
    std::string new_name;            // what it is called now ("x.pcap", "x.pcap.corrupt", …)
    uint64_t packets = 0;            // records kept (recovered)
    uint64_t truncated_bytes = 0;    // bytes cut off the end (recovered)
    std::string reason;              // why moved aside or failed
};

struct RecoveryReport {
    std::vector<RecoveredFile> files;  // in name order
    size_t count(RecoveredFile::Outcome outcome) const;
};

// Errors only when the directory cannot be read; a file that cannot be handled is
// reported as failed and the rest are still processed.
Result<RecoveryReport> recover_in_progress(const std::string& directory);

}  // namespace linecap
