// The results table: printed to stdout, and written as table.txt and
// table.csv; and the inputs table (what is measured, what assumed).

#ifndef TIR_BENCH_FLEET_REPORT_H_
#define TIR_BENCH_FLEET_REPORT_H_

#include <string>
#include <vector>

#include "bench/fleet/calibration.h"
#include "bench/fleet/fleet_sim.h"

namespace tir::fleet {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table InputsTable(const Calibration &calibration);
// `numeric`: plain numbers (seconds, counts) for table.csv; otherwise in
// the units that read best ("1.5 ms", "36.5M").
Table ResultsTable(const std::vector<RunResult> &results, bool numeric = false);

// Columns padded to their widest cell.
std::string FormatText(const Table &table);
// RFC 4180: cells with a comma or quote quoted.
std::string FormatCsv(const Table &table);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_REPORT_H_
