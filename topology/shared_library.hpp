// A shared library opened with dlopen, for the device libraries tutti must not link against
// (libibverbs, NVML, the CUDA runtime): a machine without them still runs tutti. Never closed:
// these libraries keep global state (provider plugins, driver handles) that dlclose would orphan,
// so callers keep one instance for the life of the process.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace tutti::topology {

class SharedLibrary {
 public:
  // The first of `names` that loads; loaded() is false when none does.
  explicit SharedLibrary(std::initializer_list<const char*> names) {
    for (const char* name : names)
      if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        name_ = name;
        break;
      }
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }
  // nullptr when absent (an older library): callers check before use.
  template <typename Function>
  Function* symbol(const char* name) const {
    return handle_ ? reinterpret_cast<Function*>(dlsym(handle_, name)) : nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace tutti::topology
