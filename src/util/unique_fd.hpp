// UniqueFd: sole owner of a file descriptor; closes it on destruction.
#pragma once

#include <unistd.h>

#include <utility>

namespace linecap {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }

    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(std::exchange(other.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const { return fd_; }
    // Gives the descriptor up without closing it (the caller owns it now).
    int release() { return std::exchange(fd_, -1); }
    bool valid() const { return fd_ >= 0; }
    explicit operator bool() const { return valid(); }

    // Closes the current descriptor (if any) and takes `fd`. A close error is not
    // reported: by then the data either reached the file or an earlier write/fsync said
    // otherwise, and retrying close on Linux would risk closing someone else's fd.
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

}  // namespace linecap
