#include "output/writer.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <cstdlib>
#include <latch>
#include <system_error>
#include <thread>

#include "archive/manifest_hasher.hpp"
#include "archive/retention.hpp"
#include "format/pcap_format.hpp"
#include "output/capture_file.hpp"
#include "output/stream_writer.hpp"
#include "util/follow_directory.hpp"
#include "util/io_status.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

// How long a writer thread sleeps after a pass over its streams found no full block. The
// writer runs on the control core, never on a capture core, so sleeping costs no capture
// capacity. 200 µs is tiny next to the slack the block pool gives the workers (32 blocks
// of 1 MiB last ~27 ms even at 10 Gbit/s line rate), so it adds no writer_full risk, and
// it keeps an idle writer near 0% CPU.
constexpr auto kIdleSleep = std::chrono::microseconds(200);

constexpr size_t kBlockAlignment = 4096;
constexpr unsigned kMaxBlockSizeKb = 16 * 1024;

Status validate(const OutputConfig& config) {
    if (config.block_size_kb == 0 || config.block_size_kb % 4 != 0 ||
        config.block_size_kb > kMaxBlockSizeKb)
        return config_error("output.block_size_kb: expected a multiple of 4 up to " +
                            std::to_string(kMaxBlockSizeKb) + ", got " +
                            std::to_string(config.block_size_kb));
    if (config.blocks_per_queue == 0) return config_error("output.blocks_per_queue: must be at least 1");
    return {};
}

Result<UniqueFd> open_output_directory(const std::string& directory, const std::string& key) {
    const std::string what = key + " '" + directory + "'";
    struct stat st {};
    if (::stat(directory.c_str(), &st) != 0) return config_error(what + ": " + errno_text(errno));
    if (!S_ISDIR(st.st_mode)) return config_error(what + ": " + errno_text(ENOTDIR));
    if (::access(directory.c_str(), W_OK | X_OK) != 0)
        return config_error(what + ": not writable: " + errno_text(errno));
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return config_error(what + ": " + errno_text(errno));
    return UniqueFd(fd);
}

}  // namespace

BlockMemory heap_block_memory() {
    return BlockMemory{
        [](size_t bytes, size_t align, int /*socket*/) -> void* {
            // aligned_alloc wants the size to be a multiple of the alignment.
            return std::aligned_alloc(align, (bytes + align - 1) / align * align);
        },
        [](void* p) { std::free(p); },
    };
}

void VolumeCounters::count_error(int error) {
    std::atomic<uint64_t>& counter = error == EIO      ? errors_eio
                                     : error == EROFS  ? errors_erofs
                                     : error == ENOSPC ? errors_enospc
                                     : error == EDQUOT ? errors_edquot
                                                       : errors_other;
    counter.fetch_add(1, std::memory_order_relaxed);
}

namespace {

constexpr uint32_t kNoOwner = 0;

// A slot's owner word: the writer thread that consumes the stream's rings (thread + 1,
// shifted) and whether it is inside its turn on the stream now (busy).
constexpr uint32_t owned(size_t thread, bool busy) { return static_cast<uint32_t>(thread + 1) << 1 | (busy ? 1 : 0); }
constexpr size_t owner_thread(uint32_t word) { return (word >> 1) - 1; }
constexpr bool is_busy(uint32_t word) { return (word & 1) != 0; }

uint64_t steady_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

}  // namespace

// One stream and everything the writer keeps for it.
//
// The hand-over between volumes. The stream's rings are single-producer/single-consumer:
// the worker is the only producer of `full_blocks` and consumer of `free_blocks`, and at
// any moment exactly one writer thread may pop `full_blocks` and push `free_blocks` — the
// thread in `owner`. A thread takes its turn on the stream by moving `owner` from
// owned(t, idle) to owned(t, busy) (compare-exchange), pops one block, writes it, pushes
// it back to `free_blocks` and stores owned(t, idle) (release). Another thread takes the
// stream over only by a compare-exchange from an idle word (or from kNoOwner after the
// owner released it), never from a busy one: so a thread stalled in the kernel inside a
// write keeps the stream (its block, and the blocks queued behind it, wait; the worker
// counts writer_full when the ring is full) until the write returns, and then finds the
// stream gone or releases it itself; the taking-over thread's acquire sees everything the
// previous owner did with the rings and the counters. Streams the stalled thread owns
// but is not writing move at once. A file the stream left open on a volume is finished
// by that volume's thread (its StreamWriter for the stream is never used by another).
struct StreamSlot {
    StreamSlot(StreamId id, uint32_t index, size_t blocks) : stream(std::move(id), index, blocks) {}

    Stream stream;
    StreamCounters counters;
    std::vector<WriteBlock> blocks;       // fixed size: the rings hold pointers into it
    std::vector<std::unique_ptr<StreamWriter>> writers;  // one per volume
    uint64_t next_seq = 0;                // the stream's file counter (owner only)
    std::atomic<uint32_t> target{0};      // the volume the stream is placed on
    std::atomic<uint32_t> owner{kNoOwner};
};

// One capture volume: its directory, retention, manifest hasher and what its streams'
// writers share.
struct Volume {
    size_t index = 0;
    VolumeConfig config;
    UniqueFd dir_fd;
    VolumeCounters counters;
    VolumeFault fault;
    RetentionCounters retention_counters;
    std::unique_ptr<RetentionService> retention;
    ManifestCounters manifest_counters;
    std::unique_ptr<ManifestHasher> hasher;
    WriterContext context;
    std::atomic<bool> healthy{true};
    // The probe (one thread per volume: a probe may stall as a write does).
    std::thread probe_thread;
    std::atomic<bool> probe_now{false};
};

// What the watchdog sees of a writer thread: when its current turn on a stream (or its
// tick) started, 0 while it is between them.
struct alignas(64) ThreadClock {
    std::atomic<uint64_t> busy_since_ns{0};
};

struct Writer::Impl {
    ~Impl() {
        for (auto& volume : volumes) {
            if (volume->hasher) volume->hasher->stop();  // writes the manifests it owes (for a while)
            if (volume->retention) volume->retention->stop();
        }
        for (auto& slot : slots)
            for (WriteBlock& block : slot->blocks)
                if (block.data != nullptr) memory.release(block.data);
    }

    // Writer threads per volume; thread t serves volume t / per_volume, and of the streams
    // those with index % per_volume == t % per_volume.
    size_t threads_per_volume() const {
        return std::min<size_t>(std::max(config.writer_threads, 1u), std::max<size_t>(slots.size(), 1));
    }
    size_t thread_count() const { return threads_per_volume() * volumes.size(); }
    size_t volume_of_thread(size_t t) const { return t / threads_per_volume(); }
    size_t thread_for(size_t slot, size_t volume) const {
        return volume * threads_per_volume() + slot % threads_per_volume();
    }

    // Thread `t`'s turn on the slot if it owns it or may take it over; false otherwise
    // (a file it left open on its volume is finished then).
    bool enter(StreamSlot& slot, size_t t) {
        const size_t v = volume_of_thread(t);
        uint32_t word = slot.owner.load(std::memory_order_acquire);
        if (word == owned(t, false))
            return slot.owner.compare_exchange_strong(word, owned(t, true), std::memory_order_acquire);
        if (slot.target.load(std::memory_order_acquire) == v && !is_busy(word) &&
            (word == kNoOwner || !volumes[volume_of_thread(owner_thread(word))]->healthy.load())) {
            if (!slot.owner.compare_exchange_strong(word, owned(t, true), std::memory_order_acquire)) return false;
            if (word != kNoOwner) volumes[volume_of_thread(owner_thread(word))]->counters.failovers.fetch_add(1);
            slot.writers[v]->take_over();
            return true;
        }
        // Not ours: a file left open here when the stream moved away is finished (as far
        // as it was written; a failed volume may leave it to startup recovery).
        if (slot.writers[v]->has_open_file()) finish_left(*slot.writers[v], t);
        return false;
    }

    // Ends thread `t`'s turn: the stream stays, or goes where it is placed now — at once
    // from a failed volume, at the open file's end to a healthy one (a re-admitted
    // volume gets streams back at their next file).
    void leave(StreamSlot& slot, size_t t) {
        const size_t v = volume_of_thread(t);
        const size_t target = slot.target.load(std::memory_order_acquire);
        StreamWriter& writer = *slot.writers[v];
        const bool move = target != v && (!volumes[v]->healthy.load() || writer.near_rotation(block_bytes));
        if (!move) {
            slot.owner.store(owned(t, false), std::memory_order_release);
            return;
        }
        if (!volumes[v]->healthy.load()) volumes[v]->counters.failovers.fetch_add(1);
        slot.owner.store(kNoOwner, std::memory_order_release);
        // Ours alone from here, even though the stream is not: see StreamSlot.
        if (writer.has_open_file()) finish_left(writer, t);
    }

    // Thread `t` finishes the file a stream left open on its volume; an error doing so is
    // the volume's (and is not left behind to fail it again once it is re-admitted). Timed
    // by the watchdog like a turn: a thread stuck here must not see its volume re-admitted.
    void finish_left(StreamWriter& writer, size_t t) {
        clocks[t].busy_since_ns.store(steady_ns(), std::memory_order_relaxed);
        writer.finish();
        clocks[t].busy_since_ns.store(0, std::memory_order_relaxed);
        if (const int error = writer.take_failure(); error != 0) fail_volume(volume_of_thread(t), error, false);
    }

    // One turn of thread `t` on each stream it serves and may enter: `work(slot, writer)`
    // with the stream's writer for the thread's volume, timed by the watchdog, and a
    // failure it met fails the volume.
    template <class Work>
    void each_turn(size_t t, Work&& work) {
        const size_t step = threads_per_volume();
        const size_t v = volume_of_thread(t);
        for (size_t i = t % step; i < slots.size(); i += step) {
            StreamSlot& slot = *slots[i];
            if (!enter(slot, t)) continue;
            clocks[t].busy_since_ns.store(steady_ns(), std::memory_order_relaxed);
            work(slot, *slot.writers[v]);
            if (const int error = slot.writers[v]->take_failure(); error != 0) fail_volume(v, error, false);
            clocks[t].busy_since_ns.store(0, std::memory_order_relaxed);
            leave(slot, t);
        }
    }

    // Files a failure left on thread `t`'s volume are finished once it is healthy again,
    // first thing in each pass (the file system it holds now may be a repaired one: only
    // then is it known what of them it kept). Timed like a turn.
    void finish_left_files(size_t t) {
        const size_t v = volume_of_thread(t);
        if (!volumes[v]->healthy.load()) return;
        for (size_t i = t % threads_per_volume(); i < slots.size(); i += threads_per_volume()) {
            StreamWriter& writer = *slots[i]->writers[v];
            if (!writer.has_left_file()) continue;
            clocks[t].busy_since_ns.store(steady_ns(), std::memory_order_relaxed);
            writer.finish_left_files();
            clocks[t].busy_since_ns.store(0, std::memory_order_relaxed);
            if (const int error = writer.take_failure(); error != 0) {
                fail_volume(v, error, false);
                return;
            }
        }
    }

    // One round over the streams thread `t` serves, one block each so a busy stream
    // cannot starve the others. Returns whether any was found.
    bool pass(size_t t) {
        finish_left_files(t);
        bool found = false;
        each_turn(t, [&](StreamSlot& slot, StreamWriter& writer) {
            WriteBlock* block = slot.stream.full_blocks.pop();
            if (block == nullptr) return;
            found = true;
            writer.process(block);
            if (block_written) block_written(slot.stream, *block);
            block->reset();
            // Cannot fail: the free ring has room for every block of the stream.
            slot.stream.free_blocks.push(block);
        });
        return found;
    }

    void tick(size_t t) {
        const auto now = std::chrono::steady_clock::now();
        each_turn(t, [&](StreamSlot&, StreamWriter& writer) { writer.tick(now); });
    }

    // At stop: everything queued is written by the stream's owner, and every file open
    // on the thread's volume is finished.
    void drain_and_finish(size_t t) {
        while (pass(t)) {
        }
        const size_t step = threads_per_volume();
        const size_t v = volume_of_thread(t);
        for (size_t i = t % step; i < slots.size(); i += step) slots[i]->writers[v]->finish();
    }

    void run(size_t t) {
        while (running.load(std::memory_order_acquire)) {
            const bool found = pass(t);
            // Every pass, not only idle ones: a quiet stream next to a busy one still
            // gets its interval fsync.
            tick(t);
            if (!found) std::this_thread::sleep_for(kIdleSleep);
        }
        drain_and_finish(t);
    }

    // --- volume health (any thread; placement under placement_mutex) -----------------

    void fail_volume(size_t v, int error, bool stalled) {
        Volume& volume = *volumes[v];
        if (!volume.healthy.exchange(false)) return;
        volume.counters.healthy.store(0);
        volume.counters.failures.fetch_add(1);
        if (stalled) volume.counters.stalls.fetch_add(1);
        // The errno by name: the stream's own log line has its text (once per episode).
        const char* name = strerrorname_np(error);
        spdlog::error("volume {} failed ({}); {}", volume.config.directory,
                      stalled ? "a write did not return within output.volume_stall_timeout_ms, " +
                                    std::to_string(config.volume_stall_timeout_ms) + " ms"
                              : std::string(name != nullptr ? name : "errno " + std::to_string(error)),
                      volumes.size() > 1 ? "its streams move to the healthy volumes; probing it every " +
                                               std::to_string(config.volume_probe_interval_s) + " s"
                                         : "probing it every " + std::to_string(config.volume_probe_interval_s) + " s");
        place(std::nullopt);
        wake_probes();
    }

    void readmit(size_t v) {
        Volume& volume = *volumes[v];
        if (volume.healthy.exchange(true)) return;
        volume.counters.healthy.store(1);
        volume.counters.readmissions.fetch_add(1);
        spdlog::warn("volume {} works again: re-admitted", volume.config.directory);
        if (volume.hasher) volume.hasher->rescan();
        place(v);
    }

    // Streams on failed volumes go to the healthy volume with the fewest streams; with
    // `readmitted`, streams also move to it from the volumes holding more than their share.
    // With no healthy volume the streams stay where they are: their writes fail and are
    // counted until a volume works again.
    void place(std::optional<size_t> readmitted) {
        std::lock_guard lock(placement_mutex);
        std::vector<size_t> load(volumes.size(), 0);
        size_t healthy = 0;
        for (const auto& volume : volumes) healthy += volume->healthy.load() ? 1 : 0;
        for (const auto& slot : slots) ++load[slot->target.load()];
        const auto least = [&]() -> std::optional<size_t> {
            std::optional<size_t> best;
            for (size_t v = 0; v < volumes.size(); ++v)
                if (volumes[v]->healthy.load() && (!best || load[v] < load[*best])) best = v;
            return best;
        };
        for (const auto& slot : slots) {
            const size_t from = slot->target.load();
            if (volumes[from]->healthy.load()) continue;
            const std::optional<size_t> to = least();
            if (!to) break;
            --load[from];
            ++load[*to];
            slot->target.store(static_cast<uint32_t>(*to), std::memory_order_release);
        }
        if (readmitted && healthy > 0) {
            const size_t share = slots.size() / healthy;
            for (const auto& slot : slots) {
                const size_t from = slot->target.load();
                if (load[*readmitted] >= share) break;
                if (from == *readmitted || load[from] <= share) continue;
                --load[from];
                ++load[*readmitted];
                slot->target.store(static_cast<uint32_t>(*readmitted), std::memory_order_release);
            }
        }
        for (size_t v = 0; v < volumes.size(); ++v) volumes[v]->counters.streams.store(load[v]);
    }

    void wake_probes() {
        std::lock_guard lock(monitor_mutex);
        monitor_wake.notify_all();
    }

    // The watchdog: a writer thread in one turn longer than the bound is stalled in the
    // kernel, and its volume failed.
    void watch() {
        const uint64_t bound_ns = uint64_t{config.volume_stall_timeout_ms} * 1'000'000;
        std::unique_lock lock(monitor_mutex);
        while (running.load(std::memory_order_acquire)) {
            monitor_wake.wait_for(lock, std::chrono::milliseconds(std::max(config.volume_stall_timeout_ms / 10, 10u)));
            const uint64_t now = steady_ns();
            for (size_t t = 0; t < thread_count(); ++t) {
                const uint64_t since = clocks[t].busy_since_ns.load(std::memory_order_relaxed);
                if (since != 0 && now > since && now - since > bound_ns) {
                    lock.unlock();
                    fail_volume(volume_of_thread(t), ETIMEDOUT, true);
                    lock.lock();
                }
            }
        }
    }

    // A volume's threads are not in a turn that has lasted beyond the stall bound.
    bool threads_responsive(size_t v) const {
        const uint64_t bound_ns = uint64_t{config.volume_stall_timeout_ms} * 1'000'000;
        const uint64_t now = steady_ns();
        for (size_t t = v * threads_per_volume(); t < (v + 1) * threads_per_volume(); ++t) {
            const uint64_t since = clocks[t].busy_since_ns.load(std::memory_order_relaxed);
            if (since != 0 && now > since && now - since > bound_ns) return false;
        }
        return true;
    }

    // Writes, syncs and removes a small file on the volume, and sees room for the next
    // blocks; true: it works.
    bool probe(const Volume& volume) const {
        // Repaired and mounted again on its path: the probe (and every user of the
        // descriptor) goes on in the new file system.
        if (follow_directory(volume.dir_fd.get(), volume.config.directory))
            spdlog::warn("output volume {}: the directory is another one now (mounted again?); following it",
                         volume.config.directory);
        const char* name = ".linecap-volume-probe";
        const int fd = ::openat(volume.dir_fd.get(), name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return false;
        static const char kBytes[4096] = {};
        bool ok = ::write(fd, kBytes, sizeof kBytes) == static_cast<ssize_t>(sizeof kBytes) && ::fsync(fd) == 0;
        ::close(fd);
        ok = ::unlinkat(volume.dir_fd.get(), name, 0) == 0 && ok;
        struct statvfs vfs {};
        if (ok && ::fstatvfs(volume.dir_fd.get(), &vfs) == 0)
            ok = uint64_t{vfs.f_bavail} * vfs.f_frsize >= context_room_bytes;
        return ok;
    }

    // A volume's probe thread: while the volume is failed, a probe every interval (or
    // at once after probe_failed_volumes()).
    void probe_loop(size_t v) {
        Volume& volume = *volumes[v];
        std::unique_lock lock(monitor_mutex);
        auto next = std::chrono::steady_clock::now();
        while (running.load(std::memory_order_acquire)) {
            monitor_wake.wait_until(lock, next, [&] {
                return !running.load() || volume.probe_now.load() ||
                       (!volume.healthy.load() && std::chrono::steady_clock::now() >= next);
            });
            if (!running.load()) break;
            const bool asked = volume.probe_now.exchange(false);
            if (volume.healthy.load()) {
                next = std::chrono::steady_clock::now() + std::chrono::seconds(config.volume_probe_interval_s);
                continue;
            }
            if (!asked && std::chrono::steady_clock::now() < next) continue;
            lock.unlock();
            const bool works = probe(volume) && threads_responsive(v);
            if (works) {
                readmit(v);
            } else {
                volume.counters.probe_failures.fetch_add(1);
            }
            lock.lock();
            next = std::chrono::steady_clock::now() + std::chrono::seconds(config.volume_probe_interval_s);
        }
    }

    BlockMemory memory;
    OutputConfig config;
    size_t block_bytes = 0;
    uint64_t context_room_bytes = 0;
    WriteLatency latency;
    std::atomic<bool> direct_io_warned{false};
    Writer::FileFinishedHook file_finished;   // set before start()
    std::vector<std::unique_ptr<Volume>> volumes;
    std::vector<std::unique_ptr<StreamSlot>> slots;
    Writer::BlockWrittenHook block_written;  // set before start(), read by the writer threads
    std::unique_ptr<ThreadClock[]> clocks;
    std::vector<std::thread> threads;
    std::thread watchdog;
    std::mutex placement_mutex;
    std::mutex monitor_mutex;
    std::condition_variable monitor_wake;
    std::atomic<bool> running{false};
    bool started = false;
    bool stopped = false;

    // The files being written on volume `v`, for its retention budgets (see retention.hpp).
    // With size rotation each stream reserves two rotation sizes: the file being written and
    // the next one, which the writer opens the moment it has finished this one — before
    // retention has seen the finished file and made room for the next. A stream counts on
    // the volume it is placed on, and on the one it still has a file open on.
    InProgressBytes in_progress(size_t v) const {
        InProgressBytes b;
        const uint64_t rotation = config.rotate_size_bytes;
        for (const auto& slot : slots) {
            const uint64_t open = slot->writers[v]->open_file_bytes();
            if (open == 0 && slot->target.load(std::memory_order_relaxed) != v) continue;
            b.actual += open;
            b.reserved += rotation > 0 ? std::max(open, rotation) + rotation : open;
        }
        return b;
    }
};

Result<std::unique_ptr<Writer>> Writer::create(const OutputConfig& config,
                                               std::vector<StreamSpec> streams,
                                               BlockMemory memory) {
    if (Status valid = validate(config); !valid) return valid.error();
    Result<FileTemplate> file_template = FileTemplate::compile(config.file_template);
    if (!file_template) return file_template.error().context("output.file_template");
    if (!memory.allocate || !memory.release) return runtime_error("writer: block memory functions missing");

    auto impl = std::make_unique<Impl>();
    impl->memory = std::move(memory);
    impl->config = config;
    impl->block_bytes = size_t{config.block_size_kb} * 1024;
    const size_t block_bytes = impl->block_bytes;
    const uint64_t run_start_ns = utc_now_ns();
    const uint64_t room_bytes = 2 * block_bytes * std::max<size_t>(streams.size(), 1);
    impl->context_room_bytes = room_bytes;
    Impl* raw = impl.get();
    const std::vector<VolumeConfig> volume_configs = config.volume_list();
    for (size_t v = 0; v < volume_configs.size(); ++v) {
        Result<UniqueFd> dir = open_output_directory(
            volume_configs[v].directory,
            config.volumes.empty() ? std::string("output.directory") : "output.volumes[" + std::to_string(v) + "].directory");
        if (!dir) return dir.error();
        Volume& volume = *impl->volumes.emplace_back(std::make_unique<Volume>());
        volume.index = v;
        volume.config = volume_configs[v];
        volume.dir_fd = std::move(dir.value());
        volume.counters.healthy.store(1);
        OutputConfig volume_output = config;  // what the volume's services see: its directory and budget
        volume_output.directory = volume.config.directory;
        volume_output.retention = volume.config.retention;
        volume.context = WriterContext{volume_output, file_template.value(), volume.dir_fd.get(), &impl->latency,
                                       &impl->direct_io_warned};
        volume.context.run_start_ns = run_start_ns;
        volume.context.run_id = std::to_string(run_start_ns);
        volume.context.room_bytes = room_bytes;
        volume.context.volume = &volume.counters;
        volume.context.fault = &volume.fault;
        volume.context.file_finished = [raw, v](const std::string& name) {
            if (raw->file_finished) raw->file_finished(v, name);
        };
        // One retention per volume, for all its streams and writer threads. The
        // StreamWriters keep a reference to the context, so the pointers set here reach them.
        volume.retention = std::make_unique<RetentionService>(
            volume_output, volume.dir_fd.get(), RetentionEnvironment{{}, [raw, v] { return raw->in_progress(v); }},
            volume.retention_counters);
        volume.context.retention = volume.retention.get();
        if (config.manifest) {
            volume.hasher = std::make_unique<ManifestHasher>(
                HasherContext{volume_output, volume.dir_fd.get(), volume.retention.get(), room_bytes}, streams.size(),
                volume.manifest_counters);
            volume.context.hasher = volume.hasher.get();
        }
    }

    for (uint32_t index = 0; index < streams.size(); ++index) {
        StreamSpec& spec = streams[index];
        const std::string label = "stream port " + spec.id.port + " queue " + std::to_string(spec.id.queue);
        // Owned by impl before any block is allocated, so a failure below releases them all.
        StreamSlot& slot = *impl->slots.emplace_back(
            std::make_unique<StreamSlot>(spec.id, index, config.blocks_per_queue));
        const uint32_t snaplen =
            spec.snaplen == 0 ? pcap::kMaxSnaplen : std::min(spec.snaplen, pcap::kMaxSnaplen);
        slot.stream.snaplen = snaplen;

        slot.blocks.resize(config.blocks_per_queue);
        for (size_t b = 0; b < slot.blocks.size(); ++b) {
            void* data = impl->memory.allocate(block_bytes, kBlockAlignment, spec.socket);
            if (data == nullptr)
                return runtime_error(label + ": allocating write block " + std::to_string(b) + " of " +
                                     std::to_string(config.block_size_kb) + " KiB on socket " +
                                     std::to_string(spec.socket) + " failed");
            WriteBlock& block = slot.blocks[b];
            block.data = static_cast<uint8_t*>(data);  // owned from here: Impl releases it
            if (reinterpret_cast<uintptr_t>(data) % kBlockAlignment != 0)
                return runtime_error(label + ": block memory is not 4 KiB aligned");
            block.capacity = static_cast<uint32_t>(block_bytes);
            block.stream = index;
            slot.stream.free_blocks.push(&block);
        }

        for (auto& volume : impl->volumes) {
            AlignedBuffer staging;
            if (config.o_direct) {
                staging = AlignedBuffer(direct_io_staging_size(block_bytes));
                if (staging.data() == nullptr)
                    return runtime_error(label + ": allocating the O_DIRECT staging buffer failed");
            }
            slot.writers.push_back(std::make_unique<StreamWriter>(volume->context, index, spec, snaplen, slot.counters,
                                                                  slot.next_seq, std::move(staging)));
        }
        // Balanced: stream i on volume i mod volumes, owned by that volume's thread for it.
        const size_t v = index % impl->volumes.size();
        slot.target.store(static_cast<uint32_t>(v));
        slot.owner.store(owned(impl->thread_for(index, v), false));
    }
    for (auto& slot : impl->slots) impl->volumes[slot->target.load()]->counters.streams.fetch_add(1);
    impl->clocks = std::make_unique<ThreadClock[]>(std::max<size_t>(impl->thread_count(), 1));

    for (const auto& volume : impl->volumes) {
        const RetentionConfig& retention = volume->config.retention;
        const size_t on_volume = volume->counters.streams.load();
        if (retention.max_bytes > 0 && config.rotate_size_bytes > 0 &&
            2 * config.rotate_size_bytes * on_volume >= retention.max_bytes)
            spdlog::warn("retention max_bytes of {} ({} bytes) leaves no room for finished files: each of its {} "
                         "streams reserves two rotation sizes ({} bytes each) for the files it writes",
                         volume->config.directory, retention.max_bytes, on_volume, config.rotate_size_bytes);
    }
    return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Writer::~Writer() { stop(); }

size_t Writer::stream_count() const { return impl_->slots.size(); }
Stream& Writer::stream(size_t index) { return impl_->slots.at(index)->stream; }
const StreamCounters& Writer::counters(size_t index) const { return impl_->slots.at(index)->counters; }
const WriteLatency& Writer::latency() const { return impl_->latency; }
const RetentionCounters& Writer::retention() const { return impl_->volumes.front()->retention_counters; }
const ManifestCounters* Writer::manifest() const { return volume_manifest(0); }

size_t Writer::volume_count() const { return impl_->volumes.size(); }
const std::string& Writer::volume_directory(size_t volume) const { return impl_->volumes.at(volume)->config.directory; }
const VolumeCounters& Writer::volume_counters(size_t volume) const { return impl_->volumes.at(volume)->counters; }
const RetentionCounters& Writer::volume_retention(size_t volume) const {
    return impl_->volumes.at(volume)->retention_counters;
}
const ManifestCounters* Writer::volume_manifest(size_t volume) const {
    const Volume& v = *impl_->volumes.at(volume);
    return v.hasher ? &v.manifest_counters : nullptr;
}
size_t Writer::stream_volume(size_t index) const { return impl_->slots.at(index)->target.load(); }
VolumeFault* Writer::volume_fault(size_t volume) {
    return volume < impl_->volumes.size() ? &impl_->volumes[volume]->fault : nullptr;
}

void Writer::probe_failed_volumes() {
    for (auto& volume : impl_->volumes)
        if (!volume->healthy.load()) volume->probe_now.store(true);
    impl_->wake_probes();
}

size_t Writer::backlog_blocks() const {
    size_t n = 0;
    for (const auto& slot : impl_->slots) n += slot->stream.full_blocks.size();
    return n;
}

void Writer::set_snaplen(size_t index, uint32_t snaplen) {
    const uint32_t clamped = snaplen == 0 ? pcap::kMaxSnaplen : std::min(snaplen, pcap::kMaxSnaplen);
    for (auto& writer : impl_->slots.at(index)->writers) writer->set_snaplen(clamped);
}

void Writer::on_file_finished(FileFinishedHook hook) { impl_->file_finished = std::move(hook); }

void Writer::on_block_written(BlockWrittenHook hook) { impl_->block_written = std::move(hook); }

void Writer::sidecar_changed(size_t volume, const std::string& name) {
    impl_->volumes.at(volume)->retention->sidecar_changed(name);
}

Status Writer::start(const ThreadPlacement& placement) {
    Impl& impl = *impl_;
    if (impl.started || impl.stopped) return runtime_error("writer: start() after start() or stop()");
    impl.started = true;
    impl.running.store(true, std::memory_order_release);
    for (auto& volume : impl.volumes) {
        volume->retention->start();
        if (volume->hasher) {
            if (Status s = volume->hasher->start(); !s) {
                impl.running.store(false, std::memory_order_release);
                return s;
            }
        }
    }
    const size_t n = impl.thread_count();
    // Each thread moves itself (a nice value belongs to the thread) before its first block;
    // start() returns once all have, with the first failure.
    std::vector<Status> placed(n);
    std::latch all_placed(static_cast<std::ptrdiff_t>(n));
    size_t launched = 0;
    try {
        for (size_t t = 0; t < n; ++t) {
            std::thread& thread = impl.threads.emplace_back([&impl, &placement, &placed, &all_placed, t] {
                placed[t] = apply_to_this_thread(placement);
                const bool ok = static_cast<bool>(placed[t]);
                all_placed.count_down();  // `placement` and `placed` may be gone after this
                if (ok) impl.run(t);
            });
            ++launched;
            // Named from here rather than by the thread itself, so the name is in place
            // (for top, gdb, tests) by the time start() returns.
            const std::string name = "lc-writer-" + std::to_string(t);
            pthread_setname_np(thread.native_handle(), name.c_str());
        }
        impl.watchdog = std::thread([&impl] { impl.watch(); });
        pthread_setname_np(impl.watchdog.native_handle(), "lc-vol-watch");
        for (size_t v = 0; v < impl.volumes.size(); ++v) {
            impl.volumes[v]->probe_thread = std::thread([&impl, v] { impl.probe_loop(v); });
            pthread_setname_np(impl.volumes[v]->probe_thread.native_handle(), "lc-vol-probe");
        }
    } catch (const std::system_error& e) {
        all_placed.count_down(static_cast<std::ptrdiff_t>(n - launched));
        all_placed.wait();
        stop();  // the threads that did start drain and finalise their streams
        return runtime_error(std::string("writer: starting thread: ") + e.what());
    }
    all_placed.wait();
    for (Status& s : placed) {
        if (!s) {
            stop();  // a thread that failed finalises nothing; stop() drains its streams
            return runtime_error("writer thread: " + s.error().message);
        }
    }
    return {};
}

void Writer::stop() {
    Impl& impl = *impl_;
    if (impl.stopped) return;
    impl.stopped = true;
    impl.running.store(false, std::memory_order_release);
    impl.wake_probes();
    for (std::thread& thread : impl.threads) thread.join();
    impl.threads.clear();
    if (impl.watchdog.joinable()) impl.watchdog.join();
    for (auto& volume : impl.volumes)
        if (volume->probe_thread.joinable()) volume->probe_thread.join();
    // The threads drained and finalised their own streams. This covers a writer that was
    // never started or only partly started; joining made their work visible here.
    for (size_t t = 0; t < impl.thread_count(); ++t) impl.drain_and_finish(t);
    for (auto& volume : impl.volumes) {
        // The hasher writes the manifests of the files just finished (for its stop budget;
        // the rest keep the writer's record in their pending marker for the next start).
        if (volume->hasher) volume->hasher->stop();
        // Last: it learns about the files just finished and makes one more pass.
        volume->retention->stop();
    }
}

}  // namespace linecap
