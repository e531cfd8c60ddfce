// Replays every committed fuzz input through the same entry points the libFuzzer harnesses use
// (tests/fuzz/targets.cpp): the seed corpora (tests/fuzz/corpus/<target>/) and the reproducers
// of past findings (tests/fuzz/repro/<target>/). A reproducer that crashes again kills this
// test; one that breaks an invariant aborts it; any exception other than opv::Error fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "targets.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void replay(const char* kind, bool must_exist) {
  const fs::path root = fs::path(OPV_SOURCE_DIR) / "tests/fuzz" / kind;
  size_t total = 0;
  for (const auto& t : opv::fuzz::targets()) {
    for (const fs::path& f : files_in(root / t.name)) {
      SCOPED_TRACE(f.string());
      std::vector<uint8_t> bytes = read_all(f);
      EXPECT_NO_THROW(t.fn(bytes.data(), bytes.size()));
      ++total;
    }
  }
  if (must_exist) {
    EXPECT_GT(total, 0u) << "no inputs under " << root;
  }
}

}  // namespace

TEST(FuzzRegress, SeedCorporaRunClean) { replay("corpus", true); }

TEST(FuzzRegress, ReproducersOfFindingsRunClean) { replay("repro", false); }

TEST(FuzzRegress, EveryTargetHasASeedCorpus) {
  for (const auto& t : opv::fuzz::targets())
    EXPECT_FALSE(files_in(fs::path(OPV_SOURCE_DIR) / "tests/fuzz/corpus" / t.name).empty()) << t.name;
}

TEST(FuzzRegress, ArtifactFixupKeepsValidArtifactsAndFixesChecksums) {
  // A tiny valid artifact is rebuilt byte for byte; a flipped byte in the plan still yields a
  // consistent header (the loader then fails on the content, if at all, not on a CRC).
  for (const fs::path& f : files_in(fs::path(OPV_SOURCE_DIR) / "tests/fuzz/corpus/opv")) {
    std::vector<uint8_t> a = read_all(f);
    EXPECT_EQ(opv::fuzz::fix_artifact(a.data(), a.size()), a) << f;
  }
}
