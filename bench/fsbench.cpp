// The machine's own limits for the capture benchmark, measured the way linecap's writer
// works, so linecap's figures can be set against them:
//
//   linecap_fsbench write DIR MIB [--block KIB] [--file MIB] [--direct] [--fsync] [--keep]
//                                 [--budget MIB] [--prealloc | --prealloc-chunk MIB]
//       sequential pwrite of MIB MiB in blocks of KIB KiB (default 1024, like
//       output.block_size_kb) into fresh files of --file MiB (default 256), fsync per file
//       with --fsync (linecap's default fsync: rotate), O_DIRECT with --direct. Files are
//       removed as they are finished unless --keep (so tmpfs does not fill up); with
//       --budget, kept files are deleted oldest first once they exceed MIB MiB, as
//       linecapd's retention (output.retention.max_bytes) does. --prealloc: fallocate each
//       file to its full size before writing it; --prealloc-chunk MIB: fallocate (keeping
//       the size) MIB ahead of the write offset whenever the writes reach the allocated end.
//   linecap_fsbench memcpy MIB [--chunk BYTES]
//       single-thread memcpy bandwidth into a 256 MiB window (the copy a write() into
//       tmpfs or the page cache does).
//
// Output: one line of key=value pairs (gbps = 10^9 bytes per second), plus with write a
// per-GiB series "series_gbps=a,b,c" so a slow start (fresh memory from the host) shows.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

int usage() {
    std::fprintf(stderr,
                 "usage: linecap_fsbench write DIR MIB [--block KIB] [--file MIB] [--direct] [--fsync] [--keep]\n"
                 "                             [--budget MIB] [--prealloc | --prealloc-chunk MIB]\n"
                 "       linecap_fsbench memcpy MIB [--chunk BYTES]\n");
    return 64;
}

void* aligned(size_t bytes) {
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (p == nullptr) {
        std::perror("aligned_alloc");
        std::exit(1);
    }
    // Not zeros: some file systems and devices special-case them.
    auto* b = static_cast<uint8_t*>(p);
    for (size_t i = 0; i < bytes; ++i) b[i] = uint8_t(i * 131 + 17);
    return p;
}

int cmd_write(int argc, char** argv) {
    if (argc < 4) return usage();
    const std::string dir = argv[2];
    const uint64_t total = std::strtoull(argv[3], nullptr, 10) << 20;
    size_t block = 1024 << 10;
    uint64_t file_bytes = 256ull << 20;
    bool direct = false, fsync_files = false, keep = false, prealloc = false;
    uint64_t budget = 0, chunk = 0;
    for (int i = 4; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--block" && i + 1 < argc) block = size_t(std::strtoull(argv[++i], nullptr, 10)) << 10;
        else if (a == "--file" && i + 1 < argc) file_bytes = std::strtoull(argv[++i], nullptr, 10) << 20;
        else if (a == "--direct") direct = true;
        else if (a == "--fsync") fsync_files = true;
        else if (a == "--keep") keep = true;
        else if (a == "--budget" && i + 1 < argc) budget = std::strtoull(argv[++i], nullptr, 10) << 20;
        else if (a == "--prealloc") prealloc = true;
        else if (a == "--prealloc-chunk" && i + 1 < argc) chunk = std::strtoull(argv[++i], nullptr, 10) << 20;
        else return usage();
    }
    if (total == 0 || block == 0 || file_bytes < block) return usage();
    auto* buf = static_cast<uint8_t*>(aligned(block));

    std::vector<double> series;  // GB/s per GiB written
    const auto start = Clock::now();
    auto slice_start = start;
    uint64_t written = 0, slice = 0;
    unsigned files = 0;
    std::deque<std::pair<std::string, uint64_t>> kept;  // oldest first
    uint64_t kept_bytes = 0;
    while (written < total) {
        const std::string path = dir + "/.linecap-fsbench." + std::to_string(getpid()) + "." + std::to_string(files++);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
        if (fd < 0) {
            std::fprintf(stderr, "open %s: %s\n", path.c_str(), std::strerror(errno));
            return 1;
        }
        if (prealloc) {
            const uint64_t want = std::min(file_bytes, total - written);
            if (const int rc = ::posix_fallocate(fd, 0, off_t(want)); rc != 0) {
                std::fprintf(stderr, "fallocate %s: %s\n", path.c_str(), std::strerror(rc));
                return 1;
            }
        }
        uint64_t off = 0, allocated = 0;
        while (off < file_bytes && written < total) {
            if (chunk > 0 && off + block > allocated) {
                if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(allocated), off_t(chunk)) != 0) {
                    std::fprintf(stderr, "fallocate %s: %s\n", path.c_str(), std::strerror(errno));
                    return 1;
                }
                allocated += chunk;
            }
            const ssize_t n = ::pwrite(fd, buf, block, off_t(off));
            if (n != ssize_t(block)) {
                std::fprintf(stderr, "pwrite %s: %s\n", path.c_str(), n < 0 ? std::strerror(errno) : "short write");
                ::close(fd);
                ::unlink(path.c_str());
                return 1;
            }
            off += block;
            written += block;
            slice += block;
            if (slice >= (1ull << 30)) {
                series.push_back(double(slice) / seconds_since(slice_start) / 1e9);
                slice = 0;
                slice_start = Clock::now();
            }
        }
        if (fsync_files) ::fsync(fd);
        ::close(fd);
        if (!keep) {
            ::unlink(path.c_str());
            continue;
        }
        kept.emplace_back(path, off);
        kept_bytes += off;
        while (budget > 0 && kept_bytes > budget && !kept.empty()) {
            ::unlink(kept.front().first.c_str());
            kept_bytes -= kept.front().second;
            kept.pop_front();
        }
    }
    for (const auto& [path, bytes] : kept) ::unlink(path.c_str());  // the caller's directory stays as found
    const double secs = seconds_since(start);
    std::printf("mode=write dir=%s bytes=%llu block=%zu direct=%d fsync=%d keep=%d budget=%llu prealloc=%d "
                "seconds=%.3f gbps=%.3f series_gbps=",
                dir.c_str(), (unsigned long long)written, block, direct, fsync_files, keep,
                (unsigned long long)budget, prealloc, secs, double(written) / secs / 1e9);
    for (size_t i = 0; i < series.size(); ++i) std::printf("%s%.3f", i ? "," : "", series[i]);
    std::printf("\n");
    std::free(buf);
    return 0;
}

int cmd_memcpy(int argc, char** argv) {
    if (argc < 3) return usage();
    const uint64_t total = std::strtoull(argv[2], nullptr, 10) << 20;
    size_t chunk = 1 << 20;
    for (int i = 3; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--chunk" && i + 1 < argc) chunk = size_t(std::strtoull(argv[++i], nullptr, 10));
        else return usage();
    }
    const size_t window = 256u << 20;
    if (chunk == 0 || chunk > window) return usage();
    auto* src = static_cast<uint8_t*>(aligned(std::max<size_t>(chunk, 1 << 20)));
    auto* dst = static_cast<uint8_t*>(aligned(window));  // touched: no page faults in the loop
    uint64_t done = 0;
    size_t off = 0;
    const auto start = Clock::now();
    while (done < total) {
        std::memcpy(dst + off, src, chunk);
        off += chunk;
        if (off + chunk > window) off = 0;
        done += chunk;
    }
    const double secs = seconds_since(start);
    volatile uint8_t sink = dst[off / 2];
    (void)sink;
    std::printf("mode=memcpy bytes=%llu chunk=%zu seconds=%.3f gbps=%.3f\n", (unsigned long long)done, chunk, secs,
                double(done) / secs / 1e9);
    std::free(src);
    std::free(dst);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string cmd = argv[1];
    if (cmd == "write") return cmd_write(argc, argv);
    if (cmd == "memcpy") return cmd_memcpy(argc, argv);
    return usage();
}
