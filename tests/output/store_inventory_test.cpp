// The store inventory: one listing says which files are stored and in which form, what
// lies beside each, what is being written, and which sidecars lost their file; readers
// open a listed file's bytes through it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>
#include <vector>

#include "archive/archive_store.hpp"
#include "archive/layout.hpp"
#include "archive/store_inventory.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

const StoredFile* named(const StoreInventory& inventory, const std::string& name) {
    for (const StoredFile& f : inventory.files)
        if (f.name == name) return &f;
    return nullptr;
}

TEST(StoreInventory, ListsEveryFileWithWhatLiesBesideIt) {
    test::TempDir dir;
    test::write_file(dir.file("b.pcap"), bytes_of("0123456789"));
    test::write_file(dir.file("b.pcap.manifest"), bytes_of("{}"));
    test::write_file(dir.file("b.pcap.idx"), bytes_of("idx"));
    test::write_file(dir.file("b.pcap.damaged"), bytes_of("2026-01-01T00:00:00Z scrub: sha256 differs\nmore\n"));
    test::write_file(dir.file("a.pcap.zst"), bytes_of("zstd"));                 // compressed, plain gone
    test::write_file(dir.file("c.pcapng"), bytes_of("plain"));                  // compression interrupted
    test::write_file(dir.file("c.pcapng.zst"), bytes_of("zst"));
    test::write_file(dir.file("c.pcapng.manifest-pending"), {});
    test::write_file(dir.file(".d.pcap.part"), bytes_of("writing"));
    test::write_file(dir.file(".b.pcap.idx.tmp.Ab12Cd"), {});
    test::write_file(dir.file("gone.pcap.manifest"), bytes_of("{}"));
    test::write_file(dir.file("gone.pcap.idx"), {});
    test::write_file(dir.file("gone.pcap.manifest-pending"), {});
    test::write_file(dir.file("notes.txt"), {});
    ASSERT_EQ(::mkdir(dir.file("e.pcap").c_str(), 0755), 0);                    // not a regular file

    const Result<StoreInventory> inventory = LocalDirectoryStore(dir.path()).list({.sidecar_bytes = true});
    ASSERT_TRUE(inventory.ok()) << inventory.error().message;
    ASSERT_EQ(inventory->files.size(), 3u);
    EXPECT_EQ(inventory->files[0].name, "a.pcap");
    EXPECT_EQ(inventory->files[1].name, "b.pcap");
    EXPECT_EQ(inventory->files[2].name, "c.pcapng");

    const StoredFile& a = *named(inventory.value(), "a.pcap");
    EXPECT_TRUE(a.compressed);
    EXPECT_EQ(a.stored_name, "a.pcap.zst");
    EXPECT_EQ(a.stored_size, 4u);
    EXPECT_EQ(a.size, 0u);  // the seek table only when asked for
    EXPECT_FALSE(a.manifest);

    const StoredFile& b = *named(inventory.value(), "b.pcap");
    EXPECT_FALSE(b.compressed);
    EXPECT_EQ(b.path, dir.file("b.pcap"));
    EXPECT_EQ(b.size, 10u);
    EXPECT_TRUE(b.manifest);
    EXPECT_TRUE(b.index);
    EXPECT_FALSE(b.manifest_pending);
    ASSERT_TRUE(b.damaged);
    EXPECT_EQ(*b.damaged, "2026-01-01T00:00:00Z scrub: sha256 differs");
    EXPECT_EQ(b.bytes_on_disk, 10u + 2u + 3u + 48u);

    const StoredFile& c = *named(inventory.value(), "c.pcapng");
    EXPECT_EQ(c.format, FileKind::pcapng);
    EXPECT_FALSE(c.compressed);
    EXPECT_TRUE(c.compression_unfinished);
    EXPECT_EQ(c.stored_name, "c.pcapng");
    EXPECT_TRUE(c.manifest_pending);
    EXPECT_FALSE(c.damaged);
    EXPECT_EQ(c.bytes_on_disk, 5u + 3u);

    EXPECT_EQ(inventory->in_progress, 1u);
    EXPECT_EQ(inventory->in_progress_names, std::vector<std::string>{".d.pcap.part"});
    EXPECT_EQ(inventory->temporaries, std::vector<std::string>{".b.pcap.idx.tmp.Ab12Cd"});
    EXPECT_EQ(inventory->orphan_manifests, std::vector<std::string>{"gone.pcap.manifest"});
    EXPECT_EQ(inventory->orphan_indexes, std::vector<std::string>{"gone.pcap.idx"});
    EXPECT_EQ(inventory->orphan_pending_markers, std::vector<std::string>{"gone.pcap.manifest-pending"});
}

TEST(StoreInventory, FindsOneFileAndOpensItsBytes) {
    test::TempDir dir;
    const std::vector<uint8_t> bytes = test::pcap_file_bytes(65535, test::make_packets(3, 1700000000ull * 1000000000ull));
    test::write_file(dir.file("x.pcap"), bytes);
    test::write_file(dir.file("x.pcap.idx"), bytes_of("12345"));
    const LocalDirectoryStore store(dir.path());

    const std::optional<StoredFile> x = store.find("x.pcap", {.sidecar_bytes = true});
    ASSERT_TRUE(x);
    EXPECT_TRUE(x->index);
    EXPECT_EQ(x->bytes_on_disk, bytes.size() + 5u);
    EXPECT_FALSE(store.find("y.pcap", {}));
    EXPECT_FALSE(store.find("x.pcap.idx", {}));

    auto file = store.open(*x);
    ASSERT_TRUE(file.ok()) << file.error().message;
    ASSERT_EQ(file.value()->size(), bytes.size());
    std::vector<uint8_t> read(bytes.size());
    ASSERT_EQ(file.value()->read_at(read.data(), read.size(), 0), static_cast<ssize_t>(read.size()));
    EXPECT_EQ(read, bytes);
    EXPECT_EQ(store.read_manifest(*x).state, ManifestRead::State::missing);
}

TEST(StoreInventory, SpansFromTheNamesWithATemplate) {
    test::TempDir dir;
    const FileTemplate file_template = FileTemplate::compile(kDefaultFileTemplate).value();
    const StreamId stream{"p0", 0, 0};
    const uint64_t t0 = 1796004600000000000ull;
    const std::string first = layout::capture_name(file_template, t0, stream, 0, FileKind::pcap, 0);
    const std::string second = layout::capture_name(file_template, t0 + 5000, stream, 1, FileKind::pcap, 0);
    test::write_file(dir.file(first), {});
    test::write_file(dir.file(second), {});
    const Result<StoreInventory> inventory = open_store(dir.path())->list(ListOptions::catalog(file_template));
    ASSERT_TRUE(inventory.ok());
    ASSERT_EQ(inventory->files.size(), 2u);
    EXPECT_EQ(inventory->files[0].stream, "p0/q0");
    EXPECT_EQ(inventory->files[0].lower_ns, t0);
    EXPECT_EQ(inventory->files[0].upper_ns, t0 + 5001);
    EXPECT_EQ(inventory->files[1].upper_ns, UINT64_MAX);
}

// Local files and another store as one (`--dir` with `--archive`): a file both hold is
// the first's, spans are bound across both, and each file is read from the store that
// listed it.
TEST(StoreInventory, AUnionOfTwoStoresIsOneStore) {
    test::TempDir local, other;
    const FileTemplate file_template = FileTemplate::compile(kDefaultFileTemplate).value();
    const StreamId stream{"p0", 0, 0};
    const uint64_t t0 = 1796004600000000000ull;
    const auto name = [&](uint64_t t) { return layout::capture_name(file_template, t, stream, 0, FileKind::pcap, 0); };
    test::write_file(local.file(name(t0)), bytes_of("local0"));
    test::write_file(local.file(name(t0 + 2000)), bytes_of("local2"));
    test::write_file(other.file(name(t0 + 1000)), bytes_of("other1+"));
    test::write_file(other.file(name(t0 + 2000)), bytes_of("other2, not read"));
    const StoreUnion store(open_store(local.path()), open_store(other.path()));
    const Result<StoreInventory> inventory = store.list(ListOptions::catalog(file_template));
    ASSERT_TRUE(inventory.ok()) << inventory.error().message;
    ASSERT_EQ(inventory->files.size(), 3u);
    EXPECT_EQ(inventory->files[0].path, local.file(name(t0)));
    EXPECT_EQ(inventory->files[1].path, other.file(name(t0 + 1000)));
    EXPECT_EQ(inventory->files[2].path, local.file(name(t0 + 2000)));
    EXPECT_EQ(inventory->files[0].upper_ns, t0 + 1001);  // bound by the other store's file
    EXPECT_EQ(inventory->files[1].upper_ns, t0 + 2001);
    EXPECT_EQ(inventory->files[2].upper_ns, UINT64_MAX);
    for (const StoredFile& f : inventory->files) {
        auto opened = store.open(f);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        EXPECT_EQ(opened.value()->size(), f.size) << f.path;
    }
}

// output.volumes: three capture volumes are one store (open_volumes), each file opened
// from the volume that holds it.
TEST(StoreInventory, VolumesAreOneStore) {
    test::TempDir a, b, c;
    const FileTemplate file_template = FileTemplate::compile(kDefaultFileTemplate).value();
    const StreamId stream{"p0", 0, 0};
    const uint64_t t0 = 1700000000ull * 1000000000ull;
    const auto name = [&](uint64_t t) { return layout::capture_name(file_template, t, stream, 0, FileKind::pcap, 0); };
    test::write_file(a.file(name(t0)), bytes_of("a0"));
    test::write_file(b.file(name(t0 + 1000)), bytes_of("b1--"));
    test::write_file(c.file(name(t0 + 2000)), bytes_of("c2------"));
    test::write_file(a.file(name(t0 + 3000)), bytes_of("a3"));
    const std::unique_ptr<StoreBackend> store = open_volumes({a.path(), b.path(), c.path()});
    const Result<StoreInventory> inventory = store->list(ListOptions::catalog(file_template));
    ASSERT_TRUE(inventory.ok()) << inventory.error().message;
    ASSERT_EQ(inventory->files.size(), 4u);
    EXPECT_EQ(inventory->files[0].path, a.file(name(t0)));
    EXPECT_EQ(inventory->files[1].path, b.file(name(t0 + 1000)));
    EXPECT_EQ(inventory->files[2].path, c.file(name(t0 + 2000)));
    EXPECT_EQ(inventory->files[3].path, a.file(name(t0 + 3000)));
    EXPECT_EQ(inventory->files[1].upper_ns, t0 + 2001);  // the stream's next file is on another volume
    for (const StoredFile& f : inventory->files) {
        auto opened = store->open(f);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        EXPECT_EQ(opened.value()->size(), f.size) << f.path;
    }
    EXPECT_EQ(open_volumes({a.path()})->location(), a.path());
}

TEST(StoreInventory, ADirectoryThatCannotBeListedIsAnError) {
    const Result<StoreInventory> inventory = LocalDirectoryStore("/nonexistent/store").list({});
    ASSERT_FALSE(inventory.ok());
    EXPECT_EQ(inventory.error().message, "/nonexistent/store: No such file or directory");
}

}  // namespace
}  // namespace linecap
