// The default device: a GPU before any CPU; one CPU device taken as it is;
// among several CPU devices the fastest by measurement, remembered per set of
// devices (a changed driver measures again), a device that cannot run the
// probe never chosen, and a damaged cache entry measured anew. The real probe
// runs on the test device and gives a positive time; where Intel's CPU
// runtime is installed beside PoCL (scripts/install_intel_opencl.sh), the
// real choice between the two takes the one it measured faster.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sys/stat.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../src/core/device_choice.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

DeviceInfo Fake(int platform, const std::string& name, cl_device_type type,
                const std::string& driver = "1.0") {
  DeviceInfo d;
  d.platform_index = platform;
  d.flat_index = platform;
  d.name = name;
  d.platform_name = "platform " + name;
  d.version = "OpenCL 3.0";
  d.driver_version = driver;
  d.type = type;
  return d;
}

// A measurement that looks seconds up by device name (a missing name
// throws, as a device that cannot run the probe), counting its calls.
struct FakeMeasure {
  std::map<std::string, double> seconds;
  int calls = 0;
  DeviceMeasure Function() {
    return [this](const DeviceInfo& d) {
      ++calls;
      auto it = seconds.find(d.name);
      if (it == seconds.end()) throw Error("cannot run on " + d.name);
      return it->second;
    };
  }
};

TEST(DeviceChoice, GpuBeforeCpusWithoutMeasuring) {
  FakeMeasure measure{{{"pocl", 1.0}, {"intel", 2.0}}};
  const std::vector<DeviceInfo> devices = {Fake(0, "pocl", CL_DEVICE_TYPE_CPU),
                                           Fake(1, "intel", CL_DEVICE_TYPE_CPU),
                                           Fake(2, "gpu", CL_DEVICE_TYPE_GPU)};
  std::string why;
  EXPECT_EQ(DefaultDevice(devices, measure.Function(), TempDir(), &why).name, "gpu");
  EXPECT_EQ(measure.calls, 0);
  EXPECT_EQ(why, "the first GPU");
}

TEST(DeviceChoice, OneCpuDeviceWithoutMeasuring) {
  FakeMeasure measure;
  std::string why;
  EXPECT_EQ(DefaultDevice({Fake(0, "intel", CL_DEVICE_TYPE_CPU)}, measure.Function(), TempDir(),
                          &why)
                .name,
            "intel");
  EXPECT_EQ(measure.calls, 0);
  EXPECT_EQ(why, "the only CPU device");
}

TEST(DeviceChoice, FastestCpuRememberedPerDeviceSet) {
  const std::string cache = TempDir();
  std::vector<DeviceInfo> devices = {Fake(0, "pocl", CL_DEVICE_TYPE_CPU),
                                     Fake(1, "intel", CL_DEVICE_TYPE_CPU)};
  FakeMeasure first{{{"pocl", 0.030}, {"intel", 0.010}}};
  std::string why;
  EXPECT_EQ(DefaultDevice(devices, first.Function(), cache, &why).name, "intel");
  EXPECT_EQ(first.calls, 2);
  EXPECT_NE(why.find("measured now"), std::string::npos) << why;
  EXPECT_NE(why.find("10.00 ms"), std::string::npos) << why;

  // The same devices: the remembered figures decide, nothing is measured
  // (a measurement that would now pick the other device proves it).
  FakeMeasure second{{{"pocl", 0.001}, {"intel", 0.010}}};
  EXPECT_EQ(DefaultDevice(devices, second.Function(), cache, &why).name, "intel");
  EXPECT_EQ(second.calls, 0);
  EXPECT_NE(why.find("remembered in " + cache), std::string::npos) << why;

  // A new driver is another device set: measured again.
  devices[1].driver_version = "2.0";
  EXPECT_EQ(DefaultDevice(devices, second.Function(), cache, &why).name, "pocl");
  EXPECT_EQ(second.calls, 2);

  // Without a cache every choice measures.
  FakeMeasure third{{{"pocl", 0.5}, {"intel", 0.2}}};
  EXPECT_EQ(DefaultDevice(devices, third.Function(), "", &why).name, "intel");
  EXPECT_EQ(DefaultDevice(devices, third.Function(), "", &why).name, "intel");
  EXPECT_EQ(third.calls, 4);
  EXPECT_NE(why.find("not kept"), std::string::npos) << why;
}

TEST(DeviceChoice, DeviceThatFailsTheProbeIsNotChosen) {
  const std::vector<DeviceInfo> devices = {Fake(0, "broken", CL_DEVICE_TYPE_CPU),
                                           Fake(1, "slow", CL_DEVICE_TYPE_CPU)};
  FakeMeasure measure{{{"slow", 5.0}}};
  std::string why;
  EXPECT_EQ(DefaultDevice(devices, measure.Function(), TempDir(), &why).name, "slow");
  EXPECT_NE(why.find("broken [platform broken]: failed"), std::string::npos) << why;

  FakeMeasure none;
  EXPECT_EQ(DefaultDevice(devices, none.Function(), "", &why).name, "broken");
  EXPECT_EQ(why.rfind("the first CPU device: none could be measured", 0), 0u) << why;
}

TEST(DeviceChoice, DamagedCacheEntryIsMeasuredAnew) {
  const std::string cache = TempDir();
  const std::vector<DeviceInfo> devices = {Fake(0, "pocl", CL_DEVICE_TYPE_CPU),
                                           Fake(1, "intel", CL_DEVICE_TYPE_CPU)};
  FakeMeasure measure{{{"pocl", 0.010}, {"intel", 0.030}}};
  EXPECT_EQ(DefaultDevice(devices, measure.Function(), cache).name, "pocl");
  ASSERT_EQ(measure.calls, 2);
  // Change one byte of the entry the choice wrote: its checksum finds it.
  int damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    if (entry.path().filename().string().rfind("default-cpu-", 0) != 0) continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-2, std::ios::end);
    f.put('#');
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  std::string why;
  EXPECT_EQ(DefaultDevice(devices, measure.Function(), cache, &why).name, "pocl");
  EXPECT_EQ(measure.calls, 4);
  EXPECT_NE(why.find("measured now, kept in"), std::string::npos) << why;
}

TEST(DeviceChoice, ProbeTimesTheTestDevice) {
  const double seconds = MeasureDevice(TestContext().info());
  EXPECT_GT(seconds, 0.0);
  EXPECT_TRUE(std::isfinite(seconds));
}

TEST(DeviceChoice, CpuSpecNamesACpuDevice) {
  RunOptions options = RunOptions::FromEnvironment();
  options.device = "cpu";
  bool any_cpu = false;
  for (const auto& d : ListDevices()) any_cpu = any_cpu || d.is_cpu();
  if (!any_cpu) {
    EXPECT_THROW(ChooseDevice(options), Error);
    return;
  }
  std::string why;
  EXPECT_TRUE(ChooseDevice(options, &why).is_cpu());
  EXPECT_FALSE(why.empty());
}

// Both CPU implementations visible (the install's folder of ICD files:
// PoCL's and Intel's), as a user with both sees them: device_query's
// default is the CPU device whose probe time it prints as the smaller.
TEST(DeviceChoice, TwoCpuImplementationsTakeTheFasterMeasured) {
  const std::string intel = BuildDir() + "/opencl/intel-cpu";
  struct stat st;
  if (stat((intel + "/complete").c_str(), &st) != 0)
    GTEST_SKIP() << "Intel's OpenCL CPU runtime is not installed in " << intel;
  const ToolResult r = RunDlcaffe(
      "device_query", "OCL_ICD_VENDORS='" + intel + "/vendors' LD_LIBRARY_PATH='" + intel +
                          "/lib':\"$LD_LIBRARY_PATH\" DLCAFFE_DEVICE= DLCAFFE_TUNING_CACHE=off");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  const std::regex line(
      "Default device: (ocl:[0-9]+:[0-9]+) [^\\n]*the fastest of 2 CPU devices by measurement "
      "\\((ocl:[0-9]+:[0-9]+) [^:]*: ([0-9.]+) ms; (ocl:[0-9]+:[0-9]+) [^:]*: ([0-9.]+) ms;");
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
  std::cout << m[0] << std::endl;
  const double first = std::stod(m[3]), second = std::stod(m[5]);
  EXPECT_EQ(m[1], first <= second ? m[2] : m[4]) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
