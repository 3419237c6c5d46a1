// Startup recovery of capture files left under their in-progress name by a crash or kill.
//
// Run before the writer starts. Every ".<name>.part" in the output directory is either
// repaired — cut back to its last complete, plausible record (pcap) or block (pcapng) and
// renamed to <name> (or <name-stem>-recovered.<ext> if <name> exists) — or, if it is not
// a capture file at all (shorter than a file header, unknown magic), moved aside to
// <name>.corrupt. Nothing is ever deleted: these files are evidence. A recovered pcapng
// file has no Interface Statistics Block (the daemon died before writing it), which is
// logged: its drop counts are unknown. With manifests on, a recovered file gets one,
// computed from the file and marked "recovered": true (no drops, span or sequence).
// Stale temporaries of layout::AtomicFile (manifests, indexes and compressed files a kill
// interrupted) are removed, and so is a compressed file whose capture file is still there
// (the compression was not finished: the capture file stays; archive/compress.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "archive/capture_scan.hpp"
#include "util/io_status.hpp"
#include "archive/manifest.hpp"
#include "util/result.hpp"

namespace linecap {

// The longest prefix of a capture file that is a file header followed by complete
// records: see scan_capture for what counts as complete and plausible.
// (scan_capture in capture_scan.hpp does the work, for pcapng too; this name is kept for
// the callers that only ever see pcap.)
using PcapScan = CaptureScan;
inline PcapScan scan_pcap(int fd) { return scan_capture(fd); }

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
    bool manifest_written = false;   // (recovered, with manifests on)
};

struct RecoveryReport {
    std::vector<RecoveredFile> files;  // in name order
    std::vector<std::string> compressions_undone;  // "x.pcap.zst" removed: x.pcap is kept
    size_t count(RecoveredFile::Outcome outcome) const;
};

struct RecoveryOptions {
    bool write_manifests = false;    // output.manifest
};

// The manifest of a finished file computed from the file itself (`scan` with its hash):
// name, format, size, SHA-256, packets, first and last packet; nothing about drops, span
// or stream. What recovery writes for a recovered file (then marked "recovered").
Manifest manifest_from_scan(const std::string& name, const CaptureScan& scan);
// The manifest of the finished capture file `name`, open as `fd`, from its bytes alone
// (manifest_from_scan of a hashing scan), marked "recovered": true, with the stream
// identity a pcapng interface name gives; without drops, span, run or sequence (they were
// in the memory of a daemon that died). For recovery here, and for the files a killed
// daemon left with their manifest pending (archive/manifest_hasher.hpp). Errors: one line,
// the file does not read back completely or an I/O error.
Result<Manifest> manifest_from_file(int fd, const std::string& name);

// Errors only when the directory cannot be read; a file that cannot be handled is
// reported as failed and the rest are still processed.
Result<RecoveryReport> recover_in_progress(const std::string& directory, RecoveryOptions options = {});

}  // namespace linecap
