// Signals, taken synchronously by the control thread with signalfd.
//
// block_daemon_signals() runs before rte_eal_init so every lcore and thread inherits a
// mask in which SIGINT/SIGTERM/SIGHUP are blocked: only the signalfd ever sees them, and
// no handler runs in the middle of a worker's loop.
#pragma once

#include <optional>

#include "util/result.hpp"

namespace linecap {

Status block_daemon_signals();

class SignalFd {
public:
    static Result<SignalFd> open();
    SignalFd(SignalFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    SignalFd& operator=(SignalFd&&) = delete;
    ~SignalFd();

    // The next pending signal, waiting at most timeout_ms; nullopt on timeout.
    std::optional<int> wait(int timeout_ms);

private:
    explicit SignalFd(int fd) : fd_(fd) {}
    int fd_;
};

}  // namespace linecap
