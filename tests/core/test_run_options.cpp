// RunOptions: every switch parsed once, from the environment, a command-line
// list or the API; a wrong value names the switch, its variable and what it
// takes; the context hands the options to what it runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "dlcaffe/error.hpp"
#include "dlcaffe/run_options.hpp"
#include "util/environment_variable.hpp"
#include "util/error_of.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(RunOptions, EverySwitchRoundTripsThroughItsText) {
  for (const RunOptions::Switch& s : RunOptions::Switches()) {
    RunOptions options;
    const std::string text = options.Get(s.name);
    options.Set(s.name, text);
    EXPECT_EQ(options.Get(s.name), text) << s.name;
    EXPECT_EQ(std::string(s.environment).rfind("DLCAFFE_", 0), 0u) << s.name;
  }
  RunOptions options;
  options.Set("kernel_shape", "gpu");
  options.Set("winograd", "off");
  options.Set("conv_column_floats", "1000");
  options.Set("fusion", "0");
  options.Set("poison", "on");
  EXPECT_EQ(options.kernel_shape, RunOptions::KernelShape::kGpu);
  EXPECT_EQ(options.winograd, RunOptions::Choice::kOff);
  EXPECT_EQ(options.conv_column_floats, 1000);
  EXPECT_FALSE(options.fusion);
  EXPECT_TRUE(options.poison);
  EXPECT_EQ(options.Get("fusion"), "off");
  EXPECT_NE(options, RunOptions());
}

TEST(RunOptions, AWrongValueNamesTheSwitchItsVariableAndItsValues) {
  const std::string kernel_shape =
      ErrorOf([] { RunOptions().Set("kernel_shape", "vectors"); });
  EXPECT_NE(kernel_shape.find("kernel_shape"), std::string::npos) << kernel_shape;
  EXPECT_NE(kernel_shape.find("DLCAFFE_KERNEL_SHAPE"), std::string::npos) << kernel_shape;
  EXPECT_NE(kernel_shape.find("device, cpu or gpu"), std::string::npos) << kernel_shape;
  EXPECT_NE(kernel_shape.find("'vectors'"), std::string::npos) << kernel_shape;
  // DLCAFFE_FUSION=of once left fusion on without a word.
  const std::string fusion = ErrorOf([] { RunOptions().Set("fusion", "of"); });
  EXPECT_NE(fusion.find("DLCAFFE_FUSION"), std::string::npos) << fusion;
  EXPECT_NE(fusion.find("on or off"), std::string::npos) << fusion;
  for (const char* bad : {"0", "-5", "12x", ""})
    EXPECT_NE(ErrorOf([&] { RunOptions().Set("conv_column_floats", bad); })
                  .find("a whole number above 0"),
              std::string::npos)
        << bad;
  EXPECT_NE(ErrorOf([] { RunOptions().Set("winograd", "yes"); }).find("auto, on or off"),
            std::string::npos);
  const std::string unknown = ErrorOf([] { RunOptions().Set("fussion", "off"); });
  EXPECT_NE(unknown.find("no run option 'fussion'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("fusion"), std::string::npos) << unknown;
}

TEST(RunOptions, TheEnvironmentIsReadOnceAndChecked) {
  {
    EnvironmentVariable shape("DLCAFFE_KERNEL_SHAPE", "gpu");
    EnvironmentVariable fusion("DLCAFFE_FUSION", "off");
    EnvironmentVariable empty("DLCAFFE_CONV_WINOGRAD", "");  // set but empty: unset
    const RunOptions options = RunOptions::FromEnvironment();
    EXPECT_EQ(options.kernel_shape, RunOptions::KernelShape::kGpu);
    EXPECT_FALSE(options.fusion);
    EXPECT_EQ(options.winograd, RunOptions::Choice::kAuto);
  }
  {
    EnvironmentVariable typo("DLCAFFE_FUSION", "of");
    const std::string error = ErrorOf([] { RunOptions::FromEnvironment(); });
    EXPECT_NE(error.find("DLCAFFE_FUSION"), std::string::npos) << error;
  }
  // A variable an earlier version read names what replaced it.
  EnvironmentVariable retired("DLCAFFE_ONNX_FUSION", "off");
  const std::string error = ErrorOf([] { RunOptions::FromEnvironment(); });
  EXPECT_NE(error.find("DLCAFFE_ONNX_FUSION is no longer read: use DLCAFFE_GRAPH_PASSES=off"),
            std::string::npos)
      << error;
}

TEST(RunOptions, AListSetsSeveralAndRefusesWhatIsNotNameEqualsValue) {
  RunOptions options;
  options.SetList("fusion=off,kernel_shape=cpu,tuning_cache=/tmp/x");
  EXPECT_FALSE(options.fusion);
  EXPECT_EQ(options.kernel_shape, RunOptions::KernelShape::kCpu);
  EXPECT_EQ(options.tuning_cache, "/tmp/x");
  options.SetList("");  // nothing
  EXPECT_FALSE(options.fusion);
  const std::string error = ErrorOf([&] { options.SetList("fusion=on,winograd"); });
  EXPECT_NE(error.find("'winograd' is not name=value"), std::string::npos) << error;
}

// What the device reports is read once; the options decide over it.
TEST(RunOptions, TheKernelShapeFollowsTheDeviceUnlessForced) {
  Context& ctx = TestContext();
  const bool reported = ctx.info().prefers_cpu_shaped_kernels;
  EXPECT_EQ(reported, ctx.info().is_cpu() || reported);  // a CPU always reports it
  SetTestOption("kernel_shape", "device");
  EXPECT_EQ(ctx.cpu_shaped_kernels(), reported);
  SetTestOption("kernel_shape", "gpu");
  EXPECT_FALSE(ctx.cpu_shaped_kernels());
  SetTestOption("kernel_shape", "cpu");
  EXPECT_TRUE(ctx.cpu_shaped_kernels());
  ResetTestOption("kernel_shape");
  EXPECT_GE(ctx.info().native_vector_width_float, 1);
  EXPECT_FALSE(ctx.info().has_extension("cl_not_an_extension"));
}

// Poison follows the options: the pool's fresh buffers are NaN only then.
TEST(RunOptions, PoisonIsTheContextsOption) {
  Context& ctx = TestContext();
  SetTestOption("poison", "on");
  EXPECT_TRUE(ctx.poison());
  EXPECT_TRUE(std::isnan(ctx.fresh_value()));
  SetTestOption("poison", "off");
  EXPECT_FALSE(ctx.poison());
  EXPECT_EQ(ctx.fresh_value(), 0.f);
  ResetTestOption("poison");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
