// The TLS files of [broker] (ca_file, cert_file, key_file) loaded once at start, the way every
// connection loads them, so that a file that does not parse, or a key that is not the
// certificate's, stops warren at once with the reason instead of failing each connection attempt
// for ever. (The key's permissions are the config loader's: config/config_files.h.)
#pragma once

#include <optional>
#include <string>

#include "config/config.h"

namespace warren::broker {

// What is wrong with the files, naming them ("key_file \"/k\" does not belong to cert_file
// \"/c\" (key values mismatch) ..."), or nullopt when an OpenSSL client context accepts them.
std::optional<std::string> tls_client_files_problem(const config::TlsConfig& tls);

}  // namespace warren::broker
