#include "control/sd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace linecap {

SystemdNotifier::SystemdNotifier() {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (path == nullptr || path[0] == '\0') return;
    if (path[0] != '/' && path[0] != '@') return;
    if (std::strlen(path) >= sizeof(sockaddr_un{}.sun_path)) return;
    socket_path_ = path;
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (const char* usec = std::getenv("WATCHDOG_USEC")) {
        // WATCHDOG_PID, when set, names the process that must ping; honour it.
        const char* pid = std::getenv("WATCHDOG_PID");
        if (pid == nullptr || std::strtol(pid, nullptr, 10) == getpid()) watchdog_usec_ = std::strtoull(usec, nullptr, 10);
    }
}

SystemdNotifier::~SystemdNotifier() {
    if (fd_ >= 0) close(fd_);
}

void SystemdNotifier::send(const std::string& message) {
    if (fd_ < 0) return;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());
    if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
    // Best effort, like sd_notify: a lost status line must never stop the daemon.
    (void)sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), len);
}

}  // namespace linecap
