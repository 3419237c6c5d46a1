#include "util/follow_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/unique_fd.hpp"

namespace linecap {

bool follow_directory(int fd, const std::string& path) {
    const UniqueFd now(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat held {}, named {};
    if (!now || ::fstat(fd, &held) != 0 || ::fstat(now.get(), &named) != 0) return false;
    if (held.st_dev == named.st_dev && held.st_ino == named.st_ino) return false;
    return ::dup3(now.get(), fd, O_CLOEXEC) >= 0;
}

}  // namespace linecap
