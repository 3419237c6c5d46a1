// The capture directory's layout: every name in it, and the one way a file is written
// atomically (also used for `linecap extract -o`).
//
//   STEM.pcap, STEM.pcapng     a finished capture file. STEM is the file template rendered
//                              for the file's first packet (config/file_template.hpp),
//                              then "-<n>" when that name is taken, "-recovered" when crash
//                              recovery finished it
//   .STEM.pcap.part            being written (hidden, never matched by "*.pcap")
//   STEM.pcap.manifest         its manifest (archive/manifest.hpp)
//   STEM.pcap.manifest-pending empty: the file is finished, its manifest not written yet
//                              (archive/manifest_hasher.hpp)
//   STEM.pcap.idx              its retrieval index (archive/index_format.hpp)
//   STEM.pcap.corrupt          not a capture file: moved aside by recovery
//   STEM.pcap.archived         one line: the file, its index and its manifest are in the
//                              archive tier, verified (output.archive, archive/archive_service.hpp)
//   STEM.pcap.zst              the capture file compressed (output.compress: zstd's
//                              seekable format, format/zstd_seekable.hpp); it replaces
//                              STEM.pcap, whose sidecars keep their names. While both
//                              exist (a compression not finished) STEM.pcap is the file
//   .FINAL.tmp.XXXXXX          a temporary of AtomicFile, renamed to FINAL when complete
//
// Sidecar names (manifest, index) are the capture file's name plus a suffix, so the
// functions that make them work on a path as well as on a name.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "archive/stream_id.hpp"
#include "config/config.hpp"
#include "config/file_template.hpp"
#include "util/io_status.hpp"
#include "util/unique_fd.hpp"

namespace linecap::layout {

// --- finished capture files -----------------------------------------------------------

// ".pcap" or ".pcapng".
std::string_view extension(FileKind format);

// A finished capture file's name: "*.pcap" or "*.pcapng", not hidden.
bool is_capture_name(std::string_view name);
// The format a finished capture file's name says; nullopt if it is not one.
std::optional<FileKind> capture_format(std::string_view name);

// The name of a new capture file: the template rendered for its first packet, then
// "-<alternative>" for alternative > 0 (the plain name is taken: two files in the same
// second without {nsec}), then the extension.
std::string capture_name(const FileTemplate& file_template, uint64_t first_ts_ns, const StreamId& stream,
                         uint64_t seq, FileKind format, unsigned alternative);

// What a finished capture file's name says (time, port, queue), read with the template;
// nullopt when it is not a capture name or does not match the template.
std::optional<ParsedName> parse_capture_name(const FileTemplate& file_template, std::string_view name);

// How many names are tried for one file: the plain name and alternatives "-1" … "-999".
inline constexpr unsigned kMaxAlternatives = 1000;

// "x.pcap" → "x-<n>.pcap" (n > 0; the name itself for 0): the n-th alternative for a
// taken name. The number goes before the last extension; a leading dot is not one.
std::string numbered_name(std::string_view name, unsigned n);
// "x.pcap" → "x-recovered.pcap": a file finished by crash recovery when "x.pcap" exists.
std::string recovered_name(std::string_view final_name);
// "x.pcap" → "x.pcap.corrupt": an in-progress file that is not a capture file.
std::string corrupt_name(std::string_view final_name);

// --- files being written --------------------------------------------------------------

// "." + final name + ".part": hidden, and never matched by "*.pcap", so readers and
// retention only ever see finished files.
std::string in_progress_name(std::string_view final_name);
// The final name an in-progress name stands for; nullopt if `name` is not one.
std::optional<std::string> final_name_of_in_progress(std::string_view name);

// --- sidecars -------------------------------------------------------------------------

std::string manifest_name(std::string_view capture);  // "x.pcap" → "x.pcap.manifest"
std::string index_name(std::string_view capture);     // "x.pcap" → "x.pcap.idx"
// The capture file a sidecar name belongs to; nullopt if it is not one (or hidden).
std::optional<std::string> capture_name_of_manifest(std::string_view name);
std::optional<std::string> capture_name_of_index(std::string_view name);
// A capture file whose bytes no longer match its manifest gets a marker beside it,
// "NAME.pcap.damaged" (one line: when and why), written by the background scrub
// (archive/scrub.hpp) and read by `linecap extract`, `linecap stats` and `linecapd verify`.
std::string damaged_marker_name(std::string_view capture);  // "x.pcap" → "x.pcap.damaged"
std::optional<std::string> capture_name_of_damaged_marker(std::string_view name);
// The marker of a finished file whose manifest is pending: created by the writer before the
// file gets its final name, removed by the manifest hasher once the manifest is written.
std::string manifest_pending_name(std::string_view capture);  // "x.pcap.manifest-pending"
std::optional<std::string> capture_name_of_manifest_pending(std::string_view name);
// Written by the archiver once the file's objects are in the store and verified: local
// retention deletes an archived file freely, an unarchived one only when a limit must win.
std::string archived_marker_name(std::string_view capture);  // "x.pcap" → "x.pcap.archived"
std::optional<std::string> capture_name_of_archived_marker(std::string_view name);
// Every sidecar of a capture file, its compressed form and its manifest-pending marker:
// deleted with it, counted with it.
std::array<std::string, 6> sidecar_names(std::string_view capture);

// --- compressed capture files ---------------------------------------------------------

// "x.pcap" → "x.pcap.zst" (a name or a path).
std::string compressed_name(std::string_view capture);
// "x.pcap.zst" → "x.pcap"; nullopt if `name` is not the compressed form of a capture name.
std::optional<std::string> capture_name_of_compressed(std::string_view name);
// The capture file a directory entry stores: "x.pcap" for "x.pcap" and "x.pcap.zst";
// nullopt for anything else. Listings take each capture name once (the plain file when
// both exist).
std::optional<std::string> stored_capture_name(std::string_view name);

// Where the scrub keeps its progress across restarts. Not hidden: hidden names in the
// capture directory are files in progress and temporaries, which this is not.
inline constexpr std::string_view kScrubStateName = "linecap-scrub.state";

// --- temporaries ----------------------------------------------------------------------

// The final name a temporary of AtomicFile stands for; nullopt if `name` is not one.
std::optional<std::string> final_name_of_temporary(std::string_view name);

// A file that appears under its final name complete, or not at all. It is written to a
// hidden temporary beside the final name; commit() fsyncs it, renames it over the final
// name and fsyncs the directory. One durability policy for every such file (manifests,
// indexes, extractions), whatever output.fsync says for capture files: one that exists
// after a crash is whole. The final name, if it exists, must be a regular file: a
// symlink, device node, FIFO, socket or directory there is refused, never replaced or
// followed. An AtomicFile destroyed without a successful commit removes its temporary; if
// that fails (a volume failing under it), the next AtomicFile opened tries again.
class AtomicFile {
public:
    AtomicFile() = default;
    ~AtomicFile() { discard(); }
    AtomicFile(AtomicFile&& other) noexcept;
    AtomicFile& operator=(AtomicFile&& other) noexcept;
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // Creates the temporary for `name` in the directory `dir_fd` (which the AtomicFile
    // duplicates: the caller may close its own).
    IoStatus open(int dir_fd, std::string_view name, mode_t mode);
    // The same for a path (see open_parent).
    IoStatus open(const std::string& path, mode_t mode);

    bool is_open() const { return fd_.valid(); }
    int fd() const { return fd_.get(); }
    IoStatus write(std::span<const uint8_t> bytes);
    IoStatus commit();
    IoStatus write_and_commit(std::span<const uint8_t> bytes);
    // Closes and removes the temporary (nothing happens to the final name); one that cannot
    // be removed now is removed by a later open() of any AtomicFile, once it can be.
    void discard();

    // For a signal handler that must remove the temporary: unlinkat(directory_fd(),
    // temporary_name()) is async-signal-safe.
    int directory_fd() const { return dir_fd_.get(); }
    const std::string& temporary_name() const { return temp_name_; }
    const std::string& final_name() const { return final_name_; }

private:
    UniqueFd dir_fd_;
    UniqueFd fd_;
    std::string final_name_;
    std::string temp_name_;
};

// `bytes` as the file `name` in `dir_fd` (or at `path`), through an AtomicFile.
IoStatus atomic_write(int dir_fd, std::string_view name, std::span<const uint8_t> bytes, mode_t mode);
IoStatus atomic_write(const std::string& path, std::span<const uint8_t> bytes, mode_t mode);

// The directory of `path`, opened (following symlinks there, like any path lookup), and
// the last component, which must name a file ("dir/", "." and ".." do not).
IoStatus open_parent(const std::string& path, UniqueFd& dir, std::string& name);

// Why `name` in `dir_fd` may not be replaced by an AtomicFile ("exists and is a character
// device; …"), or nullopt when it may (absent, or a regular file). For a check before the
// work starts; commit() checks again.
std::optional<std::string> not_replaceable(int dir_fd, std::string_view name);

// Whether `name` exists in `dir_fd` (a symlink counts as itself, never followed).
bool exists_at(int dir_fd, const std::string& name);

}  // namespace linecap::layout
