// Files that hold secrets — API tokens, an object store's keys: read whole, and refused
// unless only their owner may read them, since a secret that another user of the machine
// can read is not one. The error names the file and the fix:
//   "tokens file /etc/linecap/tokens is accessible by group or others (mode 0640); chmod 600 …"
#pragma once

#include <cstddef>
#include <string>

#include "util/result.hpp"

namespace linecap {

struct SecretFileRules {
    size_t max_bytes = 64 * 1024;
    // A daemon opens its own files without following a symlink; a user's tool follows them
    // as any program does.
    bool follow_symlinks = false;
};

// The contents of the file at `path`; `what` names it in errors ("tokens file").
// Errors (config errors): cannot be opened, not a regular file, larger than max_bytes,
// accessible by group or others.
Result<std::string> read_secret_file(const std::string& what, const std::string& path, SecretFileRules rules = {});

}  // namespace linecap
