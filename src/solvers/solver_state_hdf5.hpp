// A solver state (caffe::SolverState) as Caffe's .solverstate.h5
// (snapshot_format: HDF5): datasets "iter", "learned_net" (the weights'
// path), "current_step" and a group "history" of "0", "1", ... in each
// history blob's shape. dlcaffe's exact-resume fields (data positions,
// generator states) ride along as the serialized message in a byte dataset
// "dlcaffe_run_state", which Caffe ignores; a state without it (Caffe's)
// resumes, not exactly.
#pragma once
#include <string>

#include "caffe.pb.h"

namespace dlcaffe {

// Atomic (a temporary file, then rename); errors name the file.
void WriteSolverStateHdf5(const caffe::SolverState& state, const std::string& path);
void ReadSolverStateHdf5(const std::string& path, caffe::SolverState* state);

}  // namespace dlcaffe
