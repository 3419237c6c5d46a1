#include "s3/credentials.hpp"

#include <cstdlib>
#include <sstream>

#include "util/secret_file.hpp"

namespace linecap::s3 {

namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

Result<Credentials> read_credentials_file(const std::string& path, const std::string& profile) {
    const std::string where = "credentials file " + path;
    auto text = read_secret_file("credentials file", path);
    if (!text) return text.error();

    Credentials c;
    std::istringstream lines(text.value());
    std::string line, section;
    bool found = false;
    while (std::getline(lines, line)) {
        line = trim(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            section = trim(line.substr(1, line.size() - 2));
            if (section.starts_with("profile ")) section = trim(section.substr(8));  // ~/.aws/config style
            found = found || section == profile;
            continue;
        }
        if (section != profile) continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
        if (key == "aws_access_key_id") c.access_key = value;
        if (key == "aws_secret_access_key") c.secret_key = value;
        if (key == "aws_session_token") c.session_token = value;
    }
    if (!found) return config_error(where + ": no [" + profile + "] profile");
    if (c.access_key.empty() || c.secret_key.empty()) {
        return config_error(where + ": profile [" + profile + "] lacks aws_access_key_id or aws_secret_access_key");
    }
    return c;
}

Result<Credentials> credentials_from_environment() {
    auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v ? v : "");
    };
    Credentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
    if (c.access_key.empty() || c.secret_key.empty()) {
        return config_error("no credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set");
    }
    return c;
}

}  // namespace linecap::s3
