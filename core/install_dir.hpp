// Where a file that ships beside hpo's binaries is: the dashboard's pages, the
// Python library. Searched upwards from the running binary, so the same
// binary finds it in its build tree (the repository's folder) and under its
// install prefix (share/hpo/...).
#pragma once

#include <initializer_list>
#include <string>

namespace hpo {

// The first folder `<ancestor>/<relative>` that holds `marker` (a relative
// file name), for each ancestor of /proc/self/exe from the nearest; "" when
// none does.
std::string find_beside_binary(std::initializer_list<const char*> relative, const char* marker);

}  // namespace hpo
