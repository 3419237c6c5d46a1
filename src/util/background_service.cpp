#include "util/background_service.hpp"

#include <pthread.h>

#include "util/idle_priority.hpp"

namespace linecap {

void BackgroundService::start() {
    {
        const std::lock_guard lock(mutex_);
        if (stopping_ || thread_.joinable()) return;
    }
    before_start();
    thread_ = std::thread([this] {
        if (thread_spec_.idle_priority) lower_to_idle_priority(thread_spec_.who);
        work();
    });
    pthread_setname_np(thread_.native_handle(), thread_spec_.name);
}

void BackgroundService::stop() {
    bool first = false;
    {
        const std::lock_guard lock(mutex_);
        first = !stopping_.exchange(true);
        if (first) on_stop();
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
        after_stop();
    } else if (first) {
        stop_unstarted();
    }
}

void BackgroundService::owe_at_normal_priority() {
    if (!thread_spec_.idle_priority || owing_ || std::this_thread::get_id() != thread_.get_id()) return;
    owing_ = true;
    restore_normal_priority(thread_spec_.who);
}

void BackgroundService::wake() {
    {
        const std::lock_guard lock(mutex_);
        woken_ = true;
        on_wake();
    }
    cv_.notify_one();
}

}  // namespace linecap
