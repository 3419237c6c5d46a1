#include "format/zstd_seekable.hpp"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace linecap::format {
namespace {

constexpr size_t kSkippableHeaderBytes = 8;   // magic, frame size
constexpr size_t kEntryBytes = 8;             // compressed size, decompressed size
constexpr size_t kEntryWithChecksumBytes = 12;
constexpr uint8_t kChecksumFlag = 0x80;
constexpr uint8_t kReservedBits = 0x7c;

uint32_t load_le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void append_le32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

bool read_exact(const ByteSource& src, void* dst, size_t n, uint64_t offset) {
    return src.read_at(dst, n, offset) == static_cast<ssize_t>(n);
}

}  // namespace

size_t SeekTable::frame_at(uint64_t offset) const {
    const auto it = std::upper_bound(frames.begin(), frames.end(), offset, [](uint64_t o, const SeekableFrame& f) {
        return o < f.decompressed_offset;
    });
    return static_cast<size_t>(it - frames.begin()) - 1;
}

Result<SeekTable> read_seek_table(const ByteSource& file) {
    const uint64_t size = file.size();
    if (size < kSkippableHeaderBytes + kSeekTableFooterBytes)
        return runtime_error("no zstd seek table (" + std::to_string(size) + " bytes)");
    uint8_t footer[kSeekTableFooterBytes];
    if (!read_exact(file, footer, sizeof footer, size - sizeof footer))
        return runtime_error("read of the seek table footer: " + std::string(std::strerror(errno)));
    if (load_le32(footer + 5) != kSeekableFooterMagic)
        return runtime_error("no zstd seek table (the file does not end in the seekable format's footer)");
    const uint32_t count = load_le32(footer);
    const uint8_t descriptor = footer[4];
    if (descriptor & kReservedBits) return runtime_error("seek table: reserved descriptor bits set");
    const size_t entry = (descriptor & kChecksumFlag) ? kEntryWithChecksumBytes : kEntryBytes;
    const uint64_t table_bytes = kSkippableHeaderBytes + uint64_t{count} * entry + kSeekTableFooterBytes;
    if (table_bytes > size)
        return runtime_error("seek table: " + std::to_string(count) + " frames do not fit in " +
                             std::to_string(size) + " bytes");
    std::vector<uint8_t> raw(static_cast<size_t>(table_bytes));
    if (!read_exact(file, raw.data(), raw.size(), size - table_bytes))
        return runtime_error("read of the seek table: " + std::string(std::strerror(errno)));
    if (load_le32(raw.data()) != kSeekTableSkippableMagic ||
        load_le32(raw.data() + 4) != table_bytes - kSkippableHeaderBytes)
        return runtime_error("seek table: its skippable frame header does not match its footer (at offset " +
                             std::to_string(size - table_bytes) + ")");
    SeekTable table;
    table.table_bytes = table_bytes;
    table.frames.reserve(count);
    uint64_t c = 0, d = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t* e = raw.data() + kSkippableHeaderBytes + size_t{i} * entry;
        SeekableFrame f{c, d, load_le32(e), load_le32(e + 4)};
        if (f.decompressed_size > kMaxSeekableFrameBytes)
            return runtime_error("seek table: frame " + std::to_string(i) + " decompresses to " +
                                 std::to_string(f.decompressed_size) + " bytes, more than a frame may");
        // A frame never grows beyond zstd's bound: that also bounds what a reader buffers.
        if (f.compressed_size > ZSTD_compressBound(f.decompressed_size))
            return runtime_error("seek table: frame " + std::to_string(i) + " is larger compressed (" +
                                 std::to_string(f.compressed_size) + " bytes) than zstd can make it");
        if (f.compressed_size == 0 || f.decompressed_size == 0)
            return runtime_error("seek table: frame " + std::to_string(i) + " is empty");
        c += f.compressed_size;
        d += f.decompressed_size;
        table.frames.push_back(f);
    }
    if (c != size - table_bytes)
        return runtime_error("seek table: frame sizes add up to " + std::to_string(c) + " bytes, the file has " +
                             std::to_string(size - table_bytes) + " before the table");
    table.decompressed_size = d;
    return table;
}

// --- writing --------------------------------------------------------------------------

SeekableWriter::SeekableWriter(int level) : cctx_(ZSTD_createCCtx()) {
    if (cctx_ != nullptr) {
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1);
    }
}

SeekableWriter::~SeekableWriter() { ZSTD_freeCCtx(cctx_); }

Status SeekableWriter::frame(std::span<const uint8_t> bytes, std::vector<uint8_t>& out) {
    if (cctx_ == nullptr) return runtime_error("zstd: cannot create a compression context");
    if (bytes.empty() || bytes.size() > kMaxSeekableFrameBytes)
        return runtime_error("zstd: a frame of " + std::to_string(bytes.size()) + " bytes");
    const size_t at = out.size();
    out.resize(at + ZSTD_compressBound(bytes.size()));
    const size_t n = ZSTD_compress2(cctx_, out.data() + at, out.size() - at, bytes.data(), bytes.size());
    if (ZSTD_isError(n)) {
        out.resize(at);
        return runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
    }
    out.resize(at + n);
    sizes_.emplace_back(static_cast<uint32_t>(n), static_cast<uint32_t>(bytes.size()));
    return {};
}

void SeekableWriter::seek_table(std::vector<uint8_t>& out) const {
    append_le32(out, kSeekTableSkippableMagic);
    append_le32(out, static_cast<uint32_t>(sizes_.size() * kEntryBytes + kSeekTableFooterBytes));
    for (const auto& [compressed, decompressed] : sizes_) {
        append_le32(out, compressed);
        append_le32(out, decompressed);
    }
    append_le32(out, static_cast<uint32_t>(sizes_.size()));
    out.push_back(0);  // descriptor: no per-frame checksums (each frame carries zstd's own)
    append_le32(out, kSeekableFooterMagic);
}

// --- reading --------------------------------------------------------------------------

Result<std::unique_ptr<SeekableSource>> SeekableSource::open(std::unique_ptr<OpenFile> file) {
    auto table = read_seek_table(*file);
    if (!table) return table.error();
    std::unique_ptr<SeekableSource> source(new SeekableSource());
    source->file_ = std::move(file);
    source->table_ = std::move(table.value());
    for (const SeekableFrame& f : source->table_.frames) {
        source->max_compressed_ = std::max(source->max_compressed_, f.compressed_size);
        source->max_decompressed_ = std::max(source->max_decompressed_, f.decompressed_size);
    }
    return source;
}

SeekableSource::~SeekableSource() { ZSTD_freeDCtx(dctx_); }

bool SeekableSource::decompress(size_t index, uint8_t* into) const {
    const SeekableFrame& f = table_.frames[index];
    const auto bad = [&](const std::string& why) {
        last_error_ = "compressed frame " + std::to_string(index) + " at offset " +
                      std::to_string(f.compressed_offset) + ": " + why;
        errno = EBADMSG;
        return false;
    };
    if (dctx_ == nullptr && (dctx_ = ZSTD_createDCtx()) == nullptr) {
        last_error_ = "zstd: cannot create a decompression context";
        errno = ENOMEM;
        return false;
    }
    if (!compressed_) compressed_.reset(new uint8_t[max_compressed_]);
    const ssize_t got = file_->read_at(compressed_.get(), f.compressed_size, f.compressed_offset);
    if (got < 0) return false;
    if (static_cast<size_t>(got) != f.compressed_size) return bad("the file ends inside it");
    // Exactly one frame: ZSTD_decompressDCtx would run on into a second one.
    const size_t frame_size = ZSTD_findFrameCompressedSize(compressed_.get(), f.compressed_size);
    if (ZSTD_isError(frame_size) || frame_size != f.compressed_size) return bad("not one zstd frame of its table size");
    const size_t n = ZSTD_decompressDCtx(dctx_, into, f.decompressed_size, compressed_.get(), f.compressed_size);
    if (ZSTD_isError(n)) return bad(ZSTD_getErrorName(n));
    if (n != f.decompressed_size)
        return bad("decompresses to " + std::to_string(n) + " bytes, its table says " +
                   std::to_string(f.decompressed_size));
    ++frames_decompressed_;
    return true;
}

bool SeekableSource::load(size_t index) const {
    if (index == cached_) return true;
    cached_ = SIZE_MAX;
    if (!frame_) frame_.reset(new uint8_t[max_decompressed_]);
    if (!decompress(index, frame_.get())) return false;
    cached_ = index;
    return true;
}

ssize_t SeekableSource::read_at(void* dst, size_t n, uint64_t offset) const {
    if (n == 0 || offset >= table_.decompressed_size) return 0;
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    for (size_t index = table_.frame_at(offset); done < n && index < table_.frames.size(); ++index) {
        const SeekableFrame& f = table_.frames[index];
        const size_t in_frame = static_cast<size_t>(offset + done - f.decompressed_offset);
        const size_t k = std::min<size_t>(n - done, f.decompressed_size - in_frame);
        if (k == f.decompressed_size && index != cached_) {
            // Wanted whole: no copy through frame_. (Whole and kept: the copy is cheaper.)
            if (!decompress(index, out + done)) return -1;
        } else {
            if (!load(index)) return -1;
            std::memcpy(out + done, frame_.get() + in_frame, k);
        }
        done += k;
    }
    return static_cast<ssize_t>(done);
}

Result<std::unique_ptr<OpenFile>> open_capture_file(const std::string& path) {
    auto file = FileSource::open(path);
    if (!file) return file.error();
    uint8_t magic[4];
    if (file.value()->size() < sizeof magic || !read_exact(*file.value(), magic, sizeof magic, 0) ||
        load_le32(magic) != kZstdFrameMagic)
        return std::unique_ptr<OpenFile>(std::move(file.value()));
    auto compressed = SeekableSource::open(std::move(file.value()));
    if (!compressed) return compressed.error();
    return std::unique_ptr<OpenFile>(std::move(compressed.value()));
}

}  // namespace linecap::format
