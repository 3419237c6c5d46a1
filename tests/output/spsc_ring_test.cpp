#include "util/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace linecap {
namespace {

TEST(SpscRing, RoundsCapacityUpToPowerOfTwo) {
    EXPECT_EQ(SpscRing<int>(1).capacity(), 1u);
    EXPECT_EQ(SpscRing<int>(5).capacity(), 8u);
    EXPECT_EQ(SpscRing<int>(32).capacity(), 32u);
}

TEST(SpscRing, FifoUntilFullThenRefusesAndEmptyReturnsNull) {
    SpscRing<int> ring(4);
    int items[5] = {};
    EXPECT_EQ(ring.pop(), nullptr);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.push(&items[i]));
    EXPECT_FALSE(ring.push(&items[4]));
    EXPECT_EQ(ring.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.pop(), &items[i]);
    EXPECT_EQ(ring.pop(), nullptr);
    EXPECT_EQ(ring.size(), 0u);
}

TEST(SpscRing, WrapsAroundManyTimes) {
    SpscRing<int> ring(4);
    int items[3] = {};
    for (int round = 0; round < 1000; ++round) {
        for (int& item : items) ASSERT_TRUE(ring.push(&item));
        for (int& item : items) ASSERT_EQ(ring.pop(), &item);
    }
}

// The consumer sees what is queued without taking it, across the wrap, oldest first.
TEST(SpscRing, ForEachQueuedVisitsWhatIsNotPoppedYet) {
    SpscRing<int> ring(4);
    int items[6] = {};
    const auto queued = [&] {
        std::vector<int*> seen;
        ring.for_each_queued([&](int* item) { seen.push_back(item); });
        return seen;
    };
    EXPECT_TRUE(queued().empty());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(ring.push(&items[i]));
    ASSERT_EQ(ring.pop(), &items[0]);
    for (int i = 3; i < 5; ++i) ASSERT_TRUE(ring.push(&items[i]));  // wraps
    EXPECT_EQ(queued(), (std::vector<int*>{&items[1], &items[2], &items[3], &items[4]}));
    EXPECT_EQ(ring.pop(), &items[1]);  // nothing was taken by looking
    EXPECT_EQ(queued(), (std::vector<int*>{&items[2], &items[3], &items[4]}));
}

// One producer, one consumer, a small ring so both sides hit full and empty constantly:
// every item arrives exactly once and in order.
TEST(SpscRing, TwoThreadsPassAMillionItemsInOrder) {
    constexpr size_t kItems = 1'000'000;
    std::vector<uint32_t> items(kItems);
    SpscRing<uint32_t> ring(64);

    std::thread producer([&] {
        for (size_t i = 0; i < kItems; ++i)
            while (!ring.push(&items[i])) std::this_thread::yield();
    });

    size_t received = 0;
    size_t out_of_order = 0;
    while (received < kItems) {
        uint32_t* item = ring.pop();
        if (item == nullptr) {
            std::this_thread::yield();
            continue;
        }
        if (item != &items[received]) ++out_of_order;
        ++received;
    }
    producer.join();

    EXPECT_EQ(out_of_order, 0u);
    EXPECT_EQ(ring.pop(), nullptr);
}

}  // namespace
}  // namespace linecap
