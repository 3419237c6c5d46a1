// CaptureFile: one capture file while it is being written.
//
// Lifecycle: open() creates it exclusively under its hidden in-progress name and writes
// the file header; append() adds whole blocks of complete records; finalise() makes it
// durable (if asked) and renames it to its final name. Whatever fails, the file on disk
// holds only the header and complete records: a failed append is truncated away. A file
// that is never finalised (crash, kill) keeps its in-progress name for recovery.
//
// Direct I/O (O_DIRECT) needs 4 KiB aligned offsets, lengths and memory, but blocks end
// anywhere. The file therefore keeps its unaligned tail in a staging buffer: every append
// copies tail + block into the staging buffer and writes it zero-padded to a 4 KiB
// multiple at the tail's aligned file offset, then carries the new unaligned tail to the
// start of the buffer. Everything counted as written is on disk after each append (the
// last page is simply rewritten next time); finalise() cuts the padding off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "util/io_status.hpp"
#include "util/unique_fd.hpp"

namespace linecap {

inline constexpr size_t kDirectIoAlignment = 4096;

// Space is allocated ahead of the writes in steps of this much (fallocate, keeping the file's
// size): one call per 16 MiB instead of a page or extent allocation inside every write. On
// the project's VMs it measured faster into tmpfs and no slower into ext4 (bench/README.md);
// 16 MiB keeps the one longer call well inside what the 32 MiB block pool absorbs.
inline constexpr uint64_t kPreallocateStep = 16ull << 20;

// Aligned heap memory for the O_DIRECT staging buffer (writer-thread memory, not block
// memory). data() is null when the allocation failed or nothing was asked for.
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t size);
    ~AlignedBuffer();
    AlignedBuffer(AlignedBuffer&& other) noexcept;
    AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    std::span<uint8_t> span() const { return {data_, size_}; }

private:
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

// Staging needed for direct I/O of appends up to `max_append` bytes.
constexpr size_t direct_io_staging_size(size_t max_append) {
    return (max_append + kDirectIoAlignment - 1) / kDirectIoAlignment * kDirectIoAlignment +
           kDirectIoAlignment;
}

struct FinaliseResult {
    bool renamed = false;  // the file now has its final name
    IoStatus status;       // first failure, if any
    uint64_t size = 0;     // bytes in the file
};

class CaptureFile {
public:
    CaptureFile() = default;
    // Closes without renaming: an unfinalised file stays under its in-progress name.
    ~CaptureFile() = default;
    CaptureFile(const CaptureFile&) = delete;
    CaptureFile& operator=(const CaptureFile&) = delete;

    // Creates in-progress_name(final_name) in `dir_fd` with O_EXCL (EEXIST means "pick
    // another name") and writes `header`. With a non-empty `direct_io_staging` (at least
    // direct_io_staging_size(largest append) bytes, 4 KiB aligned) it tries O_DIRECT; a
    // file system that refuses it leaves the file buffered, see direct_io_refused().
    // On failure nothing is left behind and the file stays closed. (The digest for the
    // manifest is not taken here: see ManifestHasher.) With `preallocate_up_to` > 0, space is
    // allocated ahead of the writes in kPreallocateStep steps up to that size (the rotation
    // size), without changing the file's size; finalise() gives back what was not used.
    IoStatus open(int dir_fd, std::string final_name, std::span<const uint8_t> header,
                  std::span<uint8_t> direct_io_staging = {}, uint64_t preallocate_up_to = 0);

    // Appends whole records; on failure the file is cut back to its previous size.
    IoStatus append(std::span<const uint8_t> bytes, uint32_t packets);

    // fdatasync: bounds what a crash can take from the open file.
    IoStatus sync();

    // Removes the open file and closes it: for a file that holds no record, whose name (its
    // first packet's time) would be wrong once its first block could not be written.
    void discard();

    // ftruncate to the exact size, fsync (if `durable`), rename to the final name, fsync
    // the directory (if `durable`). Always closes. If the file could not be brought to its
    // exact size it keeps its in-progress name (startup recovery repairs it); an fsync
    // failure is reported but the file is still renamed, as its contents are complete.
    FinaliseResult finalise(bool durable);

    bool is_open() const { return fd_.valid(); }
    bool direct_io() const { return direct_io_; }
    bool direct_io_refused() const { return direct_io_refused_; }
    uint64_t size() const { return size_; }        // logical size: header + records
    uint64_t packets() const { return packets_; }  // records appended
    const std::string& final_name() const { return final_name_; }
    const std::string& in_progress_name() const { return in_progress_name_; }

private:
    void preallocate(uint64_t end);
    IoStatus append_buffered(std::span<const uint8_t> bytes);
    IoStatus append_direct(std::span<const uint8_t> bytes);
    void enable_direct_io();
    void close_state();

    UniqueFd fd_;
    int dir_fd_ = -1;  // not owned
    std::string final_name_;
    std::string in_progress_name_;
    uint64_t size_ = 0;
    uint64_t packets_ = 0;

    bool direct_io_ = false;
    bool direct_io_refused_ = false;
    std::span<uint8_t> staging_;
    uint64_t preallocate_up_to_ = 0;  // 0: off (or given up: the file system refused)
    uint64_t preallocated_ = 0;       // allocated up to here
    uint64_t staged_offset_ = 0;  // aligned file offset of staging_[0]
    size_t staged_bytes_ = 0;     // unaligned tail held in staging_ (< 4 KiB between appends)
};

}  // namespace linecap
