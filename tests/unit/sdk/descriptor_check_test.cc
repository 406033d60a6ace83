// host_abi/descriptor_check.h: what the loader and the harness refuse in a descriptor, in the
// order abi.h's rules say, and what a copy of an older minor's descriptor holds.
#include "warren/host_abi/descriptor_check.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>

#include "warren/detail/abi_sizes.h"

namespace warren::host_abi {
namespace {

void* create(const warren_host_api*, void*, char*, std::size_t) {
  return nullptr;
}
void destroy(void*) {}
void handle(void*, const warren_message*, void*) {}

warren_plugin_descriptor valid() {
  warren_plugin_descriptor descriptor{};
  descriptor.struct_size = sizeof descriptor;
  descriptor.abi_major = WARREN_ABI_MAJOR;
  descriptor.abi_minor = WARREN_ABI_MINOR;
  descriptor.name = "orders";
  descriptor.version = "1.0.0";
  descriptor.create = &create;
  descriptor.destroy = &destroy;
  descriptor.handle = &handle;
  return descriptor;
}

TEST(DescriptorCheck, ValidDescriptorOfThisOrAnOlderMinor_IsAccepted) {
  warren_plugin_descriptor descriptor = valid();
  EXPECT_EQ(descriptor_refusal(descriptor), std::nullopt);
  descriptor.abi_minor = 0;
  EXPECT_EQ(descriptor_refusal(descriptor), std::nullopt);
}

TEST(DescriptorCheck, TooSmall_IsRefusedBeforeAnythingElseIsRead) {
  warren_plugin_descriptor descriptor = valid();
  descriptor.struct_size = 4;
  descriptor.abi_major = 99;  // would be refused too, but the size comes first
  EXPECT_EQ(descriptor_refusal(descriptor),
            "its descriptor is 4 bytes, smaller than the " +
                std::to_string(detail::kDescriptorV1_0Size) +
                " bytes of Warren ABI 1.0: the plugin is damaged or was not built with the Warren "
                "SDK; rebuild it with WARREN_PLUGIN(...)");
}

TEST(DescriptorCheck, OtherMajorOrNewerMinor_IsRefusedWithWhatToDo) {
  warren_plugin_descriptor descriptor = valid();
  descriptor.abi_major = WARREN_ABI_MAJOR + 1;
  descriptor.name = nullptr;  // not read: the version comes first
  EXPECT_EQ(descriptor_refusal(descriptor),
            "built for Warren ABI 2.x, this host speaks 1.x: "
            "rebuild the plugin against this host's SDK");
  descriptor = valid();
  descriptor.abi_minor = WARREN_ABI_MINOR + 1;
  EXPECT_EQ(descriptor_refusal(descriptor),
            "built for Warren ABI 1.3, newer than this host's 1.2: upgrade the host or rebuild "
            "the plugin against this host's SDK");
}

TEST(DescriptorCheck, MissingNameVersionOrFunctions_AreRefused) {
  warren_plugin_descriptor descriptor = valid();
  descriptor.name = "";
  EXPECT_EQ(descriptor_refusal(descriptor), "its descriptor has no name");
  descriptor = valid();
  descriptor.version = nullptr;
  EXPECT_EQ(descriptor_refusal(descriptor), "its descriptor has no version");
  descriptor = valid();
  descriptor.create = nullptr;
  descriptor.handle = nullptr;
  EXPECT_EQ(descriptor_refusal(descriptor), "its descriptor lacks the function(s) create, handle");
}

TEST(DescriptorCheck, Copy_TakesOnlyWhatStructSizeCovers) {
  struct Larger {
    warren_plugin_descriptor known;
    void* appended_later;
  } larger{valid(), nullptr};
  larger.known.struct_size = offsetof(warren_plugin_descriptor, handle);  // ends before handle

  const warren_plugin_descriptor copy = copy_descriptor(larger.known);

  EXPECT_EQ(copy.create, &create);
  EXPECT_EQ(copy.handle, nullptr) << "beyond struct_size: left zero";
}

}  // namespace
}  // namespace warren::host_abi
