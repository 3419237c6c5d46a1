#include "s3/upload.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "util/sha256.hpp"

namespace linecap::s3 {

namespace {

class Uploader {
public:
    Uploader(Client& client, const UploadOptions& options) : client_(client), options_(options) {}

    // Runs REQUEST until it succeeds, is refused, or the attempts or the caller run out.
    template <typename Request>
    auto retried(Request&& request) -> decltype(request()) {
        auto backoff = options_.first_backoff;
        for (unsigned attempt = 1;; ++attempt) {
            auto result = request();
            if (result || !client_.last_failure().retryable() || attempt >= options_.attempts) return result;
            if (!wait(backoff)) return result.error().context("stopped while retrying");
            ++report.retries;
            if (options_.on_retry) options_.on_retry();
            backoff = std::min(backoff * 2, options_.max_backoff);
        }
    }

    // Keeps the average rate since the first byte under max_bytes_per_second.
    bool pace(uint64_t bytes_sent) {
        if (!options_.max_bytes_per_second) return true;
        const auto due = start_ + std::chrono::microseconds(bytes_sent * 1000000 / options_.max_bytes_per_second);
        const auto now = std::chrono::steady_clock::now();
        if (due <= now) return true;
        return wait(std::chrono::ceil<std::chrono::milliseconds>(due - now));
    }

    UploadReport report;

private:
    bool wait(std::chrono::milliseconds d) {
        if (options_.wait) return options_.wait(d);
        std::this_thread::sleep_for(d);
        return true;
    }

    Client& client_;
    const UploadOptions& options_;
    const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

Result<std::string> read_at(int fd, uint64_t offset, uint64_t length, const std::string& path) {
    std::string buffer(length, '\0');
    size_t done = 0;
    while (done < length) {
        const ssize_t n = ::pread(fd, buffer.data() + done, length - done, off_t(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return runtime_error(path + ": " + std::strerror(errno));
        if (n == 0) return runtime_error(path + ": shorter than when the upload began (it changed)");
        done += size_t(n);
    }
    return buffer;
}

Status verify(Client& client, const std::string& key, uint64_t size, const Metadata& metadata, Uploader& up) {
    auto info = up.retried([&] { return client.head_object(key); });
    if (!info) return info.error().context("verifying the upload");
    std::string wrong;
    if (info->size != size) wrong = "size " + std::to_string(info->size) + ", sent " + std::to_string(size);
    for (const auto& [name, value] : metadata) {
        const auto it = info->metadata.find(name);
        if (it == info->metadata.end() || it->second != value) {
            wrong += (wrong.empty() ? "" : "; ") + std::string("metadata ") + name + " is '" +
                     (it == info->metadata.end() ? "" : it->second) + "', sent '" + value + "'";
        }
    }
    if (wrong.empty()) return {};
    (void)client.delete_object(key);  // not what was sent: it must not count as archived
    return runtime_error("S3 " + object_url(client.bucket(), key) + ": the stored object differs from the file (" +
                         wrong + "); deleted");
}

}  // namespace

Result<UploadReport> upload_file(Client& client, const std::string& path, const std::string& key,
                                 const Metadata& metadata, const UploadOptions& options) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return runtime_error(path + ": " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return runtime_error(path + ": " + std::strerror(errno));
    const uint64_t size = uint64_t(st.st_size);
    const uint64_t part_bytes = std::max<uint64_t>(options.part_bytes, 5ull << 20);

    Uploader up(client, options);
    up.report.bytes = size;
    Sha256 sent;
    const auto hash = [&sent](const std::string& body) {
        sent.update({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
    };
    if (size <= part_bytes) {
        auto body = read_at(fd, 0, size, path);
        if (!body) return body.error();
        hash(body.value());
        if (!up.pace(0)) return runtime_error("stopped");
        auto put = up.retried([&] { return client.put_object(key, body.value(), metadata); });
        if (!put) return put.error();
        // The cap holds across files too: the next upload starts once this one's share of
        // the time is over (a stopping caller is not held: the verification follows at once).
        (void)up.pace(size);
    } else {
        auto id = up.retried([&] { return client.create_multipart_upload(key, metadata); });
        if (!id) return id.error();
        std::vector<std::string> etags;
        Status failed;
        for (uint64_t offset = 0; offset < size && failed; offset += part_bytes) {
            auto body = read_at(fd, offset, std::min(part_bytes, size - offset), path);
            if (!body) {
                failed = body.error();
                break;
            }
            hash(body.value());
            const unsigned number = unsigned(etags.size() + 1);
            auto etag = up.retried([&] { return client.upload_part(key, id.value(), number, body.value()); });
            if (!etag) {
                failed = etag.error().context("part " + std::to_string(number));
                break;
            }
            etags.push_back(etag.value());
            if (!up.pace(offset + body->size())) failed = runtime_error("stopped");
        }
        if (failed) failed = up.retried([&] { return client.complete_multipart_upload(key, id.value(), etags); });
        if (!failed) {
            (void)client.abort_multipart_upload(key, id.value());  // best effort: abort_uploads() at restart
            return failed.error();
        }
        up.report.parts = unsigned(etags.size());
    }
    const Sha256::Digest digest = sent.finish();
    if (!sent.ok()) return runtime_error("sha256 failed");
    up.report.sha256 = Sha256::hex(digest);
    if (auto v = verify(client, key, size, metadata, up); !v) return v.error();
    return up.report;
}

Result<size_t> abort_uploads(Client& client, const std::string& prefix) {
    auto uploads = client.list_multipart_uploads(prefix);
    if (!uploads) return uploads.error();
    for (const Upload& u : uploads.value()) {
        if (auto r = client.abort_multipart_upload(u.key, u.upload_id); !r) return r.error();
    }
    return uploads->size();
}

}  // namespace linecap::s3
