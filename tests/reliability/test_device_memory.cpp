// Issue 13, device memory exhausted: a net too large for the device ends in
// one dlcaffe::Error that names the layer and the bytes asked, before the
// driver is asked (a single buffer over CL_DEVICE_MAX_MEM_ALLOC_SIZE, or a
// total over CL_DEVICE_GLOBAL_MEM_SIZE) -- not a driver abort, a bad_alloc or
// the OOM killer (PoCL's device memory is the host's, touched lazily).
#include <gtest/gtest.h>

#include "caffe.pb.h"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// One buffer over the device's largest allocation. The limit is lowered on
// the test's context: PoCL's own limit can exceed what a blob may hold
// (INT_MAX floats), and asking for that much would take the host's memory.
TEST(DeviceMemory, ABufferOverTheLargestAllocationIsAClearError) {
  Context& ctx = TestContext();
  const DeviceInfo& info = ctx.info();
  ctx.pool().set_device_limits(8u << 20, info.global_mem_bytes);
  caffe::NetParameter param;
  ReadProtoFromTextString(R"(
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1000 } } }
    layer { name: "wide" type: "InnerProduct" bottom: "data" top: "wide"
      inner_product_param { num_output: 3000 } })",
                          "wide", &param);
  try {
    Net net(param, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(Contains(what, "layer 'wide' (InnerProduct): cannot allocate 12000000 bytes"))
        << what;
    EXPECT_TRUE(Contains(what, "CL_DEVICE_MAX_MEM_ALLOC_SIZE")) << what;
  }
  ctx.pool().set_device_limits(info.max_alloc_bytes, info.global_mem_bytes);
}

// A total over the device's memory, each buffer small enough on its own:
// the pool's limits lowered to 40 MiB on the test's context, so that the
// test never holds more than that.
TEST(DeviceMemory, ATotalOverGlobalMemoryIsAClearError) {
  Context& ctx = TestContext();
  const DeviceInfo& info = ctx.info();
  ctx.pool().set_device_limits(info.max_alloc_bytes, 40u << 20);
  caffe::NetParameter param;
  ReadProtoFromTextString(R"(
    name: "total"
    layer { name: "a" type: "Input" top: "a" input_param { shape { dim: 4 dim: 1000000 } } }
    layer { name: "b" type: "Input" top: "b" input_param { shape { dim: 4 dim: 1000000 } } }
    layer { name: "c" type: "Input" top: "c" input_param { shape { dim: 4 dim: 1000000 } } })",
                          "total", &param);
  try {
    Net net(param, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(Contains(what, "cannot allocate 16000000 bytes")) << what;
    EXPECT_TRUE(Contains(what, "CL_DEVICE_GLOBAL_MEM_SIZE")) << what;
    EXPECT_TRUE(Contains(what, "layer '")) << what;
  }
  ctx.pool().set_device_limits(info.max_alloc_bytes, info.global_mem_bytes);
  // And the context works on afterwards.
  Net small(param.layer_size() ? [] {
    caffe::NetParameter p;
    ReadProtoFromTextString(
        "layer { name: 'a' type: 'Input' top: 'a' input_param { shape { dim: 2 } } }", "small",
        &p);
    return p;
  }() : param, ctx);
  EXPECT_EQ(small.blob_by_name("a")->count(), 2);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
