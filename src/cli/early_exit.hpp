// The command line ends as soon as its output is in place: a child process sorts, and the
// process the shell waits for exits once the child says that the output is committed, while
// the child gives back the output's mapping and the runs' memory (0.5-1.3 s for 16-32 GiB on
// the GPU machines) on its own. mold ends a link the same way.
#pragma once

#include <sys/types.h>

namespace gpusort::cli {

class early_exit {
 public:
  /**
   * Where `enabled`, forks before the sort starts a thread. The parent never returns from here:
   * it forwards the signals that would end it to the child, exits 0 once the child calls
   * committed(), or else ends as the child ended (its exit status, or its signal). The child,
   * which ends by SIGTERM if the parent dies first, returns; so does this process where fork
   * fails or `enabled` is false, and committed() then does nothing.
   */
  explicit early_exit(bool enabled);
  ~early_exit();
  early_exit(const early_exit&) = delete;
  early_exit& operator=(const early_exit&) = delete;

  /// The output is in place: standard output and error go to /dev/null (whoever reads them
  /// sees their end now, not after the rest), and the parent exits 0. Call once.
  void committed() noexcept;

 private:
  int notify_ = -1;  ///< the child's end of the pipe to the waiting parent; -1 without one
};

}  // namespace gpusort::cli
