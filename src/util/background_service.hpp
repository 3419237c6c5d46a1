// The thread of one of the daemon's background services (lc-hash, lc-retention, lc-scrub,
// lc-indexer, lc-compress): named, at idle priority when asked, started once, woken and
// stopped under one mutex, which guards the service's own shared state too. A service
// writes its work (work(), on the thread) and what starting, waking and stopping add to
// this (the hooks below); the rest is here once.
//
// The thread runs the service's code: a service's destructor calls stop() first, so the
// thread is joined before the service's members go.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace linecap {

// What a stage that works on finished files (the manifest hasher, the indexer) may still
// spend on them once capture has stopped; the rest is left marked for the next start,
// which resumes it. So a stop takes at most about this per stage and volume, whatever the
// backlog. Generous for now: tests still read manifests and indexes right after a stop on
// a loaded machine (doc/operate.md).
inline constexpr std::chrono::milliseconds kStopDrainBudget{30'000};

class BackgroundService {
public:
    struct Thread {
        const char* name;            // the thread's name (at most 15 characters)
        const char* who;             // the service, in log lines ("indexer")
        bool idle_priority = true;   // SCHED_IDLE and the idle I/O class (util/idle_priority.hpp)
    };

    BackgroundService(const BackgroundService&) = delete;
    BackgroundService& operator=(const BackgroundService&) = delete;

    // Once: not again after stop() (the thread would never be joined). Throws
    // std::system_error when no thread can be created.
    void start();
    // Sets stopping_ (with on_stop(), under the lock), wakes the thread and joins it.
    void stop();
    // Sets woken_ (with on_wake(), under the lock) and wakes the thread. Any thread.
    void wake();

protected:
    explicit BackgroundService(Thread thread) : thread_spec_(thread) {}
    ~BackgroundService() = default;

    // On the service's thread, after the priority is set; returns when the service is done
    // (stopping_, or its own reason).
    virtual void work() = 0;
    // The hooks: before_start() on the caller of start(), before the thread exists;
    // on_stop() and on_wake() under the lock, once per stop and per wake; after_stop() once
    // the thread is joined; stop_unstarted() when stop() finds the thread never started.
    virtual void before_start() {}
    virtual void on_stop() {}
    virtual void on_wake() {}
    virtual void after_stop() {}
    virtual void stop_unstarted() {}

    // For the work a stopping service still owes once capture has stopped: the thread back
    // to normal CPU and I/O priority, once (idle priority could starve that work on a busy
    // machine). Nothing happens elsewhere: stop_unstarted() runs on the caller's thread.
    void owe_at_normal_priority();

    std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};  // written under mutex_; the work may poll it without
    bool woken_ = false;                 // under mutex_: wake() since the work last cleared it

private:
    const Thread thread_spec_;
    std::thread thread_;
    bool owing_ = false;  // the thread's: owe_at_normal_priority() was called
};

}  // namespace linecap
