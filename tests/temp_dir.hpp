// A fresh directory under /tmp for one test, removed with its contents at the end of its scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace tutti::testing {

struct TempDir {
  std::filesystem::path path;
  // `prefix` names the test in the directory's name, for whoever finds one left behind.
  explicit TempDir(const std::string& prefix = "tutti") {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace tutti::testing
