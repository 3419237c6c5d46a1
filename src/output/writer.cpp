#include "output/writer.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <latch>
#include <system_error>
#include <thread>

#include "archive/manifest_hasher.hpp"
#include "archive/retention.hpp"
#include "format/pcap_format.hpp"
#include "output/capture_file.hpp"
#include "output/stream_writer.hpp"
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

Result<UniqueFd> open_output_directory(const std::string& directory) {
    const std::string what = "output.directory '" + directory + "'";
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

// One stream and everything the writer keeps for it.
struct StreamSlot {
    StreamSlot(StreamId id, uint32_t index, size_t blocks) : stream(std::move(id), index, blocks) {}

    Stream stream;
    StreamCounters counters;
    std::vector<WriteBlock> blocks;       // fixed size: the rings hold pointers into it
    std::unique_ptr<StreamWriter> writer;
};

struct Writer::Impl {
    ~Impl() {
        if (hasher) hasher->stop();  // writes the manifests it owes (for a while)
        if (retention) retention->stop();
        for (auto& slot : slots)
            for (WriteBlock& block : slot->blocks)
                if (block.data != nullptr) memory.release(block.data);
    }

    size_t thread_count() const {
        return std::min<size_t>(std::max(context.config.writer_threads, 1u), slots.size());
    }

    // One round over the streams thread `t` of `n` owns (stream i → thread i % n), one
    // block each so a busy stream cannot starve the others. Returns whether any was found.
    bool pass(size_t t, size_t n) {
        bool found = false;
        for (size_t i = t; i < slots.size(); i += n) {
            StreamSlot& slot = *slots[i];
            WriteBlock* block = slot.stream.full_blocks.pop();
            if (block == nullptr) continue;
            found = true;
            slot.writer->process(block);
            if (block_written) block_written(slot.stream, *block);
            block->reset();
            // Cannot fail: the free ring has room for every block of the stream.
            slot.stream.free_blocks.push(block);
        }
        return found;
    }

    void tick(size_t t, size_t n) {
        const auto now = std::chrono::steady_clock::now();
        for (size_t i = t; i < slots.size(); i += n) slots[i]->writer->tick(now);
    }

    void drain_and_finish(size_t t, size_t n) {
        while (pass(t, n)) {
        }
        for (size_t i = t; i < slots.size(); i += n) slots[i]->writer->finish();
    }

    void run(size_t t, size_t n) {
        while (running.load(std::memory_order_acquire)) {
            const bool found = pass(t, n);
            // Every pass, not only idle ones: a quiet stream next to a busy one still
            // gets its interval fsync.
            tick(t, n);
            if (!found) std::this_thread::sleep_for(kIdleSleep);
        }
        drain_and_finish(t, n);
    }

    BlockMemory memory;
    UniqueFd dir_fd;
    WriteLatency latency;
    std::atomic<bool> direct_io_warned{false};
    WriterContext context;
    std::vector<std::unique_ptr<StreamSlot>> slots;
    Writer::BlockWrittenHook block_written;  // set before start(), read by the writer threads
    std::vector<std::thread> threads;
    std::atomic<bool> running{false};
    bool started = false;
    bool stopped = false;
    RetentionCounters retention_counters;
    std::unique_ptr<RetentionService> retention;  // reads `slots`: declared after them
    ManifestCounters manifest_counters;
    std::unique_ptr<ManifestHasher> hasher;       // output.manifest

    // The files being written, for the retention budgets (see retention.hpp). With size
    // rotation each stream reserves two rotation sizes: the file being written and the
    // next one, which the writer opens the moment it has finished this one — before
    // retention has seen the finished file and made room for the next.
    InProgressBytes in_progress() const {
        InProgressBytes b;
        const uint64_t rotation = context.config.rotate_size_bytes;
        for (const auto& slot : slots) {
            const uint64_t open = slot->counters.open_file_bytes.load(std::memory_order_relaxed);
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
    Result<UniqueFd> dir = open_output_directory(config.directory);
    if (!dir) return dir.error();

    auto impl = std::make_unique<Impl>();
    impl->memory = std::move(memory);
    impl->dir_fd = std::move(dir.value());
    impl->context = WriterContext{config, std::move(file_template.value()), impl->dir_fd.get(), &impl->latency,
                                  &impl->direct_io_warned};
    impl->context.run_start_ns = utc_now_ns();
    impl->context.run_id = std::to_string(impl->context.run_start_ns);

    const size_t block_bytes = size_t{config.block_size_kb} * 1024;
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

        AlignedBuffer staging;
        if (config.o_direct) {
            staging = AlignedBuffer(direct_io_staging_size(block_bytes));
            if (staging.data() == nullptr)
                return runtime_error(label + ": allocating the O_DIRECT staging buffer failed");
        }
        slot.writer =
            std::make_unique<StreamWriter>(impl->context, index, spec, snaplen, slot.counters, std::move(staging));
    }

    // One retention for all streams and writer threads. The StreamWriters keep a reference
    // to the context, so the pointer set here reaches them.
    Impl* raw = impl.get();
    impl->retention = std::make_unique<RetentionService>(
        config, impl->dir_fd.get(), RetentionEnvironment{{}, [raw] { return raw->in_progress(); }},
        impl->retention_counters);
    impl->context.retention = impl->retention.get();
    impl->context.room_bytes = 2 * block_bytes * std::max<size_t>(streams.size(), 1);
    if (config.manifest) {
        impl->hasher = std::make_unique<ManifestHasher>(
            HasherContext{config, impl->dir_fd.get(), impl->retention.get(), impl->context.room_bytes},
            impl->slots.size(), impl->manifest_counters);
        impl->context.hasher = impl->hasher.get();
    }
    if (config.retention.max_bytes > 0 && config.rotate_size_bytes > 0 &&
        2 * config.rotate_size_bytes * streams.size() >= config.retention.max_bytes)
        spdlog::warn("output.retention.max_bytes ({} bytes) leaves no room for finished files: each of the {} "
                     "streams reserves two rotation sizes ({} bytes each) for the files it writes",
                     config.retention.max_bytes, streams.size(), config.rotate_size_bytes);
    return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Writer::~Writer() { stop(); }

size_t Writer::stream_count() const { return impl_->slots.size(); }
Stream& Writer::stream(size_t index) { return impl_->slots.at(index)->stream; }
const StreamCounters& Writer::counters(size_t index) const { return impl_->slots.at(index)->counters; }
const WriteLatency& Writer::latency() const { return impl_->latency; }
const RetentionCounters& Writer::retention() const { return impl_->retention_counters; }
const ManifestCounters* Writer::manifest() const { return impl_->hasher ? &impl_->manifest_counters : nullptr; }

size_t Writer::backlog_blocks() const {
    size_t n = 0;
    for (const auto& slot : impl_->slots) n += slot->stream.full_blocks.size();
    return n;
}

void Writer::set_snaplen(size_t index, uint32_t snaplen) {
    const uint32_t clamped = snaplen == 0 ? pcap::kMaxSnaplen : std::min(snaplen, pcap::kMaxSnaplen);
    impl_->slots.at(index)->writer->set_snaplen(clamped);
}

void Writer::on_file_finished(std::function<void(const std::string& name)> hook) {
    impl_->context.file_finished = std::move(hook);
}

void Writer::on_block_written(BlockWrittenHook hook) { impl_->block_written = std::move(hook); }

void Writer::sidecar_changed(const std::string& name) { impl_->retention->sidecar_changed(name); }

Status Writer::start(const ThreadPlacement& placement) {
    Impl& impl = *impl_;
    if (impl.started || impl.stopped) return runtime_error("writer: start() after start() or stop()");
    impl.started = true;
    impl.running.store(true, std::memory_order_release);
    impl.retention->start();
    if (impl.hasher) {
        if (Status s = impl.hasher->start(); !s) {
            impl.running.store(false, std::memory_order_release);
            return s;
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
            std::thread& thread = impl.threads.emplace_back([&impl, &placement, &placed, &all_placed, t, n] {
                placed[t] = apply_to_this_thread(placement);
                const bool ok = static_cast<bool>(placed[t]);
                all_placed.count_down();  // `placement` and `placed` may be gone after this
                if (ok) impl.run(t, n);
            });
            ++launched;
            // Named from here rather than by the thread itself, so the name is in place
            // (for top, gdb, tests) by the time start() returns.
            const std::string name = "lc-writer-" + std::to_string(t);
            pthread_setname_np(thread.native_handle(), name.c_str());
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
    for (std::thread& thread : impl.threads) thread.join();
    impl.threads.clear();
    // The threads drained and finalised their own streams. This covers a writer that was
    // never started or only partly started; joining made their work visible here.
    impl.drain_and_finish(0, 1);
    // The hasher writes the manifests of the files just finished (for a while; the rest keep
    // their pending marker for the next start).
    if (impl.hasher) impl.hasher->stop();
    // Last: it learns about the files just finished and makes one more pass.
    impl.retention->stop();
}

}  // namespace linecap
