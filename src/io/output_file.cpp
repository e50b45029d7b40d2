// The output file: atomic replacement of regular files, writing through for everything else.
#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <random>
#include <vector>

#include "gpusort/error.hpp"
#include "io/release_in_background.hpp"
#include "io/signal_cleanup.hpp"
#include "io/uring.hpp"

namespace gpusort::io {
namespace {

/// A replaced file at least this large is freed by another process (release_in_background):
/// below it, freeing takes less than starting that process.
constexpr std::uint64_t release_in_background_bytes = std::uint64_t{64} << 20;

std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string unique_suffix() {
  std::random_device rd;
  const auto value = (std::uint64_t{rd()} << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid());
  static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (std::uint64_t v = value; s.size() < 10; v /= 36) s += digits[v % 36];
  return s;
}

std::string hidden_name_beside(const std::string& path) {
  return parent_directory(path) + "/." + base_name(path) + ".gpusort-" + unique_suffix();
}

/// `path` with every symbolic link in its last component followed (the file a write through
/// the link would reach), so that the file is replaced and the link kept. A dangling link
/// resolves to the file it would create.
std::string follow_links(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::vector<char> buf(PATH_MAX + 1);
    const ssize_t n = ::readlink(current.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) throw_error("cannot read the symbolic link " + current, errno);
    std::string link(buf.data(), static_cast<std::size_t>(n));
    current = link.starts_with('/') ? link : parent_directory(current) + "/" + link;
  }
  throw_error("cannot write " + path, ELOOP);
}

bool proc_fd_available() { return ::access("/proc/self/fd", X_OK) == 0; }

/// Copies `bytes` from the start of `from` to the start of `to` in the kernel where it can.
void copy_file(const file_descriptor& from, const file_descriptor& to, std::uint64_t bytes) {
  std::uint64_t done = 0;
  bool in_kernel = true;
  std::vector<char> buf;
  while (done < bytes) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, 1u << 30));
    ssize_t n = -1;
    if (in_kernel) {
      auto off_in = static_cast<loff_t>(done);
      auto off_out = static_cast<loff_t>(done);
      n = ::copy_file_range(from.get(), &off_in, to.get(), &off_out, want, 0);
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        in_kernel = false;
        continue;
      }
    } else {
      buf.resize(std::size_t{8} << 20);
      n = ::pread(from.get(), buf.data(), std::min(want, buf.size()), static_cast<off_t>(done));
      if (n > 0) {
        ssize_t written = 0;
        while (written < n) {
          const ssize_t w = ::pwrite(to.get(), buf.data() + written,
                                     static_cast<std::size_t>(n - written),
                                     static_cast<off_t>(done) + written);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) throw_error("write " + to.path(), w < 0 ? errno : EIO);
          written += w;
        }
      }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_error("copy the sorted output into " + to.path(), errno);
    if (n == 0) throw_error("copy the sorted output into " + to.path() + ": the temporary file "
                            "ended early");
    done += static_cast<std::uint64_t>(n);
  }
}

/// Writes all of `data` at `offset` of `f`; errors name `target`.
void write_all_at(const file_descriptor& f, std::span<const std::byte> data, std::uint64_t offset,
                  const std::string& target) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::pwrite(f.get(), data.data() + done, data.size() - done,
                               static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw_error("write " + target, w < 0 ? errno : EIO);
    done += static_cast<std::size_t>(w);
  }
}

}  // namespace

output_file::output_file(std::string target, temp_naming naming) : target_(std::move(target)) {
  if (target_ == "-") {
    fd_ = file_descriptor::borrow(STDOUT_FILENO, "standard output");
    struct stat st {};
    if (::fstat(STDOUT_FILENO, &st) != 0) throw_error("cannot write standard output", errno);
    kind_ = kind::stream;
    if (S_ISREG(st.st_mode)) {
      // `> out.bin`: we do not own the name, so write through, but by offset, so that every
      // byte is accounted for where it lands. O_APPEND ignores offsets: append in order.
      const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
      const off_t pos = ::lseek(STDOUT_FILENO, 0, SEEK_CUR);
      if (flags >= 0 && (flags & O_APPEND) == 0 && pos >= 0) {
        kind_ = kind::positioned;
        base_offset_ = static_cast<std::uint64_t>(pos);
      } else {
        regular_stream_ = true;
        start_size_ = static_cast<std::uint64_t>(st.st_size);
      }
    }
    fd_.grow_pipe_buffer();
    return;
  }
  resolved_ = follow_links(target_);
  struct stat st {};
  if (::stat(resolved_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw_error("cannot write " + target_ + ": it is a directory");
    if (!S_ISREG(st.st_mode)) {
      // A device, FIFO or socket: renaming a file over it would destroy it. Write into it.
      kind_ = kind::stream;
      fd_ = file_descriptor::open(resolved_, O_WRONLY);
      fd_.grow_pipe_buffer();
      return;
    }
    if (::faccessat(AT_FDCWD, resolved_.c_str(), W_OK, AT_EACCESS) != 0)
      throw_error("cannot write " + target_, errno);
    existed_ = true;
    final_mode_ = st.st_mode & 07777;
    owner_uid_ = st.st_uid;
    owner_gid_ = st.st_gid;
    if (st.st_nlink > 1) {
      kind_ = kind::copy_back;
      target_fd_ = file_descriptor::open(resolved_, O_WRONLY);
    }
  } else if (errno != ENOENT) {
    throw_error("cannot write " + target_, errno);
  }
  open_temporary(naming);
  if (kind_ == kind::replace && existed_ &&
      ::fchown(fd_.get(), owner_uid_, owner_gid_) != 0) {
    // The caller may write the file but not give a new one its owner or group (a shared,
    // group-writable file): a replacement would change who may read it. Write it in place.
    kind_ = kind::copy_back;
    target_fd_ = file_descriptor::open(resolved_, O_WRONLY);
  }
}

void output_file::open_temporary(temp_naming naming) {
  const std::string dir = parent_directory(resolved_);
  // An unnamed file is linked into place through /proc/self/fd at the end: without /proc, a
  // named one (else the whole sort would run only to fail at the link).
  if (naming == temp_naming::automatic && proc_fd_available()) {
    const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    if (fd >= 0) {
      fd_ = file_descriptor(fd, target_);
      if (!existed_) {
        struct stat st {};
        if (::fstat(fd, &st) != 0) throw_error("cannot stat the output of " + target_, errno);
        final_mode_ = st.st_mode & 07777;  // 0666 less the umask, as a new file gets
      }
      return;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      throw_error("cannot create output in " + dir + " for " + target_, errno);
  }
  make_named_temporary();
}

void output_file::make_named_temporary() {
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp_path_ = hidden_name_beside(resolved_);
    // Registered before it exists: a signal delivered as open() returns (an open that waits
    // on a busy file system is where a signal lands) still finds the file to remove.
    cleanup_slot_ = register_temp_path(temp_path_);
    fd = ::open(temp_path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666);
    if (fd < 0) {
      const int err = errno;
      unregister_temp_path(cleanup_slot_);
      cleanup_slot_ = -1;
      if (err != EEXIST) {
        temp_path_.clear();
        throw_error("cannot create a temporary file beside " + target_, err);
      }
    }
  }
  if (fd < 0) {
    temp_path_.clear();
    throw_error("cannot create a temporary file beside " + target_, EEXIST);
  }
  fd_ = file_descriptor(fd, target_);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_error("cannot stat " + temp_path_, errno);
  if (!existed_) final_mode_ = st.st_mode & 07777;
  // Visible in the directory while the sort runs: private until it is the finished output.
  if (::fchmod(fd, 0600) != 0) throw_error("chmod " + temp_path_, errno);
}

output_file::~output_file() {
  fd_.reset();
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  unregister_temp_path(cleanup_slot_);
}

void output_file::apply_final_mode() {
  // The owner was given in the constructor: a mode with set-id bits must come after it, as
  // chown clears them.
  if (::fchmod(fd_.get(), final_mode_) != 0) throw_error("chmod the output of " + target_, errno);
}

void output_file::link_and_rename() {
  if (temp_path_.empty()) {
    // Give the unnamed file a name beside the target, then move it over the target.
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_.get());
    for (int attempt = 0; attempt < 100 && temp_path_.empty(); ++attempt) {
      const std::string name = hidden_name_beside(resolved_);
      cleanup_slot_ = register_temp_path(name);  // before the name exists, as above
      int ret = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
      if (ret != 0 && errno == ENOENT)  // /proc went away: needs CAP_DAC_READ_SEARCH
        ret = ::linkat(fd_.get(), "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
      if (ret == 0) {
        temp_path_ = name;
      } else {
        const int err = errno;
        unregister_temp_path(cleanup_slot_);
        cleanup_slot_ = -1;
        if (err != EEXIST)
          throw_error("cannot link the finished output into " + parent_directory(resolved_),
                      err);
      }
    }
    if (temp_path_.empty())
      throw_error("cannot link the finished output into " + parent_directory(resolved_), EEXIST);
  }
  if (::rename(temp_path_.c_str(), resolved_.c_str()) != 0)
    throw_error("cannot rename " + temp_path_ + " to " + resolved_, errno);
}

file_descriptor output_file::hold_replaced_file() const {
  if (!existed_) return {};
  // O_PATH: a reference to the file, whatever its permissions; it reads nothing.
  const int fd = ::open(resolved_.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return {};
  file_descriptor held(fd, resolved_);
  struct stat st {};
  // Only a file that the rename would free, and large enough that freeing it takes time.
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      static_cast<std::uint64_t>(st.st_blocks) * 512 < release_in_background_bytes)
    return {};
  return held;
}

void output_file::copy_into_target(std::uint64_t bytes) {
  copy_file(fd_, target_fd_, bytes);
  if (::ftruncate(target_fd_.get(), static_cast<off_t>(bytes)) != 0)
    throw_error("truncate " + target_, errno);
}

void output_file::shrink(std::uint64_t written, std::uint64_t kept) {
  GPUSORT_EXPECTS(is_private_file() && kept <= written, "cannot shrink the output " + target_);
  if (::ftruncate(fd_.get(), static_cast<off_t>(header_.size() + kept)) != 0)
    throw_error("truncate the output of " + target_, errno);
}

void output_file::set_header(std::vector<std::byte> header) {
  if (header_written_.load()) {
    GPUSORT_EXPECTS(header == header_, "cannot change the header of " + target_ +
                                           ": it went out ahead of the records");
    return;
  }
  GPUSORT_EXPECTS(header_.empty() || header.size() == header_.size(),
                  "the header of " + target_ + " cannot change its length once records follow it");
  header_ = std::move(header);
}

void output_file::write_stream_header(uring& ring) {
  if (!is_stream() || header_.empty() || header_written_.load()) return;
  ring.write_stream(fd_, header_);
  header_written_.store(true);
}

void output_file::commit(bool fsync, std::uint64_t bytes) {
  // Written last, so that it says what the records turned out to be (--unique).
  if (!is_stream()) write_all_at(fd_, header_, base_offset_, target_);
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) throw_error("cannot stat the output of " + target_, errno);
  // Every byte must be where it was written: a file that ended short means a write was lost.
  auto check_size = [&](std::uint64_t expected) {
    if (static_cast<std::uint64_t>(st.st_size) < expected)
      throw_error("write " + target_ + ": only " +
                  std::to_string(static_cast<std::uint64_t>(st.st_size)) + " of " +
                  std::to_string(expected) + " bytes reached the file", EIO);
  };
  auto sync = [&](const file_descriptor& f) {
    // Pipes, terminals and some devices cannot be synced: nothing is lost by that.
    if (::fsync(f.get()) != 0 && errno != EINVAL && errno != EROFS)
      throw_error("fsync " + target_, errno);
  };
  const std::uint64_t header_bytes = header_.size();
  switch (kind_) {
    case kind::stream:
      if (!header_written_.load()) {
        uring ring(1);
        write_stream_header(ring);
      }
      if (regular_stream_) check_size(start_size_ + header_bytes + bytes);
      if (fsync) sync(fd_);
      break;
    case kind::positioned:
      check_size(data_offset() + bytes);
      if (::lseek(fd_.get(), static_cast<off_t>(data_offset() + bytes), SEEK_SET) < 0)
        throw_error("seek " + target_, errno);
      if (fsync) sync(fd_);
      break;
    case kind::replace: {
      check_size(header_bytes + bytes);
      if (fsync) sync(fd_);
      apply_final_mode();
      file_descriptor replaced = hold_replaced_file();
      link_and_rename();
      committed_ = true;
      if (fsync) {
        // Make the rename itself durable.
        const std::string dir = parent_directory(resolved_);
        const file_descriptor d = file_descriptor::open(dir, O_RDONLY | O_DIRECTORY);
        if (::fsync(d.get()) != 0) throw_error("fsync " + dir, errno);
      }
      release_in_background(std::move(replaced));
      break;
    }
    case kind::copy_back:
      check_size(header_bytes + bytes);
      copy_into_target(header_bytes + bytes);
      if (fsync) sync(target_fd_);
      target_fd_.close();
      break;
  }
  committed_ = true;
  fd_.close();
}

}  // namespace gpusort::io
