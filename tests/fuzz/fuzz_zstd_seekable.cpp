// libFuzzer target: compressed capture files (zstd's seekable format, format/zstd_seekable).
//
// The input is a file on disk as the store would meet it. Whatever it holds, opening it
// must stop with a one-line error or give a source whose reads agree with each other:
// the whole content read front to back in one pass equals the same content read in
// pieces of any size at any offset, backwards (another frame each time); no read returns
// more than asked or past the decompressed size, and a failed read says why. The capture
// reader then runs over the decompressed bytes as it does over a plain file.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/capture_reader.hpp"
#include "format/zstd_seekable.hpp"

using namespace linecap;

namespace {

void check(bool ok) {
    if (!ok) abort();
}

// Everything `source` holds, read in pieces of `step` bytes from `first` onwards and then
// from 0 to `first` (a read that jumps back to an earlier frame). Empty on a read error.
bool read_all(const format::ByteSource& source, uint64_t step, uint64_t first, std::vector<uint8_t>& out) {
    const uint64_t size = source.size();
    out.assign(size, 0);
    const auto read_range = [&](uint64_t from, uint64_t to) {
        for (uint64_t at = from; at < to;) {
            const size_t want = static_cast<size_t>(std::min(step, to - at));
            const ssize_t got = source.read_at(out.data() + at, want, at);
            if (got < 0) {
                check(errno != 0);
                return false;
            }
            check(static_cast<size_t>(got) <= want);
            if (got == 0) return false;  // a short source: the table promised more
            at += static_cast<uint64_t>(got);
        }
        return true;
    };
    return read_range(first, size) && read_range(0, first);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // A memfd is a file the readers open by path, like a capture file in the store.
    const int fd = ::memfd_create("fuzz-zstd", MFD_CLOEXEC);
    if (fd < 0) return 0;
    for (size_t at = 0; at < size;) {
        const ssize_t n = ::write(fd, data + at, size - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    auto opened = format::open_capture_file(path);
    if (!opened.ok()) {
        const std::string& why = opened.error().message;
        check(!why.empty() && why.find('\n') == std::string::npos);
        ::close(fd);
        return 0;
    }
    const format::OpenFile& file = *opened.value();
    const uint64_t total = file.size();
    if (file.compressed() && total <= (64u << 20)) {
        std::vector<uint8_t> whole, pieces;
        const uint64_t step = 1 + (size > 0 ? data[size - 1] : 0) * 97u;
        const bool whole_ok = read_all(file, total == 0 ? 1 : total, 0, whole);
        const bool pieces_ok = read_all(file, step, total / 2, pieces);
        check(whole_ok == pieces_ok);
        if (whole_ok) check(whole == pieces);
        // Past the end: nothing, never an error.
        uint8_t byte = 0;
        check(file.read_at(&byte, 1, total) == 0);
    }
    // The capture reader over the decompressed bytes, as the store reads them.
    if (auto header = format::read_header(file); header.ok()) {
        format::CaptureReader reader(file, header.value());
        format::Record record;
        uint64_t records = 0;
        while (reader.next(record) && records < 100000) ++records;
    } else {
        check(!header.error().message.empty());
    }
    ::close(fd);
    return 0;
}
