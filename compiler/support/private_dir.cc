#include "compiler/support/private_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compiler/support/status.h"

namespace tir {
namespace {

absl::Status Internal(const std::string &what) {
  return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status Unsafe(const std::string &path, const struct stat &st, const std::string &why) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY",
                   absl::StrFormat("%s %s (owner uid %d, mode %04o); tir keeps its caches, builds and service only "
                                   "under directories that nobody but root and this user (uid %d) can change",
                                   path, why, st.st_uid, st.st_mode & 07777, ::geteuid()));
}

// In a user namespace that does not map root (a rootless container,
// Bazel's sandbox), every owner outside it, root included, shows as the
// overflow uid. Such an owner is taken as root for the directories and
// links on the way (which still must not be writable by group or others),
// never for the directory itself, which must be this user's.
bool UnmappedOwner(uid_t uid) {
  static const uid_t overflow = [] {
    std::ifstream in("/proc/sys/kernel/overflowuid");
    long v = -1;
    return in >> v && v >= 0 ? static_cast<uid_t>(v) : static_cast<uid_t>(-1);
  }();
  static const bool root_unmapped = [] {
    std::ifstream in("/proc/self/uid_map");
    long inside = 0, outside = 0, count = 0;
    bool any = false;
    while (in >> inside >> outside >> count) {
      any = true;
      if (inside == 0) return false;
    }
    return any;
  }();
  return root_unmapped && uid == overflow;
}

bool TrustedOwner(uid_t uid) { return uid == 0 || uid == ::geteuid() || UnmappedOwner(uid); }

std::string Join(const std::string &dir, const std::string &name) { return dir == "/" ? "/" + name : dir + "/" + name; }

std::string Parent(const std::string &dir) {
  const size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

// A directory on the way: root's or this user's, and not writable by group
// or others unless sticky (where only an entry's owner may replace it).
absl::Status CheckAncestor(const std::string &path, const struct stat &st) {
  if (!S_ISDIR(st.st_mode)) return Unsafe(path, st, "is not a directory");
  if (!TrustedOwner(st.st_uid)) return Unsafe(path, st, "is owned by another user");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Unsafe(path, st, "is writable by group or others and not sticky");
  }
  return absl::OkStatus();
}

// The directory itself: this user's, not a link, not writable by others;
// `tighten`: one of this user's with other access left is closed to 0700.
absl::Status CheckFinal(const std::string &path, DirAccess access, bool tighten) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Internal("cannot stat " + path);
  if (S_ISLNK(st.st_mode)) return Unsafe(path, st, "is a symbolic link, not a directory");
  if (!S_ISDIR(st.st_mode)) return Unsafe(path, st, "is not a directory");
  if (st.st_uid != ::geteuid()) return Unsafe(path, st, "is not this user's");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return Unsafe(path, st, "is writable by group or others");
  if (access == DirAccess::kPrivate && (st.st_mode & 077) != 0) {
    if (!tighten || ::chmod(path.c_str(), 0700) != 0) return Unsafe(path, st, "is open to group or others (0700 needed)");
  }
  return absl::OkStatus();
}

// `path` resolved component by component from /, every directory and link
// passed on the way checked: the deepest existing directory (the path
// itself when nothing is missing) and the components below it that do not
// exist yet.
struct Resolved {
  std::string existing;
  std::vector<std::string> missing;
};

absl::StatusOr<Resolved> Resolve(const std::string &input) {
  if (input.empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "no directory given");
  std::string absolute = input;
  if (absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return Internal("cannot read the working directory");
    absolute = absl::StrCat(cwd, "/", input);
  }
  std::deque<std::string> todo;
  for (absl::string_view c : absl::StrSplit(absolute, '/', absl::SkipEmpty())) todo.emplace_back(c);
  struct stat st;
  if (::lstat("/", &st) != 0) return Internal("cannot stat /");
  TIR_RETURN_IF_ERROR(CheckAncestor("/", st));
  std::string cur = "/";
  int links = 0;
  while (!todo.empty()) {
    const std::string c = todo.front();
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      cur = Parent(cur);  // `cur` holds no links: its parent is what ".." names
      continue;
    }
    const std::string next = Join(cur, c);
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno != ENOENT) return Internal("cannot stat " + next);
      Resolved out{cur, {c}};
      for (std::string &rest : todo) {
        if (rest == "..") {
          return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                           absl::StrCat(input, " goes up (..) from a directory that does not exist"));
        }
        if (rest != ".") out.missing.push_back(std::move(rest));
      }
      return out;
    }
    if (S_ISLNK(st.st_mode)) {
      // The directory itself must not be a link (checked by the caller);
      // a link on the way is followed when root or this user owns it.
      if (todo.empty()) return Resolved{next, {}};
      if (!TrustedOwner(st.st_uid)) return Unsafe(next, st, "is a symbolic link owned by another user");
      if (++links > 40) {
        return MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY", input + " passes too many symbolic links");
      }
      std::string target(PATH_MAX, '\0');
      const ssize_t n = ::readlink(next.c_str(), target.data(), target.size());
      if (n < 0) return Internal("cannot read the link " + next);
      target.resize(static_cast<size_t>(n));
      std::vector<std::string> parts = absl::StrSplit(target, '/', absl::SkipEmpty());
      todo.insert(todo.begin(), parts.begin(), parts.end());
      if (!target.empty() && target[0] == '/') cur = "/";
      continue;
    }
    if (todo.empty()) return Resolved{next, {}};  // the directory itself: the caller's check
    TIR_RETURN_IF_ERROR(CheckAncestor(next, st));
    cur = next;
  }
  return Resolved{cur, {}};
}

}  // namespace

absl::Status MakeTrustedDirectory(const std::string &path, DirAccess access) {
  TIR_ASSIGN_OR_RETURN(Resolved r, Resolve(path));
  std::string cur = r.existing;
  // `cur` was checked as an ancestor by Resolve; each level made below it
  // is checked before the next goes in it.
  for (size_t i = 0; i < r.missing.size(); ++i) {
    cur = Join(cur, r.missing[i]);
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return Internal("cannot create " + cur);
    // Made here, or by someone else just now: either way checked below (a
    // level on the way as this user's own, the last as the directory).
    if (i + 1 < r.missing.size()) {
      TIR_RETURN_IF_ERROR(CheckFinal(cur, DirAccess::kOwned, false));
    }
  }
  return CheckFinal(cur, access, true);
}

absl::Status CheckTrustedDirectory(const std::string &path, DirAccess access) {
  TIR_ASSIGN_OR_RETURN(Resolved r, Resolve(path));
  if (!r.missing.empty()) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", path + " does not exist");
  return CheckFinal(r.existing, access, false);
}

absl::Status WriteFileReplacing(const std::string &path, absl::string_view data, mode_t mode) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", path + " names no file");
  }
  // A name of its own (mkostemp: O_CREAT | O_EXCL, so never a link's target).
  std::string tmp = absl::StrCat(Join(dir, "." + base.substr(0, 200)), ".XXXXXX");
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Internal("cannot create a file in " + dir);
  const auto fail = [&](const std::string &what) {
    const absl::Status s = Internal(what);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  if (::fchmod(fd, mode) != 0) return fail("cannot set the mode of " + tmp);
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot sync " + tmp);
  if (::close(fd) != 0) {
    const absl::Status s = Internal("cannot close " + tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  // rename replaces a link at `path` itself, never what it points to.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status s = Internal("cannot replace " + path);
    ::unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

}  // namespace tir
