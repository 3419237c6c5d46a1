// The archiver's pieces that need no store: where it archives (the URL, the host name as
// the default prefix) and the store description the readers parse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "archive/archive_service.hpp"

namespace linecap {
namespace {

std::string host() {
    char name[256] = {};
    EXPECT_EQ(::gethostname(name, sizeof name - 1), 0);
    return name;
}

TEST(ArchiveLocation, ThePrefixDefaultsToTheHostName) {
    ArchiveConfig archive;
    archive.url = "s3://captures";
    auto where = archive_bucket_and_prefix(archive);
    ASSERT_TRUE(where) << where.error().message;
    EXPECT_EQ(where->first, "captures");
    EXPECT_EQ(where->second, host());

    archive.url = "s3://captures/site-a/tap1/";
    where = archive_bucket_and_prefix(archive);
    ASSERT_TRUE(where) << where.error().message;
    EXPECT_EQ(where->first, "captures");
    EXPECT_EQ(where->second, "site-a/tap1");

    archive.url = "https://captures";
    EXPECT_FALSE(archive_bucket_and_prefix(archive));
}

TEST(ArchiveLocation, CredentialsFromTheEnvironmentWithoutAFile) {
    ::setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    auto credentials = archive_credentials(ArchiveConfig{.url = "s3://b"});
    ASSERT_TRUE(credentials) << credentials.error().message;
    EXPECT_EQ(credentials->access_key, "AKID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    EXPECT_FALSE(archive_credentials(ArchiveConfig{.url = "s3://b"}));
    ::unsetenv("AWS_ACCESS_KEY_ID");
}

// The read side parses exactly these keys (archive/object_layout.hpp).
TEST(StoreDescription, FormatApplianceTemplateInterval) {
    const auto description = nlohmann::json::parse(store_description("cap1", "%Y%m%dT%H%M%S-{port}-q{queue}", 300));
    EXPECT_EQ(description.at("format"), 1);
    EXPECT_EQ(description.at("appliance"), "cap1");
    EXPECT_EQ(description.at("file_template"), "%Y%m%dT%H%M%S-{port}-q{queue}");
    EXPECT_EQ(description.at("rotate_interval_s"), 300);
    EXPECT_EQ(description.size(), 4u);
}

}  // namespace
}  // namespace linecap
