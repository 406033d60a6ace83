// Specification of Basic authentication for /metrics: header parsing, base64, and the
// credential comparison.
#include "observability/basic_auth.h"

#include <gtest/gtest.h>

namespace warren::observability {
namespace {

TEST(DecodeBase64, Rfc4648TestVectors) {
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("Zg=="), "f");
  EXPECT_EQ(decode_base64("Zm8="), "fo");
  EXPECT_EQ(decode_base64("Zm9v"), "foo");
  EXPECT_EQ(decode_base64("Zm9vYg=="), "foob");
  EXPECT_EQ(decode_base64("Zm9vYmE="), "fooba");
  EXPECT_EQ(decode_base64("Zm9vYmFy"), "foobar");
}

TEST(DecodeBase64, MissingPadding_IsAccepted) {
  EXPECT_EQ(decode_base64("Zm9vYg"), "foob");
}

TEST(DecodeBase64, InvalidInput_IsRefused) {
  EXPECT_FALSE(decode_base64("Zm9v!"));
  EXPECT_FALSE(decode_base64("Z"));
  EXPECT_FALSE(decode_base64("Zm 9v"));
}

TEST(ConstantTimeEquals, ComparesContentsAndLength) {
  EXPECT_TRUE(constant_time_equals("s3cret", "s3cret"));
  EXPECT_FALSE(constant_time_equals("s3cres", "s3cret"));
  EXPECT_FALSE(constant_time_equals("s3cre", "s3cret"));
  EXPECT_FALSE(constant_time_equals("s3crets3cret", "s3cret")) << "a repeat is not a match";
  EXPECT_FALSE(constant_time_equals("", "s3cret"));
  EXPECT_FALSE(constant_time_equals("x", ""));
  EXPECT_TRUE(constant_time_equals("", ""));
}

TEST(BasicAuth_Accepts, TheConfiguredUserAndPassword) {
  const BasicAuth auth("scraper", "s3cret");
  EXPECT_TRUE(auth.accepts("Basic c2NyYXBlcjpzM2NyZXQ="));  // scraper:s3cret
}

TEST(BasicAuth_Accepts, SchemeInAnyCaseAndSurroundingSpaces) {
  const BasicAuth auth("scraper", "s3cret");
  EXPECT_TRUE(auth.accepts("basic c2NyYXBlcjpzM2NyZXQ="));
  EXPECT_TRUE(auth.accepts("BASIC   c2NyYXBlcjpzM2NyZXQ=  "));
}

TEST(BasicAuth_Accepts, PasswordContainingColons) {
  const BasicAuth auth("scraper", "s3cret:with:colons");
  EXPECT_TRUE(auth.accepts("Basic c2NyYXBlcjpzM2NyZXQ6d2l0aDpjb2xvbnM="));
}

TEST(BasicAuth_Refuses, WrongPasswordWrongUserOtherSchemesAndGarbage) {
  const BasicAuth auth("scraper", "s3cret");
  EXPECT_FALSE(auth.accepts("Basic c2NyYXBlcjp3cm9uZw=="));  // scraper:wrong
  EXPECT_FALSE(auth.accepts("Basic aW50cnVkZXI6czNjcmV0"));  // intruder:s3cret
  EXPECT_FALSE(auth.accepts("Bearer c2NyYXBlcjpzM2NyZXQ="));
  EXPECT_FALSE(auth.accepts("Basic"));
  EXPECT_FALSE(auth.accepts("Basic c2NyYXBlcg=="));  // "scraper": no colon
  EXPECT_FALSE(auth.accepts("Basic ***"));
  EXPECT_FALSE(auth.accepts(""));
}

}  // namespace
}  // namespace warren::observability
