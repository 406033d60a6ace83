// Issue 19 item 18: conf/warren.toml shows the per-replica queue (server_named, exclusive,
// auto_delete) as a commented block. Uncommented, it must load with the rest of the file, so
// the example cannot rot.
#include <fstream>
#include <sstream>
#include <string>

#include "config_test_support.h"

namespace warren::config {
namespace {

const std::string kExample = std::string(WARREN_SOURCE_DIR) + "/conf/warren.toml";

// conf/warren.toml with the lines of the per-replica block uncommented (those after its first
// bare "#" line, up to the end of the comment).
std::string with_per_replica_block_uncommented() {
  std::ifstream in(kExample);
  EXPECT_TRUE(in.good()) << "cannot read " << kExample;
  std::ostringstream out;
  enum { before, prose, code } state = before;
  for (std::string line; std::getline(in, line);) {
    if (state == before && line.starts_with("# A queue per host replica"))
      state = prose;
    else if (state == prose && line == "#")
      state = code;
    else if (state == code && line.starts_with("# "))
      line = line.substr(2);
    else if (state == code && !line.starts_with("#"))
      state = before;
    out << line << "\n";
  }
  EXPECT_NE(state, prose) << "no per-replica block in " << kExample;
  return out.str();
}

TEST(PerReplicaQueueExample, UncommentedInConfWarrenToml_Loads) {
  const Config config = parse_config(with_per_replica_block_uncommented(), "conf/warren.toml",
                                     test::without_environment());

  const QueueConfig* queue = config.find_queue("livraria.cache");
  ASSERT_NE(queue, nullptr);
  EXPECT_TRUE(queue->server_named);
  EXPECT_TRUE(queue->exclusive);
  EXPECT_TRUE(queue->auto_delete);
  EXPECT_EQ(queue->type, QueueType::classic);
  ASSERT_NE(config.find_worker("cache"), nullptr);
  EXPECT_EQ(config.find_worker("cache")->queue, "livraria.cache");
}

}  // namespace
}  // namespace warren::config
