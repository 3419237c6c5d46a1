// `linecapd verify DIR`: checks a capture directory against its manifests.
//
// For every finished capture file (*.pcap, *.pcapng; hidden in-progress files are only
// counted): the file is read back completely (every record/block complete and
// plausible) and re-hashed, and size, SHA-256, packet count and first/last packet time
// are compared with its manifest. A compressed file (NAME.zst, output.compress) is
// checked twice: its own bytes against the manifest's "compressed" size and SHA-256,
// and its decompressed bytes like a plain file's (a frame that does not decompress is
// INVALID). Then, per stream (port, queue) and daemon run, the
// manifests' sequence numbers and spans show files that are missing, and runs that do not
// follow each other show when the daemon was not capturing.
//
// One line per finding, then one summary line (stdout):
//   MISMATCH F: …        the file differs from its manifest (which fields, both values)
//   INVALID F: …         the file does not read back completely (partial record, …)
//   NO-MANIFEST F        a capture file without manifest
//   BAD-MANIFEST F: …    a manifest that cannot be read or parsed
//   DAMAGED F: …         the background scrub marked the file (F.damaged): its bytes
//                        no longer matched its manifest (archive/scrub.hpp; the same
//                        size and SHA-256 comparison as MISMATCH, content_differences)
//   ORPHAN M             a manifest whose capture file is missing
//   LOSS F: …            packets of the stream were dropped during the file's span
//   RECOVERED F: …       finished by crash recovery: what was in flight is missing
//   GAP port:queue: …    files missing from a stream, the daemon not running between two
//                        runs, or (with --max-gap) no packet for longer than that
// With --verbose also "ok F (…)" for every file that matches.
//
// Exit status: 0 no findings, 1 findings (or the directory cannot be read), 64 usage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "archive/manifest.hpp"
#include "util/result.hpp"

namespace linecap {

struct VerifyOptions {
    std::string directory;
    uint64_t max_gap_ns = 0;   // 0: no time-gap check
    bool verbose = false;
};

struct VerifyReport {
    size_t files = 0;               // finished capture files
    size_t verified = 0;            // files that match their manifest
    size_t mismatched = 0;
    size_t invalid = 0;
    size_t missing_manifests = 0;
    size_t bad_manifests = 0;
    size_t damaged = 0;             // marked by the scrub
    size_t orphan_manifests = 0;
    size_t losses = 0;              // files with drops in their span
    size_t recovered = 0;
    size_t gaps = 0;
    size_t in_progress = 0;         // hidden files being written (not a finding)
    size_t pending = 0;             // finished, manifest not written yet (not a finding)

    size_t findings() const {
        return mismatched + invalid + missing_manifests + bad_manifests + damaged + orphan_manifests + losses +
               recovered + gaps;
    }
};

// How a capture file's bytes (`size`, `sha256` hex) differ from its manifest, one text
// per field ("sha256 <actual> (manifest: <expected>)"); empty when they match. What the
// scrub marks a file for (archive/scrub.hpp) and the core of verify's MISMATCH.
std::vector<std::string> content_differences(const Manifest& manifest, uint64_t size, const std::string& sha256);

// How a compressed file's own bytes (`file`, its name, `size`, `sha256`) differ from the
// manifest's "compressed" entry (all of it when the manifest has none).
std::vector<std::string> compressed_differences(const Manifest& manifest, const std::string& file, uint64_t size,
                                               const std::string& sha256);

// Writes the finding lines and the summary through `out` (one line each, no newline).
Result<VerifyReport> verify_directory(const VerifyOptions& options, const std::function<void(const std::string&)>& out);
// The capture volumes of one store (output.volumes): each directory's files checked, a
// stream's sequence followed across them (a stream moves when its volume fails).
Result<VerifyReport> verify_volumes(const VerifyOptions& options, const std::vector<std::string>& directories,
                                    const std::function<void(const std::string&)>& out);

// The command line: argv[0] is "verify". Returns the exit status.
int verify_command(int argc, char** argv);

}  // namespace linecap
