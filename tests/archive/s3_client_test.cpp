// The S3 client against a real Ceph RGW (tests/archive/rgw.sh starts it and exports
// S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY; RGW_DIR holds its files).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "s3/client.hpp"
#include "s3/upload.hpp"

namespace linecap::s3 {
namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

class S3ClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (env("S3_ENDPOINT").empty()) GTEST_SKIP() << "no S3_ENDPOINT: run through s3_client_test.sh (real RGW)";
        endpoint.url = env("S3_ENDPOINT");
        endpoint.region = env("S3_REGION");
        credentials = {env("S3_ACCESS_KEY"), env("S3_SECRET_KEY"), ""};
        prefix = ::testing::UnitTest::GetInstance()->current_test_info()->name() + std::string("/");
    }
    Client client() { return Client(endpoint, credentials, env("S3_BUCKET")); }

    Endpoint endpoint;
    Credentials credentials;
    std::string prefix;
};

std::string random_bytes(size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::string s(n, '\0');
    for (char& c : s) c = char(gen());
    return s;
}

TEST_F(S3ClientTest, PutHeadGetRangeDelete) {
    Client c = client();
    const std::string key = prefix + "capture-1.pcap";
    const std::string body = random_bytes(100000, 1);
    ASSERT_TRUE(c.put_object(key, body, {{"sha256", "abc123"}, {"Linecap-Kind", "capture"}}));
    auto info = c.head_object(key);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->size, body.size());
    EXPECT_EQ(info->etag.size(), 32u);  // a single PUT's ETag is the body's MD5
    EXPECT_EQ(info->metadata["sha256"], "abc123");
    EXPECT_EQ(info->metadata["linecap-kind"], "capture");
    auto whole = c.get_object(key);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole.value(), body);
    auto part = c.get_range(key, 4096, 1000);
    ASSERT_TRUE(part) << part.error().message;
    EXPECT_EQ(part.value(), body.substr(4096, 1000));
    auto tail = c.get_range(key, body.size() - 10, 100);  // past the end: what there is
    ASSERT_TRUE(tail) << tail.error().message;
    EXPECT_EQ(tail.value(), body.substr(body.size() - 10));
    auto beyond = c.get_range(key, body.size() + 10, 100);
    ASSERT_FALSE(beyond);
    EXPECT_EQ(c.last_failure().http_status, 416);
    EXPECT_FALSE(c.last_failure().retryable());

    ASSERT_TRUE(c.delete_object(key));
    auto gone = c.head_object(key);
    ASSERT_FALSE(gone);
    EXPECT_EQ(c.last_failure().http_status, 404);
    EXPECT_NE(gone.error().message.find("S3 HEAD s3://" + c.bucket() + "/" + key + ": HTTP 404"), std::string::npos)
        << gone.error().message;
}

TEST_F(S3ClientTest, ListsByPrefixAndDelimiterAndKeepsOddKeys) {
    Client c = client();
    const std::vector<std::string> keys = {prefix + "a/1.pcap", prefix + "a/2 with space+plus&amp=.pcap",
                                           prefix + "a/ünï~cödé.pcap", prefix + "b/1.pcap", prefix + "b/2.pcap"};
    for (const std::string& k : keys) ASSERT_TRUE(c.put_object(k, k)) << k;
    auto a = c.list_objects(prefix + "a/");
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_EQ(a->objects.size(), 3u);
    for (const ObjectInfo& o : a->objects) {
        auto body = c.get_object(o.key);
        ASSERT_TRUE(body) << o.key << ": " << body.error().message;
        EXPECT_EQ(body.value(), o.key);
        EXPECT_EQ(o.size, o.key.size());
    }
    auto top = c.list_objects(prefix, "", "/");
    ASSERT_TRUE(top) << top.error().message;
    EXPECT_TRUE(top->objects.empty());
    EXPECT_EQ(top->common_prefixes, (std::vector<std::string>{prefix + "a/", prefix + "b/"}));
    for (const std::string& k : keys) ASSERT_TRUE(c.delete_object(k));
}

TEST_F(S3ClientTest, ListingPagesWithAContinuationToken) {
    Client c = client();
    for (int i = 0; i < 1005; ++i) ASSERT_TRUE(c.put_object(prefix + std::to_string(10000 + i), "x"));
    std::vector<std::string> seen;
    std::string token;
    int pages = 0;
    do {
        auto page = c.list_objects(prefix, token);
        ASSERT_TRUE(page) << page.error().message;
        for (const ObjectInfo& o : page->objects) seen.push_back(o.key);
        token = page->next_token;
        ++pages;
    } while (!token.empty());
    EXPECT_EQ(pages, 2);
    ASSERT_EQ(seen.size(), 1005u);
    EXPECT_EQ(seen.front(), prefix + "10000");
    EXPECT_EQ(seen.back(), prefix + "11004");
    for (const std::string& k : seen) ASSERT_TRUE(c.delete_object(k));
}

TEST_F(S3ClientTest, MultipartUploadCompletesAndAborts) {
    Client c = client();
    const std::string key = prefix + "big.pcap";
    const std::string body = random_bytes((5u << 20) + 3000, 2);
    auto id = c.create_multipart_upload(key, {{"sha256", "feed"}});
    ASSERT_TRUE(id) << id.error().message;
    auto listed = c.list_multipart_uploads(prefix);
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->front().upload_id, id.value());
    std::vector<std::string> etags;
    for (unsigned part = 0; part < 2; ++part) {
        const size_t off = part * (5u << 20);
        auto etag = c.upload_part(key, id.value(), part + 1, std::string_view(body).substr(off, part ? 3000 : 5u << 20));
        ASSERT_TRUE(etag) << etag.error().message;
        etags.push_back(etag.value());
    }
    ASSERT_FALSE(c.head_object(key));  // not an object until completed
    ASSERT_TRUE(c.complete_multipart_upload(key, id.value(), etags));
    auto info = c.head_object(key);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->size, body.size());
    EXPECT_TRUE(info->etag.ends_with("-2")) << info->etag;
    EXPECT_EQ(info->metadata["sha256"], "feed");
    auto across = c.get_range(key, (5u << 20) - 100, 200);
    ASSERT_TRUE(across);
    EXPECT_EQ(across.value(), body.substr((5u << 20) - 100, 200));
    ASSERT_TRUE(c.delete_object(key));

    auto second = c.create_multipart_upload(key);
    ASSERT_TRUE(second);
    ASSERT_TRUE(c.upload_part(key, second.value(), 1, "partial"));
    ASSERT_TRUE(c.abort_multipart_upload(key, second.value()));
    auto after = c.list_multipart_uploads(prefix);
    ASSERT_TRUE(after);
    EXPECT_TRUE(after->empty());
    EXPECT_FALSE(c.head_object(key));
}

TEST_F(S3ClientTest, RefusalsAreNamedAndNotRetried) {
    Client wrong_secret(endpoint, {credentials.access_key, credentials.secret_key + "x", ""}, env("S3_BUCKET"));
    auto denied = wrong_secret.put_object(prefix + "x", "x");
    ASSERT_FALSE(denied);
    EXPECT_EQ(wrong_secret.last_failure().http_status, 403);
    EXPECT_EQ(wrong_secret.last_failure().code, "SignatureDoesNotMatch");
    EXPECT_FALSE(wrong_secret.last_failure().retryable());
    EXPECT_NE(denied.error().message.find("HTTP 403 SignatureDoesNotMatch"), std::string::npos) << denied.error().message;

    Client unknown_key(endpoint, {"NOSUCHKEY", "secret", ""}, env("S3_BUCKET"));
    ASSERT_FALSE(unknown_key.head_object(prefix + "x"));
    EXPECT_EQ(unknown_key.last_failure().http_status, 403);

    Client no_bucket(endpoint, credentials, "linecap-no-such-bucket");
    auto missing = no_bucket.list_objects("");
    ASSERT_FALSE(missing);
    EXPECT_EQ(no_bucket.last_failure().code, "NoSuchBucket");
    EXPECT_NE(missing.error().message.find("HTTP 404 NoSuchBucket"), std::string::npos) << missing.error().message;
}

TEST_F(S3ClientTest, AStoreThatIsDownIsRetryable) {
    Endpoint down = endpoint;
    down.url = "http://127.0.0.1:1";  // nothing listens on port 1
    Client c(down, credentials, env("S3_BUCKET"));
    auto r = c.put_object(prefix + "x", "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(c.last_failure().http_status, 0);
    EXPECT_TRUE(c.last_failure().retryable());
    EXPECT_NE(r.error().message.find("no answer from http://127.0.0.1:1"), std::string::npos) << r.error().message;
}

std::string write_file(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

TEST_F(S3ClientTest, UploadsAFileWholeOrInPartsAndVerifiesIt) {
    Client c = client();
    const std::string small = random_bytes(100000, 3), large = random_bytes((12u << 20) + 77, 4);
    UploadOptions options;
    options.part_bytes = 5u << 20;
    auto one = upload_file(c, write_file("small.pcap", small), prefix + "small.pcap", {{"sha256", "s"}}, options);
    ASSERT_TRUE(one) << one.error().message;
    EXPECT_EQ(one->parts, 0u);
    EXPECT_EQ(one->bytes, small.size());
    auto three = upload_file(c, write_file("large.pcap", large), prefix + "large.pcap", {{"sha256", "l"}}, options);
    ASSERT_TRUE(three) << three.error().message;
    EXPECT_EQ(three->parts, 3u);
    EXPECT_EQ(three->retries, 0u);
    auto back = c.get_object(prefix + "large.pcap");
    ASSERT_TRUE(back);
    EXPECT_EQ(back.value(), large);
    EXPECT_EQ(c.head_object(prefix + "large.pcap")->metadata["sha256"], "l");
    auto pending = c.list_multipart_uploads(prefix);
    ASSERT_TRUE(pending);
    EXPECT_TRUE(pending->empty());
    ASSERT_TRUE(c.delete_object(prefix + "small.pcap"));
    ASSERT_TRUE(c.delete_object(prefix + "large.pcap"));
}

// radosgw stopped before the upload: the first request gets no answer, the retry's wait
// starts radosgw again (tests/archive/rgw.sh), and the upload completes.
TEST_F(S3ClientTest, AnUploadRetriesUntilTheStoreIsBack) {
    const std::string rgw = env("RGW_SH"), dir = env("RGW_DIR");
    if (rgw.empty() || dir.empty()) GTEST_SKIP() << "RGW_SH/RGW_DIR not set";
    Client c = client();
    const std::string body = random_bytes((6u << 20) + 5, 5);
    const std::string path = write_file("retried.pcap", body);
    ASSERT_EQ(std::system(("bash " + rgw + " stop-rgw " + dir).c_str()), 0);
    UploadOptions options;
    options.part_bytes = 5u << 20;
    int waits = 0;
    options.wait = [&](std::chrono::milliseconds) {
        if (waits++ == 0) return std::system(("bash " + rgw + " restart-rgw " + dir + " >&2").c_str()) == 0;
        return true;
    };
    auto r = upload_file(c, path, prefix + "retried.pcap", {{"sha256", "r"}}, options);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_GE(r->retries, 1u);
    EXPECT_EQ(r->parts, 2u);
    auto back = c.get_object(prefix + "retried.pcap");
    ASSERT_TRUE(back);
    EXPECT_EQ(back.value(), body);
    ASSERT_TRUE(c.delete_object(prefix + "retried.pcap"));
}

// A store that stays down: the upload fails once the attempts run out, and every request
// sent again was told to on_retry (the archiver's retries counter), not only those of
// uploads that succeeded.
TEST_F(S3ClientTest, RetriesOfAFailedUploadAreCounted) {
    const std::string rgw = env("RGW_SH"), dir = env("RGW_DIR");
    if (rgw.empty() || dir.empty()) GTEST_SKIP() << "RGW_SH/RGW_DIR not set";
    Client c = client();
    const std::string path = write_file("never.pcap", random_bytes(1000, 7));
    ASSERT_EQ(std::system(("bash " + rgw + " stop-rgw " + dir).c_str()), 0);
    UploadOptions options;
    options.attempts = 3;
    options.wait = [](std::chrono::milliseconds) { return true; };
    unsigned retried = 0;
    options.on_retry = [&] { ++retried; };
    auto r = upload_file(c, path, prefix + "never.pcap", {{"sha256", "n"}}, options);
    ASSERT_EQ(std::system(("bash " + rgw + " restart-rgw " + dir + " >&2").c_str()), 0);
    EXPECT_FALSE(r);
    EXPECT_EQ(retried, 2u);
}

// What a kill -9 between two parts leaves: an unfinished upload, no object. abort_uploads()
// (run at start) removes it; a caller that stops mid-upload leaves nothing either.
TEST_F(S3ClientTest, AnUnfinishedUploadIsNoObjectAndIsAbortedAtRestart) {
    Client c = client();
    const std::string key = prefix + "killed.pcap";
    auto id = c.create_multipart_upload(key, {{"sha256", "k"}});
    ASSERT_TRUE(id);
    ASSERT_TRUE(c.upload_part(key, id.value(), 1, random_bytes(5u << 20, 6)));
    EXPECT_FALSE(c.head_object(key));
    auto aborted = abort_uploads(c, prefix);
    ASSERT_TRUE(aborted) << aborted.error().message;
    EXPECT_EQ(aborted.value(), 1u);
    EXPECT_TRUE(c.list_multipart_uploads(prefix)->empty());

    UploadOptions stopping;
    stopping.part_bytes = 5u << 20;
    stopping.max_bytes_per_second = 1u << 20;  // the first part is due after 5 s: wait, and stop
    stopping.wait = [](std::chrono::milliseconds) { return false; };
    auto r = upload_file(c, write_file("stopped.pcap", random_bytes(11u << 20, 7)), key, {}, stopping);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("stopped"), std::string::npos) << r.error().message;
    EXPECT_FALSE(c.head_object(key));
    EXPECT_TRUE(c.list_multipart_uploads(prefix)->empty());
}

TEST_F(S3ClientTest, ARefusedUploadIsNotRetried) {
    Client wrong(endpoint, {credentials.access_key, "wrong", ""}, env("S3_BUCKET"));
    UploadOptions options;
    int waits = 0;
    options.wait = [&](std::chrono::milliseconds) { return ++waits, true; };
    auto r = upload_file(wrong, write_file("refused.pcap", "x"), prefix + "refused.pcap", {}, options);
    ASSERT_FALSE(r);
    EXPECT_EQ(waits, 0);
    EXPECT_NE(r.error().message.find("HTTP 403"), std::string::npos) << r.error().message;
}

TEST(S3Credentials, FileModeProfileAndKeysAreChecked) {
    const std::string dir = ::testing::TempDir();
    const std::string path = dir + "/linecap-credentials-test";
    std::ofstream(path) << "# comment\n[other]\naws_access_key_id = A\naws_secret_access_key = B\n\n"
                           "[default]\naws_access_key_id = AKIA123\naws_secret_access_key = s3cr3t/+=\n";
    ::chmod(path.c_str(), 0644);
    auto open_to_all = read_credentials_file(path);
    ASSERT_FALSE(open_to_all);
    EXPECT_TRUE(open_to_all.error().config);
    EXPECT_NE(open_to_all.error().message.find("mode 0644"), std::string::npos) << open_to_all.error().message;
    EXPECT_NE(open_to_all.error().message.find("chmod 600 " + path), std::string::npos);
    ::chmod(path.c_str(), 0600);
    auto c = read_credentials_file(path);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->access_key, "AKIA123");
    EXPECT_EQ(c->secret_key, "s3cr3t/+=");
    auto other = read_credentials_file(path, "other");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->access_key, "A");
    auto none = read_credentials_file(path, "absent");
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no [absent] profile"), std::string::npos);
    auto missing = read_credentials_file(dir + "/no-such-file");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace linecap::s3
