#include "solvers/solver_state_hdf5.hpp"

#include "core/hdf5_file.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

const char kRunState[] = "dlcaffe_run_state";

std::vector<uint64_t> ProtoDims(const caffe::BlobProto& proto) {
  std::vector<uint64_t> dims;
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width())
    dims = {uint64_t(proto.num()), uint64_t(proto.channels()), uint64_t(proto.height()),
            uint64_t(proto.width())};
  else
    for (int64_t d : proto.shape().dim()) dims.push_back(uint64_t(d));
  return dims;
}

}  // namespace

void WriteSolverStateHdf5(const caffe::SolverState& state, const std::string& path) {
  Hdf5MemoryFile file;
  try {
    file.WriteInt(file.root(), "iter", state.iter());
    file.WriteString(file.root(), "learned_net", state.learned_net());
    file.WriteInt(file.root(), "current_step", state.current_step());
    Hdf5Handle history = file.CreateGroup(file.root(), "history");
    for (int i = 0; i < state.history_size(); ++i) {
      const caffe::BlobProto& h = state.history(i);
      std::vector<float> values(h.data().begin(), h.data().end());
      if (h.data_size() == 0)
        for (double v : h.double_data()) values.push_back(static_cast<float>(v));
      file.WriteFloats(history.get(), std::to_string(i), ProtoDims(h), values.data());
    }
    caffe::SolverState run;
    run.mutable_data_cursor()->CopyFrom(state.data_cursor());
    run.mutable_rng_state()->CopyFrom(state.rng_state());
    if (state.has_loss_scale()) run.set_loss_scale(state.loss_scale());
    if (state.has_loss_scale_good_steps())
      run.set_loss_scale_good_steps(state.loss_scale_good_steps());
    file.WriteBytes(file.root(), kRunState, run.SerializeAsString());
  } catch (const Error& e) {
    DLC_FAIL("cannot write the solver state " << path << ": " << e.what());
  }
  file.Save(path);
}

void ReadSolverStateHdf5(const std::string& path, caffe::SolverState* state) {
  state->Clear();
  Hdf5Handle file = OpenHdf5File(path);
  try {
    state->set_iter(ReadHdf5Int(file.get(), "iter"));
    if (Hdf5HasLink(file.get(), "learned_net")) {
      const std::string learned_net = ReadHdf5String(file.get(), "learned_net");
      if (!learned_net.empty()) state->set_learned_net(learned_net);
    }
    state->set_current_step(ReadHdf5Int(file.get(), "current_step"));
    Hdf5Handle history = OpenHdf5Group(file.get(), "history");
    // "0", "1", ...: in number order, not the group's name order ("10" < "2").
    const size_t count = Hdf5LinkNames(history.get()).size();
    for (size_t i = 0; i < count; ++i) {
      const Hdf5Floats h = ReadHdf5Floats(history.get(), std::to_string(i));
      caffe::BlobProto* proto = state->add_history();
      for (uint64_t d : h.dims) proto->mutable_shape()->add_dim(static_cast<int64_t>(d));
      proto->mutable_data()->Add(h.values.begin(), h.values.end());
    }
    if (Hdf5HasLink(file.get(), kRunState)) {
      caffe::SolverState run;
      DLC_REQUIRE(run.ParseFromString(ReadHdf5Bytes(file.get(), kRunState)),
                  "dataset '" << kRunState << "' is not a dlcaffe run state");
      state->mutable_data_cursor()->CopyFrom(run.data_cursor());
      state->mutable_rng_state()->CopyFrom(run.rng_state());
      if (run.has_loss_scale()) state->set_loss_scale(run.loss_scale());
      if (run.has_loss_scale_good_steps())
        state->set_loss_scale_good_steps(run.loss_scale_good_steps());
    }
  } catch (const Error& e) {
    DLC_FAIL("cannot read the solver state " << path << ": " << e.what());
  }
}

}  // namespace dlcaffe
