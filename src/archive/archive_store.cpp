#include "archive/archive_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "archive/layout.hpp"
#include "config/file_template.hpp"
#include "format/zstd_seekable.hpp"
#include "s3/credentials.hpp"

namespace linecap {
namespace {

using Clock = std::chrono::steady_clock;

// linecap-store.json and a manifest are a few KiB: an answer longer than this is not one.
constexpr uint64_t kMaxSmallObjectBytes = 16ull << 20;

// An S3 timestamp ("2026-12-03T11:40:13.123Z", ListObjectsV2's LastModified) in UTC ns;
// 0 when it does not parse.
int64_t parse_s3_time(const std::string& text) {
    struct tm tm {};
    int fraction_at = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &fraction_at) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t ns = static_cast<int64_t>(::timegm(&tm)) * 1000000000;
    if (static_cast<size_t>(fraction_at) < text.size() && text[static_cast<size_t>(fraction_at)] == '.') {
        int64_t scale = 100000000;
        for (size_t i = static_cast<size_t>(fraction_at) + 1; i < text.size() && text[i] >= '0' && text[i] <= '9';
             ++i, scale /= 10)
            ns += (text[i] - '0') * scale;
    }
    return ns;
}

// The objects one capture file has under a prefix.
struct CaptureObjects {
    std::optional<s3::ObjectInfo> plain, compressed;
    bool manifest = false;
    bool index = false;
    uint64_t sidecar_bytes = 0;
};

// One appliance's archive: a prefix holding a linecap-store.json.
struct ArchivePrefix {
    std::string prefix;       // "" for the bucket's top
    std::string appliance;
    std::optional<FileTemplate> file_template;
    std::map<std::string, CaptureObjects> captures;  // by capture name
};

struct Description {
    std::string etag;
    std::string appliance;
    std::string file_template;
};

}  // namespace

struct ArchiveStore::State {
    ArchiveAccess access;
    object_layout::ArchiveLocation where;
    std::string location;  // s3://BUCKET[/PREFIX]

    std::mutex client_mu;
    std::unique_ptr<s3::Client> client;
    ArchiveReadBytes bytes;

    std::mutex listing_mu;
    std::shared_ptr<const std::vector<ArchivePrefix>> listing;
    Clock::time_point listed_at;
    std::map<std::string, Description> descriptions;  // by key: fetched again when the ETag changes
    std::map<std::string, std::pair<std::string, uint64_t>> capture_sizes;  // key → (ETag, size)

    struct CachedRange {
        std::string key;
        uint64_t offset;
        std::string bytes;
    };
    std::mutex range_mu;
    std::list<CachedRange> ranges;  // most recent first
    uint64_t range_bytes = 0;

    struct CachedIndex {
        Index index;
        uint64_t bytes;
        uint64_t used;
    };
    std::mutex index_mu;
    std::map<std::string, CachedIndex> indexes;  // by key
    uint64_t index_bytes = 0;
    uint64_t index_clock = 0;

    std::string url_of(const std::string& key) const { return s3::object_url(where.bucket, key); }
    std::string prefix_location(const std::string& prefix) const {
        return prefix.empty() ? "s3://" + where.bucket : url_of(prefix);
    }
    // "PREFIX/" (or "") of a file this store listed, from its path.
    std::string key_dir(const StoredFile& f) const {
        const size_t head = ("s3://" + where.bucket + "/").size();
        if (f.path.size() < head + f.name.size()) return {};
        return f.path.substr(head, f.path.size() - head - f.name.size());
    }

    // `absent` (when given): the request failed because the object is not there, read
    // under the same lock as the request (queries load indexes on several threads).
    // MAX_BYTES: what the object may hold; a longer answer is an error, never read whole.
    Result<std::string> get(const std::string& key, std::atomic<uint64_t>& kind, bool* absent = nullptr,
                            uint64_t max_bytes = s3::kMaxObjectBytes) {
        std::lock_guard lock(client_mu);
        bytes.requests.fetch_add(1, std::memory_order_relaxed);
        auto body = client->get_object(key, max_bytes);
        if (body) kind.fetch_add(body->size(), std::memory_order_relaxed);
        if (absent) *absent = !body && client->last_failure().http_status == 404;
        return body;
    }

    Result<std::vector<s3::ObjectInfo>> list_all(const std::string& under) {
        std::vector<s3::ObjectInfo> objects;
        std::string token;
        do {
            std::lock_guard lock(client_mu);
            bytes.requests.fetch_add(1, std::memory_order_relaxed);
            auto page = client->list_objects(under, token);
            if (!page) return page.error();
            for (s3::ObjectInfo& o : page->objects) objects.push_back(std::move(o));
            token = page->next_token;
        } while (!token.empty());
        return objects;
    }

    Result<Description> describe(const s3::ObjectInfo& object) {
        if (auto it = descriptions.find(object.key); it != descriptions.end() && it->second.etag == object.etag)
            return it->second;
        auto body = get(object.key, bytes.manifest, nullptr, kMaxSmallObjectBytes);
        if (!body) return body.error();
        const auto json = nlohmann::json::parse(body.value(), nullptr, false);
        const std::string what = url_of(object.key);
        if (json.is_discarded() || !json.is_object()) return runtime_error(what + ": not a JSON object");
        if (!json.contains("format") || !json["format"].is_number_integer() || json["format"].get<int>() != 1)
            return runtime_error(what + ": not format 1 (this linecap reads format 1)");
        Description d;
        d.etag = object.etag;
        if (json.contains("appliance") && json["appliance"].is_string()) d.appliance = json["appliance"].get<std::string>();
        if (json.contains("file_template") && json["file_template"].is_string())
            d.file_template = json["file_template"].get<std::string>();
        descriptions[object.key] = d;
        return d;
    }

    // Lists the archive: every prefix holding a linecap-store.json and the capture files
    // under it whose manifest object is there.
    Result<std::shared_ptr<const std::vector<ArchivePrefix>>> take_listing() {
        auto objects = list_all(where.prefix.empty() ? "" : where.prefix + "/");
        if (!objects) return objects.error();
        std::map<std::string, std::vector<const s3::ObjectInfo*>> by_dir;
        for (const s3::ObjectInfo& o : objects.value()) {
            const size_t slash = o.key.rfind('/');
            std::string dir = slash == std::string::npos ? "" : o.key.substr(0, slash);
            // A prefix URL names one archive: what lies deeper is not part of it.
            if (!where.prefix.empty() && dir != where.prefix) continue;
            by_dir[std::move(dir)].push_back(&o);
        }
        auto prefixes = std::make_shared<std::vector<ArchivePrefix>>();
        for (const auto& [dir, in_dir] : by_dir) {
            const auto description = std::find_if(in_dir.begin(), in_dir.end(), [&](const s3::ObjectInfo* o) {
                return object_layout::name_under(dir, o->key) == object_layout::kStoreDescriptionName;
            });
            if (description == in_dir.end()) continue;
            auto d = describe(**description);
            if (!d) return d.error();
            ArchivePrefix p;
            p.prefix = dir;
            p.appliance = d->appliance.empty() ? (dir.empty() ? where.bucket : dir) : d->appliance;
            if (!d->file_template.empty()) {
                auto t = FileTemplate::compile(d->file_template);
                if (!t) return t.error().context(url_of((*description)->key));
                p.file_template = std::move(t.value());
            }
            for (const s3::ObjectInfo* o : in_dir) {
                const std::string name(object_layout::name_under(dir, o->key));
                if (layout::is_capture_name(name)) p.captures[name].plain = *o;
                else if (auto c = layout::capture_name_of_compressed(name)) p.captures[*c].compressed = *o;
                else if (auto m = layout::capture_name_of_manifest(name)) {
                    p.captures[*m].manifest = true;
                    p.captures[*m].sidecar_bytes += o->size;
                } else if (auto i = layout::capture_name_of_index(name)) {
                    p.captures[*i].index = true;
                    p.captures[*i].sidecar_bytes += o->size;
                }
            }
            prefixes->push_back(std::move(p));
        }
        if (prefixes->empty())
            return runtime_error(location + ": no linecap archive there (no " +
                                 std::string(object_layout::kStoreDescriptionName) +
                                 (where.prefix.empty() ? " under any prefix of the bucket)" : ")"));
        return std::shared_ptr<const std::vector<ArchivePrefix>>(std::move(prefixes));
    }

    Result<std::shared_ptr<const std::vector<ArchivePrefix>>> current_listing() {
        std::lock_guard lock(listing_mu);
        if (listing && Clock::now() - listed_at < access.listing_ttl) return listing;
        auto fresh = take_listing();
        if (!fresh) return fresh.error();
        listing = std::move(fresh.value());
        listed_at = Clock::now();
        return listing;
    }

    // [offset, offset + n) of `key` from the range cache into dst; false when not cached.
    bool cached(const std::string& key, uint8_t* dst, size_t n, uint64_t offset) {
        std::lock_guard lock(range_mu);
        for (auto it = ranges.begin(); it != ranges.end(); ++it) {
            if (it->key != key || offset < it->offset || offset + n > it->offset + it->bytes.size()) continue;
            std::memcpy(dst, it->bytes.data() + (offset - it->offset), n);
            ranges.splice(ranges.begin(), ranges, it);
            return true;
        }
        return false;
    }
    void keep(const std::string& key, uint64_t offset, std::string body) {
        if (body.size() > access.range_cache_bytes / 4) return;
        std::lock_guard lock(range_mu);
        range_bytes += body.size();
        ranges.push_front({key, offset, std::move(body)});
        while (range_bytes > access.range_cache_bytes && !ranges.empty()) {
            range_bytes -= ranges.back().bytes.size();
            ranges.pop_back();
        }
    }
    // One Range GET of [begin, begin + length), counted; the body holds at least `need`
    // bytes, else an error.
    Result<std::string> fetch(const std::string& key, uint64_t begin, uint64_t length, uint64_t need) {
        Result<std::string> body = runtime_error("not fetched");
        {
            std::lock_guard lock(client_mu);
            bytes.requests.fetch_add(1, std::memory_order_relaxed);
            body = client->get_range(key, begin, length);
        }
        if (!body) return body;
        bytes.data.fetch_add(body->size(), std::memory_order_relaxed);
        if (body->size() < need)
            return runtime_error(url_of(key) + ": " + std::to_string(body->size()) + " bytes at offset " +
                                 std::to_string(begin) + " where the listing promised " + std::to_string(length));
        return body;
    }

    // [offset, offset + n) of object `key` (of `object_size` bytes) into dst; false (why
    // in `error`) when the store does not give them.
    bool read_range(const std::string& key, uint64_t object_size, uint8_t* dst, size_t n, uint64_t offset,
                    std::string& error) {
        if (cached(key, dst, n, offset)) return true;
        // At least kMinFetchBytes, moved back from the object's end when it would pass it:
        // the header and the seek table are one request each.
        uint64_t begin = offset, length = std::max<uint64_t>(n, kMinFetchBytes);
        if (begin + length > object_size) {
            length = std::max<uint64_t>(object_size - begin, std::min<uint64_t>(object_size, kMinFetchBytes));
            begin = object_size - length;
        }
        auto body = fetch(key, begin, length, offset + n - begin);
        if (!body) {
            error = body.error().message;
            return false;
        }
        std::memcpy(dst, body->data() + (offset - begin), n);
        keep(key, begin, std::move(body.value()));
        return true;
    }
};

namespace {

// A capture object's bytes, read by range as its reader asks for them. With the object's
// index (version 2: block CRCs), a read that touches indexed blocks fetches those blocks
// whole and checks each against its CRC-32C before any byte of it is returned.
class ObjectSource final : public format::OpenFile {
public:
    ObjectSource(std::shared_ptr<ArchiveStore::State> state, std::string key, uint64_t size, int64_t mtime_ns,
                 std::optional<Index> checks = std::nullopt)
        : state_(std::move(state)), key_(std::move(key)), path_(state_->url_of(key_)), size_(size), mtime_ns_(mtime_ns),
          checks_(std::move(checks)) {}

    // -1 with errno EIO when the store does not answer, EBADMSG when a block fails its
    // check (as a zstd frame that does not decompress); why: last_error().
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override {
        if (offset >= size_ || n == 0) return 0;
        n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
        const bool ok = checks_ ? read_checked(static_cast<uint8_t*>(dst), n, offset)
                                : state_->read_range(key_, size_, static_cast<uint8_t*>(dst), n, offset, last_error_);
        if (!ok) {
            errno = damaged_ ? EBADMSG : EIO;
            return -1;
        }
        return static_cast<ssize_t>(n);
    }
    uint64_t size() const override { return size_; }
    int64_t mtime_ns() const override { return mtime_ns_; }
    const std::string& path() const override { return path_; }
    uint64_t stored_size() const override { return size_; }
    bool compressed() const override { return false; }
    void advise_sequential() const override {}
    void advise_random() const override {}
    bool small_reads_cheap() const override { return false; }
    const std::string& last_error() const { return last_error_; }

private:
    // [offset, offset + n), the indexed blocks it touches whole: each from the range cache
    // (checked when it was fetched) or, consecutive missing ones in one request, fetched,
    // checked and cached one by one (a block a read ends in is not fetched again by the
    // next read); bytes outside the blocks (the file header) as read_range() gives them.
    bool read_checked(uint8_t* dst, size_t n, uint64_t offset) const {
        const auto blocks = checks_->blocks();
        auto first = std::upper_bound(blocks.begin(), blocks.end(), offset,
                                      [](uint64_t at, const BlockEntry& e) { return at < e.offset; });
        if (first != blocks.begin() && std::prev(first)->offset + std::prev(first)->length > offset) --first;
        auto last = first;
        while (last != blocks.end() && last->offset < offset + n) ++last;
        if (first == last) return state_->read_range(key_, size_, dst, n, offset, last_error_);
        const uint64_t begin = first->offset, end = std::prev(last)->offset + std::prev(last)->length;
        if (offset < begin && !state_->read_range(key_, size_, dst, begin - offset, offset, last_error_)) return false;
        if (offset + n > end && !state_->read_range(key_, size_, dst + (end - offset), offset + n - end, end, last_error_))
            return false;
        std::vector<uint8_t> bytes(end - begin);
        for (auto b = first; b != last;) {
            if (state_->cached(key_, bytes.data() + (b->offset - begin), b->length, b->offset)) {
                ++b;
                continue;
            }
            auto run = b;
            std::vector<uint8_t> probe;
            while (run != last) {
                probe.resize(run->length);
                if (run != b && state_->cached(key_, probe.data(), run->length, run->offset)) break;
                ++run;
            }
            const uint64_t from = b->offset, to = std::prev(run)->offset + std::prev(run)->length;
            auto body = state_->fetch(key_, from, to - from, to - from);
            if (!body) {
                last_error_ = body.error().message;
                return false;
            }
            for (; b != run; ++b) {
                const auto i = static_cast<uint32_t>(b - blocks.begin());
                const auto* at = reinterpret_cast<const uint8_t*>(body->data()) + (b->offset - from);
                if (!checks_->block_matches(i, at)) {
                    damaged_ = true;
                    last_error_ = path_ + ": block " + std::to_string(i) + " (" + std::to_string(b->length) +
                                  " bytes at offset " + std::to_string(b->offset) +
                                  ") does not match its index checksum: the object is damaged";
                    return false;
                }
                std::memcpy(bytes.data() + (b->offset - begin), at, b->length);
                state_->keep(key_, b->offset, std::string(reinterpret_cast<const char*>(at), b->length));
            }
        }
        const uint64_t lo = std::max(offset, begin), hi = std::min<uint64_t>(offset + n, end);
        std::memcpy(dst + (lo - offset), bytes.data() + (lo - begin), hi - lo);
        return true;
    }

    std::shared_ptr<ArchiveStore::State> state_;
    std::string key_;
    std::string path_;
    uint64_t size_;
    int64_t mtime_ns_;
    mutable std::string last_error_;
    mutable bool damaged_ = false;  // a block failed its check
    std::optional<Index> checks_;
};

// `checks`: a plain object's index with block CRCs, its blocks checked as they are read.
Result<std::unique_ptr<format::OpenFile>> open_object(const std::shared_ptr<ArchiveStore::State>& state,
                                                      const std::string& key, uint64_t size, int64_t mtime_ns,
                                                      bool compressed, std::optional<Index> checks = std::nullopt) {
    auto object = std::make_unique<ObjectSource>(state, key, size, mtime_ns, std::move(checks));
    if (!compressed) return std::unique_ptr<format::OpenFile>(std::move(object));
    const ObjectSource& raw = *object;
    auto source = format::SeekableSource::open(std::move(object));
    if (!source) {
        // The store failing reads as a seek table that cannot be read: say what it said.
        if (!raw.last_error().empty()) return runtime_error(raw.last_error());
        return source.error();
    }
    return std::unique_ptr<format::OpenFile>(std::move(source.value()));
}

}  // namespace

ArchiveStore::ArchiveStore(std::shared_ptr<State> state) : state_(std::move(state)), location_(state_->location) {}
ArchiveStore::~ArchiveStore() = default;

Result<std::unique_ptr<ArchiveStore>> ArchiveStore::open(const ArchiveAccess& access) {
    auto where = object_layout::parse_url(access.url);
    if (!where) return where.error();
    auto credentials = access.credentials_file.empty()
                           ? s3::credentials_from_environment()
                           : s3::read_credentials_file(access.credentials_file, access.profile);
    if (!credentials) return credentials.error();
    auto state = std::make_shared<State>();
    state->access = access;
    state->where = where.value();
    state->location = state->prefix_location(state->where.prefix);
    state->client = std::make_unique<s3::Client>(access.endpoint, credentials.value(), state->where.bucket);
    if (auto listed = state->current_listing(); !listed) return listed.error();
    return std::unique_ptr<ArchiveStore>(new ArchiveStore(std::move(state)));
}

const ArchiveReadBytes& ArchiveStore::read_bytes() const { return state_->bytes; }

Result<StoreInventory> ArchiveStore::list(const ListOptions& options) const {
    auto listing = state_->current_listing();
    if (!listing) return listing.error();
    StoreInventory inventory;
    inventory.directory = location_;
    // A bucket-only URL spans appliances: each file says whose it is.
    const bool several = state_->where.prefix.empty();
    for (const ArchivePrefix& p : *listing.value()) {
        ListOptions names = options;
        if (options.file_template && p.file_template) names.file_template = &*p.file_template;
        const std::string dir = p.prefix.empty() ? "" : p.prefix + "/";
        for (const auto& [capture, objects] : p.captures) {
            const std::optional<s3::ObjectInfo>& stored = objects.plain ? objects.plain : objects.compressed;
            if (!stored || !objects.manifest) {
                if (!stored && objects.index) inventory.orphan_indexes.push_back(dir + layout::index_name(capture));
                if (!stored && objects.manifest) inventory.orphan_manifests.push_back(dir + layout::manifest_name(capture));
                continue;
            }
            StoredFile f;
            f.name = capture;
            f.path = state_->prefix_location(p.prefix) + "/" + capture;
            f.stored_name = std::string(object_layout::name_under(p.prefix, stored->key));
            f.format = layout::capture_format(capture).value_or(FileKind::pcap);
            f.compressed = !objects.plain;
            f.stored_size = stored->size;
            f.size = f.compressed ? 0 : stored->size;
            f.bytes_on_disk = options.sidecar_bytes ? stored->size + objects.sidecar_bytes : 0;
            f.mtime_ns = f.ctime_ns = parse_s3_time(stored->last_modified);
            f.manifest = true;
            f.index = objects.index;
            if (several) f.origin = p.appliance;
            if (f.compressed && options.capture_sizes) {
                std::lock_guard lock(state_->listing_mu);
                auto known = state_->capture_sizes.find(stored->key);
                if (known == state_->capture_sizes.end() || known->second.first != stored->etag) {
                    auto source = open_object(state_, stored->key, stored->size, f.mtime_ns, true);
                    if (!source) continue;  // as the local inventory: a seek table that cannot be read
                    known = state_->capture_sizes.insert_or_assign(stored->key, std::pair{stored->etag, source.value()->size()})
                                .first;
                }
                f.size = known->second.second;
            }
            describe_name(f, names);
            inventory.files.push_back(std::move(f));
        }
    }
    std::stable_sort(inventory.files.begin(), inventory.files.end(),
                     [](const StoredFile& a, const StoredFile& b) { return a.name < b.name; });
    if (options.file_template) bound_spans(inventory.files);
    return inventory;
}

std::optional<StoredFile> ArchiveStore::find(const std::string& name, const ListOptions& options) const {
    auto inventory = list(options);
    if (!inventory) return std::nullopt;
    for (StoredFile& f : inventory->files)
        if (f.name == name) return std::move(f);
    return std::nullopt;
}

Result<std::unique_ptr<format::OpenFile>> ArchiveStore::open(const StoredFile& file) const {
    // A plain object is checked block by block against its index's CRCs (a compressed one
    // by zstd's frame checksums); the index is fetched once and cached, as load_index() does
    // for the query's plan.
    std::optional<Index> checks;
    if (!file.compressed && file.index) {
        LoadedIndex li = load_index(file, file.stored_size, file.mtime_ns);
        if (li.state == IndexState::valid && li.index.block_crc(0)) checks = std::move(li.index);
    }
    return open_object(state_, state_->key_dir(file) + file.stored_name, file.stored_size, file.mtime_ns,
                       file.compressed, std::move(checks));
}

LoadedIndex ArchiveStore::load_index(const StoredFile& file, uint64_t capture_size, int64_t) const {
    LoadedIndex out;
    if (!file.index) return out;
    const std::string name = layout::index_name(file.name);
    const std::string key = state_->key_dir(file) + name;
    std::optional<Index> index;
    {
        std::lock_guard lock(state_->index_mu);
        if (auto it = state_->indexes.find(key); it != state_->indexes.end()) {
            it->second.used = ++state_->index_clock;
            index = it->second.index;
        }
    }
    if (!index) {
        bool absent = false;
        auto body = state_->get(key, state_->bytes.index, &absent);
        if (!body) {
            if (absent) return out;  // gone since the listing
            out.state = IndexState::corrupt;
            out.problem = body.error().message;
            return out;
        }
        const uint64_t size = body->size();
        auto parsed = Index::parse(std::vector<uint8_t>(body->begin(), body->end()));
        // Fetched whole, so checked whole: a damaged object is named now, not found part by part.
        if (parsed) {
            if (auto whole = parsed->verify(); !whole) parsed = whole.error();
        }
        if (!parsed) {
            out.state = IndexState::corrupt;
            out.problem = state_->url_of(key) + ": " + parsed.error().message;
            return out;
        }
        index = std::move(parsed.value());
        std::lock_guard lock(state_->index_mu);
        if (size <= state_->access.index_cache_bytes) {
            state_->index_bytes += size;
            state_->indexes.insert_or_assign(key, State::CachedIndex{*index, size, ++state_->index_clock});
            while (state_->index_bytes > state_->access.index_cache_bytes) {
                auto oldest = std::min_element(state_->indexes.begin(), state_->indexes.end(),
                                               [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
                state_->index_bytes -= oldest->second.bytes;
                state_->indexes.erase(oldest);
            }
        }
    }
    // An object is replaced whole, never changed in place: the size says whether the index
    // was made of these bytes (the object's time is its upload's, not the file's mtime).
    if (index->header().pcap_size != capture_size) {
        out.state = IndexState::stale;
        out.problem = "indexed at " + std::to_string(index->header().pcap_size) + " bytes, the archived file has " +
                      std::to_string(capture_size);
        return out;
    }
    out.state = IndexState::valid;
    out.index = std::move(*index);
    return out;
}

ManifestRead ArchiveStore::read_manifest(const StoredFile& file) const {
    ManifestRead out;
    const std::string name = layout::manifest_name(file.name);
    const std::string key = state_->key_dir(file) + name;
    bool absent = false;
    auto body = state_->get(key, state_->bytes.manifest, &absent, kMaxSmallObjectBytes);
    if (!body) {
        if (absent) return out;
        out.state = ManifestRead::State::unreadable;
        out.problem = body.error().message;
        return out;
    }
    auto manifest = parse_manifest(body.value());
    if (!manifest) {
        out.state = ManifestRead::State::damaged;
        out.problem = state_->url_of(key) + ": " + manifest.error().message;
        return out;
    }
    out.state = ManifestRead::State::ok;
    out.manifest = std::move(manifest.value());
    return out;
}

std::string archive_read_exposition(const ArchiveReadBytes& b) {
    const std::string name(kArchiveReadBytesMetric.name);
    std::string out = "# HELP " + name + " " + std::string(kArchiveReadBytesMetric.help) + "\n# TYPE " + name + " counter\n";
    for (const auto& [kind, value] : {std::pair{"index", &b.index}, {"data", &b.data}, {"manifest", &b.manifest}})
        out += name + "{kind=\"" + kind + "\"} " + std::to_string(value->load(std::memory_order_relaxed)) + "\n";
    return out;
}

// --- StoreUnion --------------------------------------------------------------------------

StoreUnion::StoreUnion(std::unique_ptr<StoreBackend> first, std::unique_ptr<StoreBackend> second)
    : first_(std::move(first)), second_(std::move(second)), location_(first_->location() + " and " + second_->location()) {}

const StoreBackend& StoreUnion::owner(const StoredFile& file) const {
    const std::string& second = second_->location();
    return file.path.size() > second.size() && file.path.starts_with(second) && file.path[second.size()] == '/'
               ? *second_
               : *first_;
}

Result<StoreInventory> StoreUnion::list(const ListOptions& options) const {
    auto inventory = first_->list(options);
    if (!inventory) return inventory.error();
    auto more = second_->list(options);
    if (!more) return more.error();
    inventory->directory = location_;
    std::set<std::string> names;
    for (const StoredFile& f : inventory->files) names.insert(f.name);
    for (StoredFile& f : more->files)
        if (!names.contains(f.name)) inventory->files.push_back(std::move(f));
    std::stable_sort(inventory->files.begin(), inventory->files.end(),
                     [](const StoredFile& a, const StoredFile& b) { return a.name < b.name; });
    if (options.file_template) bound_spans(inventory->files);
    return inventory;
}

std::optional<StoredFile> StoreUnion::find(const std::string& name, const ListOptions& options) const {
    if (auto f = first_->find(name, options)) return f;
    return second_->find(name, options);
}

Result<std::unique_ptr<format::OpenFile>> StoreUnion::open(const StoredFile& file) const {
    return owner(file).open(file);
}

LoadedIndex StoreUnion::load_index(const StoredFile& file, uint64_t capture_size, int64_t capture_mtime_ns) const {
    return owner(file).load_index(file, capture_size, capture_mtime_ns);
}

ManifestRead StoreUnion::read_manifest(const StoredFile& file) const { return owner(file).read_manifest(file); }

std::unique_ptr<StoreBackend> open_volumes(const std::vector<std::string>& directories) {
    std::unique_ptr<StoreBackend> store = open_store(directories.at(0));
    for (size_t i = 1; i < directories.size(); ++i)
        store = std::make_unique<StoreUnion>(std::move(store), open_store(directories[i]));
    return store;
}

}  // namespace linecap
