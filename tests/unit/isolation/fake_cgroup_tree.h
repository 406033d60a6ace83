// A directory tree standing in for a cgroup v2 hierarchy (a test cannot count on a delegated
// cgroup with the memory controller): the host's cgroup /system.slice/warren.service, offered
// the memory controller, writable, holding the host. Files are plain files here: what the host
// writes stays as written, and nothing appears by itself (a leaf has no memory.events until the
// test writes one).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace warren::isolation::test_cgroups {

inline std::string read(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file) << text;
}

class FakeCgroupTree {
 public:
  // /proc/self/cgroup of a host in the service's cgroup.
  static constexpr const char* kCgroupFile =
      "1:name=systemd:/system.slice/warren.service\n0::/system.slice/warren.service\n";

  FakeCgroupTree() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "warren-cgroup-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
    service_ = root_ / "system.slice" / "warren.service";
    std::filesystem::create_directories(service_);
    write(service_ / "cgroup.controllers", "cpuset cpu io memory pids\n");
    write(service_ / "cgroup.type", "domain\n");
    write(service_ / "cgroup.subtree_control", "");
    write(service_ / "cgroup.procs", "4242\n");
  }
  ~FakeCgroupTree() { std::filesystem::remove_all(root_); }
  FakeCgroupTree(const FakeCgroupTree&) = delete;
  FakeCgroupTree& operator=(const FakeCgroupTree&) = delete;

  const std::filesystem::path& root() const { return root_; }
  const std::filesystem::path& service() const { return service_; }

 private:
  std::filesystem::path root_;
  std::filesystem::path service_;
};

}  // namespace warren::isolation::test_cgroups
