// follow_directory: keeps a long-held directory descriptor on what its path names now.
//
// A capture volume's file system that failed (EIO, ext4 gone read-only) is repaired by
// unmounting it, checking it and mounting it again on the same path; a descriptor opened
// before still refers to the old, dead directory. When `path` now names another directory
// than `fd`, that directory is put under the same number (dup3), so every holder of the
// number follows without being told.
#pragma once

#include <string>

namespace linecap {

// Returns whether `fd` was moved to the directory `path` names now; false when it names
// the same one (or cannot be opened: `fd` is left as it is).
bool follow_directory(int fd, const std::string& path);

}  // namespace linecap
