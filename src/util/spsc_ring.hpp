// Single-producer single-consumer ring of pointers, lock-free, fixed capacity.
//
// Used to hand write blocks between one worker lcore and one writer thread. It does not
// need EAL memory (unlike rte_ring), so it is unit-testable on its own; the acquire/release
// pair on head/tail is all the synchronisation the hand-off needs.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>

namespace linecap {

template <typename T>
class SpscRing {
public:
    // capacity is rounded up to a power of two.
    explicit SpscRing(size_t capacity) {
        size_t n = 1;
        while (n < capacity) n <<= 1;
        mask_ = n - 1;
        slots_ = std::make_unique<T*[]>(n);
    }
    SpscRing(const SpscRing&) = delete;
    SpscRing& operator=(const SpscRing&) = delete;

    size_t capacity() const { return mask_ + 1; }

    // Producer side. Returns false when full.
    bool push(T* item) {
        const size_t head = head_.load(std::memory_order_relaxed);
        if (head - cached_tail_ > mask_) {
            cached_tail_ = tail_.load(std::memory_order_acquire);
            if (head - cached_tail_ > mask_) return false;
        }
        slots_[head & mask_] = item;
        head_.store(head + 1, std::memory_order_release);
        return true;
    }

    // Consumer side. Returns nullptr when empty.
    T* pop() {
        const size_t tail = tail_.load(std::memory_order_relaxed);
        if (tail == cached_head_) {
            cached_head_ = head_.load(std::memory_order_acquire);
            if (tail == cached_head_) return nullptr;
        }
        T* item = slots_[tail & mask_];
        tail_.store(tail + 1, std::memory_order_release);
        return item;
    }

    // Consumer side: `f(item)` for every item pushed and not popped yet, oldest first.
    // Items the producer pushes meanwhile may or may not be seen; none is overwritten while
    // this runs, since the producer never reuses a slot the consumer has not popped.
    template <class F>
    void for_each_queued(F&& f) const {
        const size_t head = head_.load(std::memory_order_acquire);
        for (size_t i = tail_.load(std::memory_order_relaxed); i != head; ++i) f(slots_[i & mask_]);
    }

    // Approximate, for metrics (any thread).
    size_t size() const {
        return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
    }

private:
    static constexpr size_t kLine = 64;
    // Producer and consumer indices on separate cache lines, each with the cached copy
    // of the other side's index so the common case touches no shared line.
    alignas(kLine) std::atomic<size_t> head_{0};
    size_t cached_tail_ = 0;
    alignas(kLine) std::atomic<size_t> tail_{0};
    size_t cached_head_ = 0;
    alignas(kLine) size_t mask_ = 0;
    std::unique_ptr<T*[]> slots_;
};

}  // namespace linecap
