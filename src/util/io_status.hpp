// IoStatus: the outcome of one file-system operation on the writer's error paths. It
// keeps errno (to tell "disk full" from other failures, which are counted apart) and
// the name of the operation (for the log), and never allocates until a message is built.
#pragma once

#include <cerrno>
#include <string>

#include "util/errno_text.hpp"

namespace linecap {

class [[nodiscard]] IoStatus {
public:
    IoStatus() = default;  // success
    static IoStatus failure(const char* operation, int error) { return IoStatus(operation, error); }
    // Not done because a check said no (EEXIST, so never counted as disk_full); the
    // message is `reason` alone.
    static IoStatus refused(const char* reason) {
        IoStatus status(reason, EEXIST);
        status.refused_ = true;
        return status;
    }

    bool ok() const { return error_ == 0; }
    int error() const { return error_; }
    const char* operation() const { return operation_; }
    // ENOSPC and EDQUOT are counted as disk_full, everything else as write_error.
    bool disk_full() const { return error_ == ENOSPC || error_ == EDQUOT; }
    std::string message() const {
        return refused_ ? std::string(operation_) : std::string(operation_) + ": " + errno_text(error_);
    }

private:
    IoStatus(const char* operation, int error) : operation_(operation), error_(error ? error : EIO) {}
    const char* operation_ = "";
    int error_ = 0;
    bool refused_ = false;
};

}  // namespace linecap
