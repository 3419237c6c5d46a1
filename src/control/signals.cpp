#include "control/signals.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linecap {

namespace {

sigset_t daemon_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    return set;
}

}  // namespace

Status block_daemon_signals() {
    sigset_t set = daemon_signal_set();
    int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr);
    if (rc != 0) return runtime_error(std::string("pthread_sigmask: ") + strerror(rc));
    return {};
}

Result<SignalFd> SignalFd::open() {
    sigset_t set = daemon_signal_set();
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0) return runtime_error(std::string("signalfd: ") + strerror(errno));
    return SignalFd(fd);
}

SignalFd::~SignalFd() {
    if (fd_ >= 0) close(fd_);
}

std::optional<int> SignalFd::wait(int timeout_ms) {
    pollfd pfd{fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc <= 0) return std::nullopt;
    signalfd_siginfo info{};
    if (read(fd_, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return std::nullopt;
    return static_cast<int>(info.ssi_signo);
}

}  // namespace linecap
