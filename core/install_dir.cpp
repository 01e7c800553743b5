#include "core/install_dir.hpp"

#include <filesystem>

namespace hpo {

std::string find_beside_binary(std::initializer_list<const char*> relative, const char* marker) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path())
    for (const char* rel : relative)
      if (std::filesystem::exists(dir / rel / marker, ec)) return (dir / rel).string();
  return "";
}

}  // namespace hpo
