// Credentials for an S3-compatible object store: the AWS shared-credentials file format
// ("[profile]" sections of "key = value" lines, as the aws CLI, s3cmd and every SDK read it)
// or the AWS_* environment variables.
#pragma once

#include <string>

#include "util/result.hpp"

namespace linecap::s3 {

struct Credentials {
    std::string access_key;     // aws_access_key_id
    std::string secret_key;     // aws_secret_access_key
    std::string session_token;  // aws_session_token (temporary credentials), may be empty
};

// Reads PROFILE of the credentials file at PATH. Refused (a config error naming the file):
// a file any other user may read or write (it holds a secret: chmod 600), one that is not a
// regular file or is over 64 KiB, a missing profile, a profile without both keys.
Result<Credentials> read_credentials_file(const std::string& path, const std::string& profile = "default");

// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; an error when either key is
// unset or empty.
Result<Credentials> credentials_from_environment();

}  // namespace linecap::s3
