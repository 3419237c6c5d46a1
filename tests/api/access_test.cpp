// The audit record's request and the tokens file's checks (src/api/access.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "api/access.hpp"

using namespace linecap::api;

namespace {

const std::string kAlice = "alice-token-0123456789abcdef";
const std::string kBob = "bob-token-ABCDEFGHIJ";

std::string tokens_file(const std::string& text) {
    char path[] = "/tmp/linecap-access-test.XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::fchmod(fd, 0600);
    ::close(fd);
    return path;
}

linecap::Result<TokenTable> load(const std::string& text) {
    const std::string path = tokens_file(text);
    auto t = TokenTable::load(path);
    ::unlink(path.c_str());
    return t;
}

TEST(AuditTarget, PathAndQueryDecoded) {
    EXPECT_EQ(audit_target("/api/v1/packets", "filter=host%201.2.3.4+and+tcp&from=1", nullptr),
              "/api/v1/packets?filter=host 1.2.3.4 and tcp&from=1");
    EXPECT_EQ(audit_target("/api/v1/size", "", nullptr), "/api/v1/size");
    // An undecodable part is kept as received, not dropped.
    EXPECT_EQ(audit_target("/x", "filter=%zz", nullptr), "/x?filter=%zz");
}

TEST(AuditTarget, CredentialParametersRedacted) {
    EXPECT_EQ(audit_target("/api/v1/status", "access_token=secret-value&x=1", nullptr),
              "/api/v1/status?access_token=[redacted]&x=1");
    EXPECT_EQ(audit_target("/a", "Password=p&API_KEY=k", nullptr), "/a?Password=[redacted]&API_KEY=[redacted]");
}

TEST(AuditTarget, TokensRedactedWherever) {
    auto t = load("alice " + kAlice + "\nbob " + kBob + "\n");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(audit_target("/m-" + kAlice + "/x", "filter=host " + kBob, &*t), "/m-[redacted]/x?filter=host [redacted]");
    EXPECT_EQ(t->redact("no token here"), "no token here");
    EXPECT_EQ(t->redact(kBob + kBob), "[redacted][redacted]");
}

TEST(TokenTable, OneTokenUnderTwoNamesRefused) {
    auto t = load("alice " + kAlice + "\nbob " + kAlice + "\n");
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find(":2: the token of 'bob' is also the token of 'alice'"), std::string::npos)
        << t.error().message;
    EXPECT_EQ(t.error().message.find(kAlice), std::string::npos) << "the error shows the token";
}

TEST(TokenTable, NameTwiceRefused) {
    auto t = load("alice " + kAlice + "\nalice " + kBob + "\n");
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find("name 'alice' given twice"), std::string::npos);
}

}  // namespace
