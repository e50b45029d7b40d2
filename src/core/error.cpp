// Builds the one-line error messages thrown throughout gpusort.
#include "gpusort/error.hpp"

#include <cstring>

namespace gpusort {

void throw_error(const std::string& what, int errnum) {
  if (errnum == 0) throw error(what);
  throw error(what + ": " + std::strerror(errnum), errnum);
}

}  // namespace gpusort
