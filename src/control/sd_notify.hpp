// The systemd notify protocol (sd_notify(3)), spoken directly: one datagram per message
// to the unix socket named by $NOTIFY_SOCKET. No libsystemd dependency; a no-op when the
// daemon does not run under systemd.
#pragma once

#include <cstdint>
#include <string>

namespace linecap {

class SystemdNotifier {
public:
    SystemdNotifier();  // reads NOTIFY_SOCKET and WATCHDOG_USEC
    ~SystemdNotifier();
    SystemdNotifier(const SystemdNotifier&) = delete;
    SystemdNotifier& operator=(const SystemdNotifier&) = delete;

    bool enabled() const { return fd_ >= 0; }
    // 0 when systemd did not ask for watchdog pings.
    uint64_t watchdog_usec() const { return watchdog_usec_; }

    void ready() { send("READY=1"); }
    void stopping() { send("STOPPING=1"); }
    void reloading() { send("RELOADING=1"); }
    void watchdog() { send("WATCHDOG=1"); }
    void status(const std::string& text) { send("STATUS=" + text); }
    void send(const std::string& message);

private:
    int fd_ = -1;
    std::string socket_path_;
    uint64_t watchdog_usec_ = 0;
};

}  // namespace linecap
