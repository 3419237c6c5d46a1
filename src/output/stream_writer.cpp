#include "output/stream_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstring>

#include "output/file_naming.hpp"
#include "output/pcap_format.hpp"

namespace linecap {
namespace {

using Clock = std::chrono::steady_clock;

// "-1" … "-999" after a taken name; beyond that something is badly wrong (a template
// without any time field?) and the open fails with EEXIST rather than loop.
constexpr unsigned kMaxNameAlternatives = 1000;

// Counters have a single writer (this stream's thread): a relaxed store of load + n is
// enough and cheaper than a locked read-modify-write.
void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

std::vector<uint8_t> encode_file_header(FileFormat format, uint32_t snaplen) {
    // Writer::create accepts only pcap for now; pcapng adds its section header and
    // interface description blocks here (and its extension in file_naming).
    (void)format;
    const pcap::FileHeader header = pcap::file_header(snaplen);
    std::vector<uint8_t> bytes(sizeof header);
    std::memcpy(bytes.data(), &header, sizeof header);
    return bytes;
}

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    // Any error other than "no such file" is left for the create to report properly.
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

bool LossEpisode::add(uint64_t packets) {
    lost_packets_ += packets;
    if (active_) return false;
    active_ = true;
    return true;
}

uint64_t LossEpisode::end() {
    if (!active_) return 0;
    const uint64_t lost = lost_packets_;
    active_ = false;
    lost_packets_ = 0;
    return lost;
}

StreamWriter::StreamWriter(const WriterContext& context, const StreamId& id, uint32_t snaplen,
                           StreamCounters& counters, AlignedBuffer direct_io_staging)
    : context_(context),
      id_(id),
      label_("port " + id.port + " queue " + std::to_string(id.queue)),
      counters_(counters),
      snaplen_(snaplen),
      header_snaplen_(snaplen),
      file_header_(encode_file_header(context.config.format, snaplen)),
      direct_io_staging_(std::move(direct_io_staging)) {}

void StreamWriter::process(const WriteBlock& block) {
    assert(block.used <= block.capacity && block.data != nullptr);
    follow_snaplen();
    if (block.packets > 0 && block.used > 0) write_records(block);
    if (block.rotate_after && file_.is_open()) finalise_file();
}

// The acquire pairs with set_snaplen's release through the worker: the control thread
// sets the snap length before it publishes the new capture policy, the worker reads that
// policy before it pushes a block with longer records, and this thread pops the block
// before it gets here. So the raise is always seen before the first longer record.
void StreamWriter::follow_snaplen() {
    const uint32_t snaplen = snaplen_.load(std::memory_order_acquire);
    if (snaplen <= header_snaplen_) return;
    header_snaplen_ = snaplen;
    file_header_ = encode_file_header(context_.config.format, snaplen);
    if (file_.is_open()) finalise_file();
}

void StreamWriter::write_records(const WriteBlock& block) {
    const uint64_t rotate_size = context_.config.rotate_size_bytes;
    // Rotate on size only at a block boundary and only if the file already holds records,
    // so a file never exceeds the limit unless one block alone does.
    if (file_.is_open() && file_.packets() > 0 && rotate_size > 0 &&
        file_.size() + block.used > rotate_size)
        finalise_file();
    if (!file_.is_open() && !open_file(block)) return;

    const auto start = Clock::now();
    const IoStatus status = file_.append({block.data, block.used}, block.packets);
    const auto now = Clock::now();
    context_.latency->record(now - start);
    if (!status.ok()) {
        count_lost(block, status, file_.in_progress_name());
        return;
    }

    add(counters_.written_packets, block.packets);
    add(counters_.written_bytes, block.wire_bytes);
    add(counters_.file_bytes, block.used);
    if (const uint64_t lost = loss_.end(); lost > 0)
        spdlog::warn("{}: writing to {} resumed after {} packets lost", label_,
                     path_of(file_.in_progress_name()), lost);
    unsynced_ = true;
    sync_if_due(now);
}

bool StreamWriter::open_file(const WriteBlock& block) {
    const std::string stem =
        render_file_stem(context_.config.file_template, block.first_ts_ns, id_, next_seq_);
    const char* extension = file_extension(context_.config.format);

    std::string name;
    IoStatus status = IoStatus::failure("create", EEXIST);
    for (unsigned n = 0; n < kMaxNameAlternatives; ++n) {
        name = numbered_file_name(stem, n, extension);
        // In-progress name first, then final name: a file another writer thread finalises
        // meanwhile moves from the first to the second and is seen in one of them. The
        // O_EXCL create settles the remaining race (two threads claiming the same name).
        if (name_exists(context_.dir_fd, in_progress_name(name)) ||
            name_exists(context_.dir_fd, name))
            continue;
        status = file_.open(context_.dir_fd, name, file_header_, direct_io_staging_.span());
        if (status.ok() || status.error() != EEXIST) break;
    }
    if (!status.ok()) {
        count_lost(block, status, in_progress_name(name));
        return false;
    }

    ++next_seq_;
    add(counters_.file_bytes, file_.size());
    unsynced_ = true;
    last_sync_ = Clock::now();
    if (file_.direct_io_refused() && !context_.direct_io_warned->exchange(true))
        spdlog::warn("output directory {} does not support O_DIRECT; writing through the page cache",
                     context_.config.directory);
    return true;
}

void StreamWriter::finalise_file() {
    const uint64_t packets = file_.packets();
    const uint64_t bytes = file_.size();
    const bool durable = context_.config.fsync != FsyncPolicy::none;
    const FinaliseResult result = file_.finalise(durable);
    unsynced_ = false;

    if (!result.status.ok())
        spdlog::error("{}: finalising {}: {}{}", label_, path_of(file_.in_progress_name()),
                      result.status.message(),
                      result.renamed ? "" : "; left under its in-progress name for recovery");
    if (!result.renamed) return;
    add(counters_.files_finalised, 1);
    spdlog::info("finalised {} ({} packets, {} bytes)", path_of(file_.final_name()), packets, bytes);
}

void StreamWriter::count_lost(const WriteBlock& block, const IoStatus& status,
                              const std::string& file_name) {
    add(status.disk_full() ? counters_.disk_full_packets : counters_.write_error_packets,
        block.packets);
    if (loss_.add(block.packets))
        spdlog::warn("{}: {} {} failed: {}; counting packets as lost ({}) until a write succeeds",
                     label_, status.operation(), path_of(file_name), errno_text(status.error()),
                     status.disk_full() ? "disk_full" : "write_error");
}

void StreamWriter::tick(Clock::time_point now) { sync_if_due(now); }

// FsyncPolicy::interval bounds what a crash can take from an open file; finalise() syncs
// as well, because a renamed file must be complete on disk too.
void StreamWriter::sync_if_due(Clock::time_point now) {
    if (context_.config.fsync != FsyncPolicy::interval || !unsynced_ || !file_.is_open()) return;
    if (now - last_sync_ < std::chrono::seconds(context_.config.fsync_interval_s)) return;
    last_sync_ = now;
    unsynced_ = false;
    if (const IoStatus status = file_.sync(); !status.ok())
        spdlog::error("{}: {} {}: {}", label_, status.operation(), path_of(file_.in_progress_name()),
                      errno_text(status.error()));
}

void StreamWriter::finish() {
    if (file_.is_open()) finalise_file();
}

std::string StreamWriter::path_of(const std::string& name) const {
    return context_.config.directory + "/" + name;
}

}  // namespace linecap
