#include "compiler/support/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/support/cli.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir {
namespace {

constexpr uid_t kOther = 65534;  // nobody: another local user

mode_t Mode(const std::string &path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string Slurp(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tir-pd.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string root_;
};

TEST_F(PrivateDirTest, EveryLevelMadeHereIsMade0700AndAgainIsFine) {
  const std::string dir = root_ + "/a/b/c";
  ASSERT_TRUE(MakeTrustedDirectory(dir).ok());
  for (const std::string &d : {root_ + "/a", root_ + "/a/b", dir}) EXPECT_EQ(Mode(d), 0700u) << d;
  EXPECT_TRUE(MakeTrustedDirectory(dir).ok());
  EXPECT_TRUE(CheckTrustedDirectory(dir).ok());
  // A relative path is the working directory's.
  const std::string cwd = std::filesystem::current_path().string();
  ASSERT_EQ(::chdir(root_.c_str()), 0);
  EXPECT_TRUE(MakeTrustedDirectory("rel/x").ok());
  ASSERT_EQ(::chdir(cwd.c_str()), 0);
  EXPECT_EQ(Mode(root_ + "/rel/x"), 0700u);
}

TEST_F(PrivateDirTest, CheckingMakesNothing) {
  EXPECT_EQ(ReasonOf(CheckTrustedDirectory(root_ + "/none/here")), "NOT_FOUND");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/none"));
}

TEST_F(PrivateDirTest, ThisUsersOwnOpenDirectoryIsClosedOneWritableByOthersIsRefused) {
  ASSERT_EQ(::mkdir((root_ + "/open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((root_ + "/open").c_str(), 0755), 0);
  EXPECT_EQ(ReasonOf(CheckTrustedDirectory(root_ + "/open")), "UNSAFE_DIRECTORY") << "checking changes nothing";
  EXPECT_TRUE(CheckTrustedDirectory(root_ + "/open", DirAccess::kOwned).ok()) << "readable by others is fine for output";
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/open").ok());
  EXPECT_EQ(Mode(root_ + "/open"), 0700u);
  for (mode_t m : {0770, 0777, 01777}) {
    ASSERT_EQ(::chmod((root_ + "/open").c_str(), m), 0);
    EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/open")), "UNSAFE_DIRECTORY") << std::oct << m;
    EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/open", DirAccess::kOwned)), "UNSAFE_DIRECTORY") << std::oct << m;
    EXPECT_EQ(Mode(root_ + "/open"), m) << "left as it is";
  }
}

TEST_F(PrivateDirTest, AnAncestorWritableByOthersIsRefusedUnlessSticky) {
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/shared").ok());
  ASSERT_EQ(::chmod((root_ + "/shared").c_str(), 0777), 0);
  const absl::Status s = MakeTrustedDirectory(root_ + "/shared/mine/cache");
  EXPECT_EQ(ReasonOf(s), "UNSAFE_DIRECTORY") << s;
  EXPECT_NE(s.message().find(root_ + "/shared "), std::string::npos) << s << ": names the directory at fault";
  EXPECT_FALSE(std::filesystem::exists(root_ + "/shared/mine")) << "nothing is made under it";
  ASSERT_EQ(::chmod((root_ + "/shared").c_str(), 0775), 0);
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/shared/mine")), "UNSAFE_DIRECTORY") << "group-writable";
  // Sticky, as /tmp: entries are replaced only by their owners.
  ASSERT_EQ(::chmod((root_ + "/shared").c_str(), 01777), 0);
  EXPECT_TRUE(MakeTrustedDirectory(root_ + "/shared/mine/cache").ok());
  EXPECT_EQ(Mode(root_ + "/shared/mine"), 0700u);
}

TEST_F(PrivateDirTest, TheDirectoryMustNotBeALinkALinkOnTheWayIsFollowed) {
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/real/sub").ok());
  std::filesystem::create_directory_symlink(root_ + "/real", root_ + "/via");
  std::filesystem::create_directory_symlink(root_ + "/real/sub", root_ + "/link");
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/link")), "UNSAFE_DIRECTORY");
  EXPECT_EQ(ReasonOf(CheckTrustedDirectory(root_ + "/link")), "UNSAFE_DIRECTORY");
  EXPECT_TRUE(MakeTrustedDirectory(root_ + "/via/sub/deeper").ok());
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/real/sub/deeper"));
  // A link to a shared directory: what it names is checked, not the link.
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/open").ok());
  ASSERT_EQ(::chmod((root_ + "/open").c_str(), 0777), 0);
  std::filesystem::create_directory_symlink(root_ + "/open", root_ + "/to-open");
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/to-open/x")), "UNSAFE_DIRECTORY");
  // Relative targets and "..", resolved where the link is.
  std::filesystem::create_directory_symlink("real/../real/sub", root_ + "/rel");
  EXPECT_TRUE(MakeTrustedDirectory(root_ + "/rel/y").ok());
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/real/sub/y"));
}

TEST_F(PrivateDirTest, AnotherUsersDirectoryOrLinkOnTheWayIsRefused) {
  // Planted by another user: the directory itself, an ancestor, a link.
  ASSERT_EQ(::mkdir((root_ + "/theirs").c_str(), 0700), 0);
  if (::geteuid() == kOther || ::chown((root_ + "/theirs").c_str(), kOther, kOther) != 0) {
    GTEST_SKIP() << "cannot make a directory another user's here (that needs root outside a user namespace)";
  }
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/theirs")), "UNSAFE_DIRECTORY");
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/theirs/mine")), "UNSAFE_DIRECTORY");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/theirs/mine"));
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/real").ok());
  std::filesystem::create_directory_symlink(root_ + "/real", root_ + "/their-link");
  ASSERT_EQ(::lchown((root_ + "/their-link").c_str(), kOther, kOther), 0);
  EXPECT_EQ(ReasonOf(MakeTrustedDirectory(root_ + "/their-link/x")), "UNSAFE_DIRECTORY");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/real/x"));
}

TEST_F(PrivateDirTest, AFileIsWrittenByRenameAndALinkPlantedAtItsPathIsReplacedNotFollowed) {
  ASSERT_TRUE(MakeTrustedDirectory(root_ + "/d").ok());
  const std::string victim = root_ + "/victim";
  { std::ofstream(victim) << "precious"; }
  std::filesystem::create_symlink(victim, root_ + "/d/out.pb");
  ASSERT_TRUE(WriteFileReplacing(root_ + "/d/out.pb", "new", 0644).ok());
  EXPECT_EQ(Slurp(victim), "precious") << "the link's target is untouched";
  EXPECT_FALSE(std::filesystem::is_symlink(root_ + "/d/out.pb"));
  EXPECT_EQ(Slurp(root_ + "/d/out.pb"), "new");
  EXPECT_EQ(Mode(root_ + "/d/out.pb"), 0644u);
  ASSERT_TRUE(WriteFileReplacing(root_ + "/d/out.pb", "newer").ok());
  EXPECT_EQ(Slurp(root_ + "/d/out.pb"), "newer");
  EXPECT_EQ(Mode(root_ + "/d/out.pb"), 0600u);
  int entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(root_ + "/d")) entries += e.exists() ? 1 : 0;
  EXPECT_EQ(entries, 1) << "no temporary file is left";
  EXPECT_EQ(ReasonOf(WriteFileReplacing(root_ + "/none/out.pb", "x")), "INTERNAL");
}

class CacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char *v : {"XDG_CACHE_HOME", "HOME"}) {
      const char *was = std::getenv(v);
      saved_.emplace_back(v, was ? std::optional<std::string>(was) : std::nullopt);
    }
  }
  void TearDown() override {
    for (const auto &[name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(CacheDirTest, NeverASharedDirectoryWhenHomeAndXdgAreUnset) {
  setenv("XDG_CACHE_HOME", "/x/y", 1);
  EXPECT_EQ(CacheDir(), "/x/y/tir");
  setenv("XDG_CACHE_HOME", "relative/dir", 1);  // ignored, as the XDG spec says
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(CacheDir(), "/home/u/.cache/tir");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  const std::string dir = CacheDir();
  EXPECT_NE(dir.rfind("/tmp", 0), 0u) << dir;
  if (!dir.empty()) {
    EXPECT_EQ(dir.substr(dir.size() - 11), "/.cache/tir") << "the passwd entry's home";
    ASSERT_TRUE(UserCacheDir().ok());
  } else {
    EXPECT_EQ(ReasonOf(UserCacheDir().status()), "NO_CACHE_DIRECTORY");
  }
}

}  // namespace
}  // namespace tir
