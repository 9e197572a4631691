#include "compiler/nvrtc/compile_cache.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace tir::nvrtc {
namespace {

std::string Kernel(int k) {
  return "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= " + std::to_string(k) + ".0f; }\n";
}

CompileOptions Sm90() {
  CompileOptions o;
  o.arch = "sm_90a";
  return o;
}

TEST(CompileCache, SecondCompileOfTheSameSourceIsAHit) {
  CompileCache cache;
  bool hit = true;
  auto a = cache.Compile(Kernel(2), Sm90(), &hit);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(hit);
  auto b = cache.Compile(Kernel(2), Sm90(), &hit);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(a->cubin, b->cubin);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().misses, 1);
}

TEST(CompileCache, KeyCoversSourceArchOptionsAndHeaders) {
  CompileOptions o = Sm90();
  const std::string base = CompileCache::Key(Kernel(1), o);
  EXPECT_NE(base, CompileCache::Key(Kernel(3), o));
  CompileOptions other = o;
  other.arch = "sm_80";
  EXPECT_NE(base, CompileCache::Key(Kernel(1), other));
  other = o;
  other.line_info = true;
  EXPECT_NE(base, CompileCache::Key(Kernel(1), other));
  other = o;
  other.headers = {{"h.h", "// x"}};
  EXPECT_NE(base, CompileCache::Key(Kernel(1), other));
  EXPECT_EQ(base, CompileCache::Key(Kernel(1), o));
}

TEST(CompileCache, ParallelCompilesMatchSequentialAndShareDuplicates) {
  CompileCache cache;
  std::vector<std::pair<std::string, CompileOptions>> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back({Kernel(i % 3), Sm90()});  // each source twice
  auto results = cache.CompileAll(jobs, 2);
  ASSERT_EQ(results.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->cubin, results[i % 3]->cubin);
  }
  EXPECT_EQ(cache.stats().misses, 3);
  EXPECT_EQ(cache.stats().hits, 3);
}

TEST(CompileCache, DirectoryPersistsAcrossInstancesButNotFailedCompiles) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/nvrtc-cache";
  {
    CompileCache first(dir);
    ASSERT_TRUE(first.Compile(Kernel(7), Sm90()).ok());
    EXPECT_FALSE(first.Compile("this is not CUDA", Sm90()).ok());
  }
  CompileCache second(dir);
  bool hit = false;
  auto k = second.Compile(Kernel(7), Sm90(), &hit);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(k->cubin.substr(1, 3), "ELF");
  EXPECT_FALSE(second.Compile("this is not CUDA", Sm90()).ok());
}

}  // namespace
}  // namespace tir::nvrtc
