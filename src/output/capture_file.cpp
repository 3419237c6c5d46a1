#include "output/capture_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "archive/layout.hpp"

namespace linecap {
namespace {

// Capture files hold other people's traffic: readable by the owner's group, not by all.
constexpr mode_t kCaptureFileMode = 0640;

// Several consecutive writes that made no progress mean the kernel will not take the data;
// give up instead of spinning.
constexpr int kMaxStalledWrites = 8;

constexpr uint64_t align_down(uint64_t n) { return n & ~uint64_t{kDirectIoAlignment - 1}; }
constexpr uint64_t align_up(uint64_t n) { return align_down(n + kDirectIoAlignment - 1); }

// pwrite until everything is written: retries EINTR and continues after short writes.
// With O_DIRECT the rest of a short write must start aligned again, so progress is rounded
// down to the alignment (rewriting a few bytes with the same content is harmless).
IoStatus write_fully(int fd, const uint8_t* data, size_t size, uint64_t offset, bool direct) {
    size_t done = 0;
    int stalled = 0;
    while (done < size) {
        const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoStatus::failure("write", errno);
        }
        size_t progress = done + static_cast<size_t>(n);
        if (direct && progress < size) progress = align_down(progress);
        if (progress <= done) {
            if (++stalled >= kMaxStalledWrites) return IoStatus::failure("write", EIO);
            continue;
        }
        stalled = 0;
        done = progress;
    }
    return {};
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t size) {
    if (size == 0) return;
    const size_t rounded = align_up(size);  // aligned_alloc wants a multiple of the alignment
    data_ = static_cast<uint8_t*>(std::aligned_alloc(kDirectIoAlignment, rounded));
    if (data_ != nullptr) size_ = rounded;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

IoStatus CaptureFile::open(int dir_fd, std::string final_name, std::span<const uint8_t> header,
                           std::span<uint8_t> direct_io_staging, uint64_t preallocate_up_to) {
    if (is_open()) return IoStatus::failure("open", EBUSY);
    close_state();

    std::string part_name = layout::in_progress_name(final_name);
    const int fd = ::openat(dir_fd, part_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                            kCaptureFileMode);
    if (fd < 0) return IoStatus::failure("create", errno);

    fd_.reset(fd);
    dir_fd_ = dir_fd;
    final_name_ = std::move(final_name);
    in_progress_name_ = std::move(part_name);
    if (!direct_io_staging.empty()) {
        staging_ = direct_io_staging;
        enable_direct_io();
    }
    preallocate_up_to_ = preallocate_up_to;

    if (IoStatus status = append(header, 0); !status.ok()) {
        // Only a partial header: nothing worth keeping.
        ::unlinkat(dir_fd_, in_progress_name_.c_str(), 0);
        close_state();
        return IoStatus::failure("write header", status.error());
    }
    return {};
}

// O_DIRECT is switched on with fcntl after the exclusive create rather than passed to
// open: on a file system without direct I/O, open(O_CREAT|O_EXCL|O_DIRECT) creates the
// file and then fails with EINVAL, leaving a stray file behind and the name taken.
void CaptureFile::enable_direct_io() {
    const int flags = ::fcntl(fd_.get(), F_GETFL);
    if (flags >= 0 && ::fcntl(fd_.get(), F_SETFL, flags | O_DIRECT) == 0) {
        direct_io_ = true;
    } else {
        direct_io_refused_ = true;
        staging_ = {};
    }
}

// Best effort: a file system without fallocate (EOPNOTSUPP) or without the room (ENOSPC)
// simply gets plain writes, which report a full disk the way the writer counts it.
void CaptureFile::preallocate(uint64_t end) {
    if (preallocate_up_to_ == 0 || end <= preallocated_) return;
    const uint64_t target = std::min(std::max(end, preallocated_ + kPreallocateStep), preallocate_up_to_);
    if (target <= preallocated_) return;
    if (::fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(preallocated_),
                    static_cast<off_t>(target - preallocated_)) != 0) {
        preallocate_up_to_ = 0;
        return;
    }
    preallocated_ = target;
}

IoStatus CaptureFile::append(std::span<const uint8_t> bytes, uint32_t packets) {
    if (!is_open()) return IoStatus::failure("write", EBADF);
    preallocate(size_ + bytes.size());
    IoStatus status = direct_io_ ? append_direct(bytes) : append_buffered(bytes);
    if (!status.ok()) {
        // Cut off whatever part of the block reached the file, so it keeps only complete
        // records. Should even that fail, the next append overwrites the leftovers (writes
        // go to explicit offsets) and finalise() truncates once more.
        while (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0 && errno == EINTR) {
        }
        preallocated_ = std::min(preallocated_, size_);  // the truncate gave back what lay beyond
        return status;
    }
    size_ += bytes.size();
    packets_ += packets;
    return {};
}

IoStatus CaptureFile::append_buffered(std::span<const uint8_t> bytes) {
    return write_fully(fd_.get(), bytes.data(), bytes.size(), size_, false);
}

IoStatus CaptureFile::append_direct(std::span<const uint8_t> bytes) {
    const size_t total = staged_bytes_ + bytes.size();
    const size_t padded = align_up(total);
    if (padded > staging_.size()) return IoStatus::failure("write", EMSGSIZE);  // caller bug

    // The staged tail (staging_[0, staged_bytes_)) stays untouched until the write has
    // succeeded, so a failed append loses nothing that was already counted.
    std::memcpy(staging_.data() + staged_bytes_, bytes.data(), bytes.size());
    std::memset(staging_.data() + total, 0, padded - total);
    if (IoStatus status = write_fully(fd_.get(), staging_.data(), padded, staged_offset_, true);
        !status.ok())
        return status;

    const size_t complete_pages = align_down(total);
    std::memmove(staging_.data(), staging_.data() + complete_pages, total - complete_pages);
    staged_offset_ += complete_pages;
    staged_bytes_ = total - complete_pages;
    return {};
}

IoStatus CaptureFile::sync() {
    if (!is_open()) return IoStatus::failure("fdatasync", EBADF);
    if (::fdatasync(fd_.get()) != 0) return IoStatus::failure("fdatasync", errno);
    return {};
}

void CaptureFile::discard() {
    if (!is_open()) return;
    ::unlinkat(dir_fd_, in_progress_name_.c_str(), 0);
    close_state();
}

FinaliseResult CaptureFile::finalise(bool durable) {
    FinaliseResult result;
    if (!is_open()) {
        result.status = IoStatus::failure("finalise", EBADF);
        return result;
    }

    // Exact size: drops the direct-I/O padding and anything a failed truncate left behind.
    int rc;
    while ((rc = ::ftruncate(fd_.get(), static_cast<off_t>(size_))) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
        result.status = IoStatus::failure("ftruncate", errno);
        close_state();  // keeps the in-progress name: the file is not known to be valid
        return result;
    }
    if (durable && ::fsync(fd_.get()) != 0) result.status = IoStatus::failure("fsync", errno);
    result.size = size_;

    if (::renameat(dir_fd_, in_progress_name_.c_str(), dir_fd_, final_name_.c_str()) != 0) {
        result.status = IoStatus::failure("rename", errno);
    } else {
        result.renamed = true;
        if (durable && ::fsync(dir_fd_) != 0 && result.status.ok())
            result.status = IoStatus::failure("fsync directory", errno);
    }
    close_state();
    return result;
}

void CaptureFile::close_state() {
    fd_.reset();
    dir_fd_ = -1;
    size_ = 0;
    packets_ = 0;
    direct_io_ = false;
    direct_io_refused_ = false;
    staging_ = {};
    staged_offset_ = 0;
    staged_bytes_ = 0;
    preallocate_up_to_ = 0;
    preallocated_ = 0;
}

}  // namespace linecap
