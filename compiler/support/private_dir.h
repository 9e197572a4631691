// Directories and files that another local user cannot plant or redirect:
// what tir's caches, build directories and the local service rely on.
//
// A directory is trusted when nobody but this user (and root) can change
// what its path names: every directory on the way is owned by root or this
// user and not writable by group or others (a sticky one such as /tmp
// excepted, as an ancestor only), every symbolic link on the way is owned
// by root or this user, and the directory itself is this user's. Levels
// made here are made 0700. What fails is refused with UNSAFE_DIRECTORY,
// naming the path, its owner and mode: a marker, header or binary found in
// such a directory is never used. (In a user namespace that does not map
// root, such as a rootless container or Bazel's sandbox, every owner from
// outside shows as the overflow uid: such an owner counts as root for the
// directories and links on the way, never for the directory itself.)

#ifndef TIR_COMPILER_SUPPORT_PRIVATE_DIR_H_
#define TIR_COMPILER_SUPPORT_PRIVATE_DIR_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tir {

enum class DirAccess {
  // Only this user: mode 0700 (one of this user's with read or search
  // access for others, as an older tir made it, is closed to 0700; one
  // writable by others is refused, since anything may be in it).
  kPrivate,
  // This user's and not writable by group or others (0755 is fine): an
  // output directory others may read.
  kOwned,
};

// Makes `path` (relative to the working directory, or absolute) where it is
// missing, each level made here 0700, and checks it and every ancestor as
// above. Errors: UNSAFE_DIRECTORY, INTERNAL (a level that cannot be made).
absl::Status MakeTrustedDirectory(const std::string &path, DirAccess access = DirAccess::kPrivate);

// The same checks without making anything: NOT_FOUND when `path` does not
// exist (its existing ancestors checked first: UNSAFE_DIRECTORY wins).
absl::Status CheckTrustedDirectory(const std::string &path, DirAccess access = DirAccess::kPrivate);

// Writes `data` to `path` whole or not at all: a new file (O_EXCL,
// O_NOFOLLOW, `mode`, a unique name) in the same directory, synced, then
// renamed over `path`, so a link or file planted at `path` is replaced and
// never followed or written through. Errors: INTERNAL (with the path and
// the system's words; in a sticky directory another user's file at `path`
// cannot be replaced).
absl::Status WriteFileReplacing(const std::string &path, absl::string_view data, mode_t mode = 0600);

}  // namespace tir

#endif  // TIR_COMPILER_SUPPORT_PRIVATE_DIR_H_
