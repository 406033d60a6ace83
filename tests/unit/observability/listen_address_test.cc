// Specification of [metrics] listen parsing: what civetweb is given, and which addresses count as
// loopback (the others log a warning at start).
#include "observability/listen_address.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace warren::observability {
namespace {

TEST(ListenAddress_Parse, Ipv4HostAndPort_AreSplit) {
  const auto address = ListenAddress::parse("127.0.0.1:9464");
  EXPECT_EQ(address.host, "127.0.0.1");
  EXPECT_EQ(address.port, 9464);
  EXPECT_FALSE(address.ipv6);
  EXPECT_EQ(address.to_string(), "127.0.0.1:9464");
}

TEST(ListenAddress_Parse, BracketedIpv6_KeepsBracketsForCivetwebOnly) {
  const auto address = ListenAddress::parse("[::1]:9464");
  EXPECT_EQ(address.host, "::1");
  EXPECT_TRUE(address.ipv6);
  EXPECT_EQ(address.port, 9464);
  EXPECT_EQ(address.to_string(), "[::1]:9464");
}

TEST(ListenAddress_Parse, PortZero_MeansAnyFreePort) {
  EXPECT_EQ(ListenAddress::parse("127.0.0.1:0").port, 0);
}

TEST(ListenAddress_Parse, HostName_IsAccepted) {
  EXPECT_EQ(ListenAddress::parse("localhost:9464").host, "localhost");
}

TEST(ListenAddress_Parse, MalformedAddresses_AreRefusedQuotingTheText) {
  for (const char* text :
       {"9464", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:9464s",
        "127.0.0.1:9464,0.0.0.0:80", "::1:9464", "[::1]9464", "[]:9464", "bad host:9464"}) {
    try {
      ListenAddress::parse(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
    }
  }
}

TEST(ListenAddress_IsLoopback, LoopbackAddresses) {
  for (const char* text : {"127.0.0.1:9464", "127.1.2.3:9464", "localhost:9464", "[::1]:9464",
                           "[::ffff:127.0.0.1]:9464"}) {
    EXPECT_TRUE(ListenAddress::parse(text).is_loopback()) << text;
  }
}

TEST(ListenAddress_IsLoopback, EverythingElse_IsNot) {
  for (const char* text : {"0.0.0.0:9464", "10.0.0.5:9464", "[::]:9464", "[2001:db8::1]:9464",
                           "metrics.internal:9464"}) {
    EXPECT_FALSE(ListenAddress::parse(text).is_loopback()) << text;
  }
}

}  // namespace
}  // namespace warren::observability
