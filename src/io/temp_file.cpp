// Anonymous temporary files: O_TMPFILE where the filesystem has it, else create-and-unlink.
#include "io/temp_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "gpusort/error.hpp"

namespace gpusort::io {

std::string temp_directory(const std::string& requested) {
  if (!requested.empty()) return requested;
  if (const char* env = std::getenv("TMPDIR"); env != nullptr && *env != '\0') return env;
  return "/tmp";
}

file_descriptor make_anonymous_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return file_descriptor(fd, "temporary file in " + dir);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    throw_error("cannot create a temporary file in " + dir, errno);
  std::string pattern = dir + "/gpusort-run-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) throw_error("cannot create a temporary file in " + dir, errno);
  ::unlink(name.data());
  return file_descriptor(fd, "temporary file in " + dir);
}

}  // namespace gpusort::io
