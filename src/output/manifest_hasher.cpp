#include "output/manifest_hasher.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <system_error>

#include "output/stream_writer.hpp"

namespace linecap {
namespace {

constexpr auto kRetryInterval = std::chrono::seconds(1);

std::string path_in(const WriterContext& context, const std::string& name) {
    return context.config.directory + "/" + name;
}

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

ManifestHasher::ManifestHasher(const WriterContext& context, std::vector<Stream*> streams)
    : context_(context), streams_(std::move(streams)), hashes_(streams_.size()) {}

ManifestHasher::~ManifestHasher() { stop(); }

Status ManifestHasher::start() {
    try {
        thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
        return runtime_error(std::string("manifest hasher: starting thread: ") + e.what());
    }
    pthread_setname_np(thread_.native_handle(), "lc-hash");
    return {};
}

void ManifestHasher::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
        thread_.join();
    } else {
        run();  // never started (or stopped already): work off what is queued here
    }
}

size_t ManifestHasher::backlog() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
}

void ManifestHasher::push(Job job) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void ManifestHasher::opened(uint32_t stream, std::span<const uint8_t> header) {
    push(Job{Kind::open, stream, nullptr, {header.begin(), header.end()}, nullptr, {}});
}

void ManifestHasher::appended(uint32_t stream, std::span<const uint8_t> bytes) {
    push(Job{Kind::bytes, stream, nullptr, {bytes.begin(), bytes.end()}, nullptr, {}});
}

void ManifestHasher::appended(WriteBlock* block) { push(Job{Kind::block, block->stream, block, {}, nullptr, {}}); }

void ManifestHasher::give_back(WriteBlock* block) {
    push(Job{Kind::give_back, block->stream, block, {}, nullptr, {}});
}

void ManifestHasher::finished(uint32_t stream, Manifest manifest, FinishedFile file) {
    push(Job{Kind::finish, stream, nullptr, {}, std::make_unique<Manifest>(std::move(manifest)), std::move(file)});
}

void ManifestHasher::abandoned(uint32_t stream) { push(Job{Kind::abandon, stream, nullptr, {}, nullptr, {}}); }

void ManifestHasher::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (jobs_.empty()) {
            if (stopping_) break;
            if (pending_.empty()) {
                wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            } else {
                wake_.wait_for(lock, kRetryInterval, [this] { return stopping_ || !jobs_.empty(); });
                lock.unlock();
                retry_pending(std::chrono::steady_clock::now());
                lock.lock();
            }
            continue;
        }
        Job job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        work(job);
        lock.lock();
    }
    lock.unlock();
    if (!pending_.empty()) {
        last_retry_ = {};
        retry_pending(std::chrono::steady_clock::now());
        for (const Pending& p : pending_)
            spdlog::error("no manifest for {} (could not be written)", path_in(context_, p.manifest.file));
        pending_.clear();
    }
}

void ManifestHasher::work(Job& job) {
    Sha256& hash = hashes_[job.stream];
    switch (job.kind) {
        case Kind::open:
            hash.reset();
            hash.update(job.bytes);
            break;
        case Kind::bytes:
            hash.update(job.bytes);
            break;
        case Kind::block:
            hash.update({job.block->data, job.block->used});
            return_block(job.block);
            break;
        case Kind::give_back:
            return_block(job.block);
            break;
        case Kind::finish:
            complete(job.stream, *job.manifest, job.file);
            break;
        case Kind::abandon:
            hash.reset();
            break;
    }
}

void ManifestHasher::return_block(WriteBlock* block) {
    block->reset();
    // Cannot fail: the free ring has room for every block of the stream.
    streams_[block->stream]->free_blocks.push(block);
}

void ManifestHasher::complete(uint32_t stream, Manifest& manifest, FinishedFile& file) {
    Sha256& hash = hashes_[stream];
    const Sha256::Digest digest = hash.finish();
    if (!hash.ok()) {
        spdlog::error("SHA-256 of {} failed; no manifest", path_in(context_, manifest.file));
    } else {
        manifest.sha256 = Sha256::hex(digest);
        uint64_t bytes = 0;
        const IoStatus status =
            write_manifest(context_.dir_fd, manifest, &bytes);
        if (status.ok()) {
            file.bytes += bytes;
        } else {
            if (pending_.empty())
                spdlog::warn("manifest for {}: {}; retrying every second", path_in(context_, manifest.file),
                             status.message());
            if (status.disk_full() && context_.retention != nullptr)
                context_.retention->request_room(context_.room_bytes);
            // Retention must know the file now (it may be what frees the room the manifest needs).
            pending_.push_back(Pending{manifest});
        }
    }
    if (context_.retention != nullptr) context_.retention->add(file);
    if (context_.file_finished) context_.file_finished(file.name);
}

void ManifestHasher::retry_pending(std::chrono::steady_clock::time_point now) {
    if (pending_.empty() || now - last_retry_ < kRetryInterval) return;
    last_retry_ = now;
    std::vector<Pending> still;
    for (Pending& p : pending_) {
        if (!name_exists(context_.dir_fd, p.manifest.file)) continue;  // deleted meanwhile
        if (write_manifest(context_.dir_fd, p.manifest).ok()) {
            spdlog::info("manifest for {} written", path_in(context_, p.manifest.file));
            if (context_.retention != nullptr) context_.retention->sidecar_changed(p.manifest.file);
        } else {
            still.push_back(std::move(p));
        }
    }
    pending_ = std::move(still);
}

}  // namespace linecap
