// tls_client_files_problem: the [broker] TLS files loaded at start, as a connection loads them.
// The keys and certificates are made here with OpenSSL (P-256, self-signed), no openssl command.
#include "broker/tls_client_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "temp_dir.h"

namespace warren::broker {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

using Key = std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)>;
using Certificate = std::unique_ptr<X509, void (*)(X509*)>;

Key new_key() {
  return Key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
}

Certificate self_signed(EVP_PKEY* key) {
  Certificate certificate(X509_new(), &X509_free);
  X509_set_version(certificate.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(certificate.get()), 3600);
  X509_NAME* name = X509_get_subject_name(certificate.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("warren-test"), -1, -1, 0);
  X509_set_issuer_name(certificate.get(), name);
  X509_set_pubkey(certificate.get(), key);
  X509_sign(certificate.get(), key, EVP_sha256());
  return certificate;
}

class TlsClientFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(key_ && other_key_);
    write_key(key_file_, key_.get(), nullptr);
    write_key(other_key_file_, other_key_.get(), nullptr);
    write_key(encrypted_key_file_, key_.get(), "passphrase");
    const Certificate certificate = self_signed(key_.get());
    std::FILE* out = std::fopen(cert_file_.c_str(), "w");
    ASSERT_NE(out, nullptr);
    PEM_write_X509(out, certificate.get());
    std::fclose(out);
    std::ofstream(garbage_file_) << "not PEM at all\n";
  }

  static void write_key(const std::filesystem::path& file, EVP_PKEY* key, const char* passphrase) {
    std::FILE* out = std::fopen(file.c_str(), "w");
    ASSERT_NE(out, nullptr);
    PEM_write_PrivateKey(out, key, passphrase ? EVP_aes_256_cbc() : nullptr,
                         reinterpret_cast<const unsigned char*>(passphrase),
                         passphrase ? static_cast<int>(std::strlen(passphrase)) : 0, nullptr,
                         nullptr);
    std::fclose(out);
  }

  config::TlsConfig files(const std::filesystem::path& cert, const std::filesystem::path& key,
                          const std::filesystem::path& ca = {}) const {
    return config::TlsConfig{ca, cert, key};
  }

  test_support::TempDir dir_;
  Key key_ = new_key();
  Key other_key_ = new_key();
  std::filesystem::path key_file_ = dir_.path() / "client.key";
  std::filesystem::path other_key_file_ = dir_.path() / "other.key";
  std::filesystem::path encrypted_key_file_ = dir_.path() / "encrypted.key";
  std::filesystem::path cert_file_ = dir_.path() / "client.pem";
  std::filesystem::path garbage_file_ = dir_.path() / "garbage.pem";
};

TEST_F(TlsClientFiles, CertificateWithItsKey_AndCaFile_AreAccepted) {
  // The self-signed certificate is its own CA: any parsable CA file will do here.
  EXPECT_EQ(tls_client_files_problem(files(cert_file_, key_file_, cert_file_)), std::nullopt);
  EXPECT_EQ(tls_client_files_problem(files({}, {}, cert_file_)), std::nullopt);
}

TEST_F(TlsClientFiles, KeyOfAnotherCertificate_IsRefusedNamingBothFiles) {
  EXPECT_THAT(tls_client_files_problem(files(cert_file_, other_key_file_)),
              Optional("key_file \"" + other_key_file_.string() +
                       "\" is not the key of cert_file \"" + cert_file_.string() +
                       "\" (key values mismatch); configure the key the certificate was issued "
                       "for"));
}

TEST_F(TlsClientFiles, UnparsableCertificate_IsRefusedNamingIt) {
  EXPECT_THAT(tls_client_files_problem(files(garbage_file_, key_file_)),
              Optional(HasSubstr("cert_file \"" + garbage_file_.string() +
                                 "\" holds no usable certificate: ")));
}

TEST_F(TlsClientFiles, UnparsableOrEncryptedKey_IsRefusedWithoutAskingForAPassphrase) {
  for (const auto& key : {garbage_file_, encrypted_key_file_}) {
    EXPECT_THAT(tls_client_files_problem(files(cert_file_, key)),
                Optional(HasSubstr("key_file \"" + key.string() +
                                   "\" holds no usable private key (PEM, unencrypted): ")));
  }
}

TEST_F(TlsClientFiles, MissingCertificate_IsRefusedWithTheOsReason) {
  const std::filesystem::path missing = dir_.path() / "missing.pem";
  EXPECT_THAT(tls_client_files_problem(files(missing, key_file_)),
              Optional("cert_file \"" + missing.string() +
                       "\" holds no usable certificate: No such file or directory"));
}

TEST_F(TlsClientFiles, UnparsableCaFile_IsRefusedNamingIt) {
  EXPECT_THAT(tls_client_files_problem(files({}, {}, garbage_file_)),
              Optional(HasSubstr("ca_file \"" + garbage_file_.string() +
                                 "\" holds no usable CA certificate: ")));
}

}  // namespace
}  // namespace warren::broker
