// See tls_client_files.h.
#include "broker/tls_client_files.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

#include "broker/tls_error_reason.h"

namespace warren::broker {
namespace {

std::string quoted(const std::filesystem::path& file) {
  std::string text = "\"";
  text += file.string();
  text += '"';
  return text;
}

// True when OpenSSL's last error says a key and a certificate do not belong together.
bool is_key_mismatch() {
  const unsigned long error = ERR_peek_last_error();
  return ERR_GET_LIB(error) == ERR_LIB_X509 &&
         (ERR_GET_REASON(error) == X509_R_KEY_VALUES_MISMATCH ||
          ERR_GET_REASON(error) == X509_R_KEY_TYPE_MISMATCH);
}

std::string mismatch(const config::TlsConfig& tls, const std::string& reason) {
  return "key_file " + quoted(tls.key_file) + " is not the key of cert_file " +
         quoted(tls.cert_file) + " (" + reason +
         "); configure the key the certificate was issued for";
}

}  // namespace

std::optional<std::string> tls_client_files_problem(const config::TlsConfig& tls) {
  ERR_clear_error();
  const std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> context(SSL_CTX_new(TLS_client_method()),
                                                             &SSL_CTX_free);
  if (!context)
    return "cannot create a TLS context: " + take_tls_error_reason();
  // An encrypted key fails to load rather than waiting for a passphrase on the terminal.
  SSL_CTX_set_default_passwd_cb(context.get(), [](char*, int, int, void*) { return 0; });
  if (!tls.ca_file.empty() &&
      SSL_CTX_load_verify_locations(context.get(), tls.ca_file.c_str(), nullptr) != 1) {
    return "ca_file " + quoted(tls.ca_file) +
           " holds no usable CA certificate: " + take_tls_error_reason();
  }
  if (tls.cert_file.empty())
    return std::nullopt;
  if (SSL_CTX_use_certificate_chain_file(context.get(), tls.cert_file.c_str()) != 1) {
    return "cert_file " + quoted(tls.cert_file) +
           " holds no usable certificate: " + take_tls_error_reason();
  }
  if (SSL_CTX_use_PrivateKey_file(context.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (is_key_mismatch())
      return mismatch(tls, take_tls_error_reason());
    return "key_file " + quoted(tls.key_file) +
           " holds no usable private key (PEM, unencrypted): " + take_tls_error_reason();
  }
  // A key of another type than the certificate's is accepted above and caught here.
  if (SSL_CTX_check_private_key(context.get()) != 1)
    return mismatch(tls, take_tls_error_reason());
  return std::nullopt;
}

}  // namespace warren::broker
