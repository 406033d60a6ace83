// Secret files (password_file, dsn_file, the TLS key_file) are refused when others may read them,
// at the key's file:line:col and with the chmod that fixes it; a root-owned file may be shared
// read-only with its group (root:warren 0640, Kubernetes' fsGroup 0440).
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_files.h"
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using test::TempFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A TempFile with `mode`, whatever the umask.
class SecretFile : public TempFile {
 public:
  SecretFile(std::string_view content, mode_t mode) : TempFile(content) {
    EXPECT_EQ(::chmod(path().c_str(), mode), 0);
  }
};

constexpr uid_t kNobody = 65534;

// The exact text for a file of mode 0644 owned by the running user (not root).
std::string readable_by_all(const TempFile& file, const std::string& mode = "0644") {
  return "\"" + file.str() + "\" is readable by group and others (mode " + mode +
         "); a secret must be readable by its owner only: chmod 600 " + file.str();
}

// Under root the file is handed to nobody, so that "owned by root" is not what the test sees.
void give_away_from_root(const TempFile& file) {
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(file.path().c_str(), kNobody, kNobody), 0);
  }
}

TEST(SecretFiles, BrokerPasswordFileReadableByOthers_IsRefusedWithTheChmod) {
  const SecretFile password("s3cret\n", 0644);
  give_away_from_root(password);
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://guest@h/"
password_file = ")" + password.str() +
                          R"("
)"),
              ElementsAre(Problem(4, 17, "broker.password_file", readable_by_all(password))));
}

TEST(SecretFiles, TlsKeyFileReadableByItsGroup_IsRefused) {
  const SecretFile key("-----BEGIN PRIVATE KEY-----\n", 0640);
  give_away_from_root(key);
  const SecretFile cert("-----BEGIN CERTIFICATE-----\n", 0644);  // a certificate is public
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqps://guest@h/"
cert_file = ")" + cert.str() +
                          R"("
key_file = ")" + key.str() +
                          R"("
)"),
              ElementsAre(Problem(5, 12, "broker.key_file",
                                  "\"" + key.str() +
                                      "\" is readable by group (mode 0640); a secret must be "
                                      "readable by its owner only: chmod 600 " +
                                      key.str())));
}

TEST(SecretFiles, MissingTlsKeyFile_IsRefusedAtLoadNamingIt) {
  const SecretFile cert("-----BEGIN CERTIFICATE-----\n", 0644);
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqps://guest@h/"
cert_file = ")" + cert.str() +
                          R"("
key_file = "/nonexistent/warren/client.key"
)"),
              ElementsAre(Problem(5, 12, "broker.key_file",
                                  "cannot read \"/nonexistent/warren/client.key\": No such file "
                                  "or directory")));
}

TEST(SecretFiles, MetricsPasswordFileWritableByOthers_IsRefused) {
  const SecretFile password("s3cret\n", 0602);
  EXPECT_THAT(problems_of(R"(
[metrics]
user = "prom"
password_file = ")" + password.str() +
                          R"("
)"),
              ElementsAre(Problem(4, 17, "metrics.password_file",
                                  HasSubstr("is writable by others (mode 0602); a secret must be "
                                            "readable by its owner only: chmod 600 " +
                                            password.str()))));
}

TEST(SecretFiles, OutboxDsnFileReadableByOthers_IsRefused) {
  const SecretFile dsn("postgresql://relay:pw@db/livraria\n", 0604);
  EXPECT_THAT(problems_of(R"(
[[outbox]]
name = "o"
dsn_file = ")" + dsn.str() +
                          R"("
)"),
              ElementsAre(Problem(4, 12, "outbox[0].dsn_file",
                                  HasSubstr("is readable by others (mode 0604)"))));
}

TEST(SecretFiles, IdempotencyDsnFileReadableByOthers_IsRefused) {
  const SecretFile dsn("postgresql://warren:pw@db/livraria\n", 0644);
  give_away_from_root(dsn);
  EXPECT_THAT(problems_of(R"(
[[workers]]
name = "w"
plugin = "p"
queue = "q"
[workers.idempotency]
dsn_file = ")" + dsn.str() +
                          R"("
)"),
              ElementsAre(Problem(7, 12, "workers[0].idempotency.dsn_file", readable_by_all(dsn))));
}

TEST(SecretFiles, PostgresTransportDsnFileReadableByOthers_IsRefused) {
  const SecretFile dsn("postgresql://warren:pw@db/livraria\n", 0644);
  give_away_from_root(dsn);
  EXPECT_THAT(test::problems_of_document(R"(
[broker]
transport = "postgres"
[broker.postgres]
dsn_file = ")" + dsn.str() + R"("
)"),
              ElementsAre(Problem(5, 12, "broker.postgres.dsn_file", readable_by_all(dsn))));
}

TEST(SecretFiles, OwnerOnlyModes_AreAccepted) {
  for (const mode_t mode : {0600, 0400}) {
    const SecretFile password("s3cret\n", mode);
    EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://guest@h/"
password_file = ")" + password.str() +
                            R"("
)"),
                IsEmpty())
        << std::oct << mode;
  }
}

TEST(SecretFiles, RootOwnedAndReadableByItsGroupOnly_IsAccepted) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to own a file as root";
  for (const mode_t mode : {0640, 0440}) {
    const SecretFile password("s3cret\n", mode);
    EXPECT_EQ(secret_file_exposure(password.path()), std::nullopt) << std::oct << mode;
  }
  const SecretFile group_writable("s3cret\n", 0660);
  EXPECT_THAT(secret_file_exposure(group_writable.path()),
              ::testing::Optional(HasSubstr("is writable by group (mode 0660); a secret must be "
                                            "readable by its owner only: chmod 600 " +
                                            group_writable.str() +
                                            " (or 640, as root owns it, to share it with its "
                                            "group)")));
}

TEST(SecretFiles, SymlinkToAnExposedFile_IsJudgedByItsTarget) {
  const SecretFile password("s3cret\n", 0644);
  give_away_from_root(password);
  const std::filesystem::path link = password.path().parent_path() / "link";
  std::filesystem::create_symlink(password.path(), link);
  EXPECT_THAT(secret_file_exposure(link), ::testing::Optional(HasSubstr("(mode 0644)")));
}

// Seen through tests/fuzz/config_loader.cc (a timeout): a password_file that never ends was read
// until memory ran out, before its mode was looked at. Devices, FIFOs and directories are refused
// without being read.
TEST(SecretFiles, PasswordFileThatIsADevice_IsRefusedWithoutBeingRead) {
  EXPECT_THAT(problems_of(R"(
[metrics]
user = "prom"
password_file = "/dev/zero"
)"),
              ElementsAre(Problem(4, 17, "metrics.password_file",
                                  "\"/dev/zero\" is not a regular file: a secret is read from a "
                                  "file")));
}

}  // namespace
}  // namespace warren::config
