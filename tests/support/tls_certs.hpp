// Certificates for the TLS tests, made with the openssl command as an operator
// would: a test CA, a server certificate it signed for 127.0.0.1 and
// localhost, and one it signed for another name. P-256 keys (fast to make),
// valid for two days, in a temporary folder removed with the object.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace hpo::testing {

class TestCerts {
 public:
  TestCerts() {
    char tmpl[] = "/tmp/hpo-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ok_ =
        run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", ca_key(), "-out", ca(), "-days", "2", "-subj", "/CN=hpo test CA"}) &&
        sign("server", "subjectAltName=IP:127.0.0.1,DNS:localhost") &&
        sign("other", "subjectAltName=DNS:elsewhere.example");
  }
  ~TestCerts() { std::filesystem::remove_all(dir_); }
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;

  bool ok() const { return ok_; }
  const std::string& log() const { return log_; }
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string ca_key() const { return dir_ + "/ca.key"; }
  std::string cert() const { return dir_ + "/server.pem"; }  // 127.0.0.1, localhost
  std::string key() const { return dir_ + "/server.key"; }
  std::string other_cert() const { return dir_ + "/other.pem"; }  // elsewhere.example only
  std::string other_key() const { return dir_ + "/other.key"; }
  const std::string& dir() const { return dir_; }

 private:
  bool run(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    const std::string log_path = dir_ + "/openssl.log";
    Process p(args, {}, log_path);
    const int rc = p.wait(std::chrono::seconds(60));
    log_ = p.log();
    return rc == 0;
  }
  bool sign(const std::string& name, const std::string& san) {
    const std::string base = dir_ + "/" + name;
    std::ofstream(base + ".ext") << san << "\n";
    return run({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", base + ".key", "-out", base + ".csr", "-subj", "/CN=" + name}) &&
           run({"x509", "-req", "-in", base + ".csr", "-CA", ca(), "-CAkey", ca_key(),
                "-CAcreateserial", "-out", base + ".pem", "-days", "2", "-extfile",
                base + ".ext"}) &&
           (std::filesystem::permissions(base + ".key", std::filesystem::perms::owner_read |
                                                            std::filesystem::perms::owner_write),
            true);
  }

  std::string dir_;
  std::string log_;
  bool ok_ = false;
};

}  // namespace hpo::testing
