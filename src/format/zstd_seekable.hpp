// Compressed capture files: zstd's seekable format.
//
// A compressed capture file is a sequence of independent zstd frames followed by a seek
// table — the format of zstd's contrib/seekable_format ("Zstandard Seekable Format",
// version 0.1): a skippable frame (magic 0x184D2A5E) whose entries give each frame's
// compressed and decompressed size, ending in a 9-byte footer (frame count, descriptor,
// magic 0x8F92EAB1). Any zstd decoder skips the skippable frame, so `zstd -d` (or
// `zstdcat F | tcpdump -r -`) gives back the exact capture file; a reader that knows the
// table decompresses only the frames it needs. The frames carry zstd's own content
// checksum (XXH64), so damage in a frame is found when it is decompressed; the table's
// optional per-frame checksums are not written.
//
// Frames are cut where the caller says (the compressor cuts at the retrieval index's
// block boundaries, archive/compress.hpp), so an indexed read of one block decompresses
// one frame.
//
// Like the rest of format/, reading is defensive: the table is checked (sizes add up to
// the file, no overflow, frames no larger than kMaxSeekableFrameBytes) before it is
// used, and a frame that does not decompress to exactly its table size is an error
// naming its offset.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/capture_reader.hpp"
#include "util/result.hpp"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace linecap::format {

// The first four bytes of a zstd frame, little-endian.
inline constexpr uint32_t kZstdFrameMagic = 0xFD2FB528u;
inline constexpr uint32_t kSeekTableSkippableMagic = 0x184D2A5Eu;
inline constexpr uint32_t kSeekableFooterMagic = 0x8F92EAB1u;
inline constexpr size_t kSeekTableFooterBytes = 9;
// The largest frame (decompressed) a reader accepts, and so the largest buffer it holds:
// far above an index block (256 KiB by default) and the compressor's own cap.
inline constexpr uint32_t kMaxSeekableFrameBytes = 64u << 20;

struct SeekableFrame {
    uint64_t compressed_offset = 0;
    uint64_t decompressed_offset = 0;
    uint32_t compressed_size = 0;
    uint32_t decompressed_size = 0;
};

// The seek table of a compressed file, checked.
struct SeekTable {
    std::vector<SeekableFrame> frames;
    uint64_t decompressed_size = 0;
    uint64_t table_bytes = 0;  // the skippable frame holding the table
    // The frame holding decompressed offset `offset` (< decompressed_size).
    size_t frame_at(uint64_t offset) const;
};

// Reads and checks the seek table at the end of `file`. Errors, one line: "no zstd
// seek table (…)", "seek table: frame sizes add up to N bytes, the file has M", ….
Result<SeekTable> read_seek_table(const ByteSource& file);

// Compresses frames and then writes the seek table. Not thread-safe; one per file.
class SeekableWriter {
public:
    // `level`: zstd's compression level (ZSTD_minCLevel()..ZSTD_maxCLevel()).
    explicit SeekableWriter(int level);
    ~SeekableWriter();
    SeekableWriter(const SeekableWriter&) = delete;
    SeekableWriter& operator=(const SeekableWriter&) = delete;

    // One independent frame of `bytes` (at most kMaxSeekableFrameBytes), with its content
    // checksum, appended to `out`. Errors: zstd's message.
    Status frame(std::span<const uint8_t> bytes, std::vector<uint8_t>& out);
    // The seek table of the frames so far (the skippable frame), appended to `out`.
    void seek_table(std::vector<uint8_t>& out) const;
    size_t frames() const { return sizes_.size(); }

private:
    ZSTD_CCtx_s* cctx_ = nullptr;
    std::vector<std::pair<uint32_t, uint32_t>> sizes_;  // compressed, decompressed
};

// The decompressed bytes of a compressed capture file, read through its seek table. A
// frame a read wants whole is decompressed straight into the caller's buffer (an indexed
// read of one block is exactly one frame; a scan's large reads are mostly whole frames);
// a frame it wants part of is decompressed into a buffer of the source's own and kept, so
// the next read (the reader refilling its buffer from a record that crossed the end of
// the last one) finds it there. Reads that move forward decompress every frame once. Not
// thread-safe (one reader per source).
class SeekableSource final : public OpenFile {
public:
    // Over the compressed bytes of `file` (on disk, or an archived object read by range).
    // Errors: those of read_seek_table (the caller adds the path).
    static Result<std::unique_ptr<SeekableSource>> open(std::unique_ptr<OpenFile> file);
    ~SeekableSource() override;

    // -1 with errno EBADMSG when a frame does not decompress (why: last_error()), EIO-like
    // errno from the file otherwise.
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override;
    uint64_t size() const override { return table_.decompressed_size; }
    int64_t mtime_ns() const override { return file_->mtime_ns(); }
    const std::string& path() const override { return file_->path(); }
    uint64_t stored_size() const override { return file_->stored_size(); }
    bool compressed() const override { return true; }
    void advise_sequential() const override { file_->advise_sequential(); }
    void advise_random() const override { file_->advise_random(); }

    const SeekTable& table() const { return table_; }
    // Frames decompressed so far (benchmarks, tests).
    uint64_t frames_decompressed() const { return frames_decompressed_; }
    const std::string& last_error() const { return last_error_; }

private:
    SeekableSource() = default;
    // Frame `index` decompressed into `into` (its decompressed size); false with errno
    // (and last_error()) set when it does not decompress.
    bool decompress(size_t index, uint8_t* into) const;
    // Frame `index` into frame_ (kept: cached_).
    bool load(size_t index) const;

    std::unique_ptr<OpenFile> file_;
    SeekTable table_;
    uint32_t max_compressed_ = 0;    // the largest frame, compressed and not: the buffers' sizes
    uint32_t max_decompressed_ = 0;
    // Made at the first frame read: a source opened only for its size (the store inventory)
    // costs no context and no buffers.
    mutable ZSTD_DCtx_s* dctx_ = nullptr;
    mutable std::unique_ptr<uint8_t[]> compressed_;  // not zero-filled: only bytes read are used
    mutable std::unique_ptr<uint8_t[]> frame_;       // the decompressed frame `cached_`
    mutable size_t cached_ = SIZE_MAX;
    mutable uint64_t frames_decompressed_ = 0;
    mutable std::string last_error_;
};

// Opens a capture file for reading: a plain file as it is, a compressed one (it starts
// with a zstd frame) through its seek table. Errors: "<reason>" (the caller adds the
// path).
Result<std::unique_ptr<OpenFile>> open_capture_file(const std::string& path);

}  // namespace linecap::format
