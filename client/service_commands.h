// tirctl's verbs that talk to a coordinator (remote, or the local service):
// compile, get, ls, rm, ops, workers. Each returns what goes to stdout; errors
// carry the coordinator's reason.

#ifndef TIR_CLIENT_SERVICE_COMMANDS_H_
#define TIR_CLIENT_SERVICE_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"

namespace tir::client {

struct CompileCommandOptions {
  std::string arch;
  bool heuristic_now = false;
  // Where the bundle (tir.v1.KernelBundle, binary) is written; "" for
  // `<cache_dir>/bundles/<key>.pb`.
  std::string out_path;
  std::string cache_dir;
  uint32_t max_candidates_per_kernel = 0;
  bool json = false;
  // Draw progress on stderr (a TTY): the stage, kernels planned,
  // candidates measured of those to measure, the bucket, the time.
  bool progress = false;
  // The whole command's: every call (connecting included) and every wait
  // end by then.
  absl::Duration timeout = absl::Hours(1);
  // Host bundles: run the returned bundle here from its own records on
  // seeded inputs and compare every output with the reference interpreter.
  bool verify = false;
  // CompileOptions.precision: "" / "ieee", or "tf32".
  std::string precision;
  // A graph with dynamic dims: the shapes to compile (and verify) it at, in
  // turn, each a hint per dynamic input.
  std::vector<std::vector<tir::v1::ShapeHint>> shapes;
};

// `--shape` values ("0=8x512") in order into shapes: a hint for an input
// the current shape already has starts the next one. Errors:
// INVALID_SHAPE_HINT.
absl::StatusOr<std::vector<std::vector<tir::v1::ShapeHint>>> GroupShapes(const std::vector<std::string> &flags);

// Submits `text`, waits (unless heuristic-now), writes the bundle and
// describes it: kernels, winners, tuned against default, cache hit or not;
// at each of `o.shapes` in turn for a graph with dynamic dims (the bundle
// for the last one goes to out_path; with --verify each is run here against
// the reference at its shape).
// Errors: the coordinator's (INVALID_GRAPH, ...), NO_CORRECT_CANDIDATE,
// KERNEL_WRONG when --verify finds an output off the reference, and
// DEADLINE_EXCEEDED when `timeout` passes first.
absl::StatusOr<std::string> CompileCommand(Client &client, const std::string &text, const CompileCommandOptions &o);

absl::StatusOr<std::string> GetCommand(Client &client, const std::string &key, bool json);
absl::StatusOr<std::string> ListCommand(Client &client, const std::string &arch, bool json);
absl::StatusOr<std::string> RemoveCommand(Client &client, const std::string &key);
// `what`: get, wait, watch or cancel.
absl::StatusOr<std::string> OperationCommand(Client &client, const std::string &what, const std::string &name, bool json,
                                             bool progress);
absl::StatusOr<std::string> WorkersCommand(Client &client, bool json);

// The progress of a compile operation in one line ("tuning bucket 0:0=257..512:
// 2 kernels planned, 12/40 candidates measured (0 failed)  3.1 s").
std::string ProgressLine(const tir::v1::Operation &op, absl::Duration elapsed);

// One line per kernel, the winner against the default, the tuning summary.
std::string DescribeBundle(const tir::v1::KernelBundle &bundle);

}  // namespace tir::client

#endif  // TIR_CLIENT_SERVICE_COMMANDS_H_
