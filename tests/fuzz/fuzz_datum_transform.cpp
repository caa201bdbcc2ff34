// A Datum record as it comes out of a dataset -> parse, decode (raw, float or
// encoded image bytes) -> Caffe's data transformer on the device (crop,
// mirror, mean values, scale), as the Data layer does. The first byte picks
// the transformation, the rest is the record.
#include <string>
#include <string_view>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/data/data_transformer.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/image_batch.hpp"
#include "dlcaffe/error.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  if (size == 0) return 0;
  const uint8_t choice = data[0];
  const std::string_view record(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz::ExpectCleanRejection([&] {
    caffe::Datum datum;
    ParseDatum(record, "record 00000000 of fuzz_lmdb", &datum);
    caffe::TransformationParameter param;
    if (choice & 1) param.set_crop_size(1 + (choice >> 5));
    param.set_mirror(choice & 2);
    if (choice & 4) param.set_scale(0.00390625f);
    if (choice & 8) param.set_force_gray(true);
    else if (choice & 16) param.set_force_color(true);
    const caffe::Phase phase = (choice & 128) ? caffe::TRAIN : caffe::TEST;
    DataTransformer transformer(param, phase, ctx, "layer 'fuzz' (Data): ");
    DatumImage image;
    DecodeDatum(datum, transformer.color(), "record 00000000 of fuzz_lmdb", &image);
    transformer.CheckInput(image.channels, image.height, image.width);
    HostImageBatch batch;
    batch.Reset(1, image.channels, image.height, image.width, image.is_float);
    batch.SetImage(0, image);
    batch.SetCrop(0, transformer.Draw(image.height, image.width, ctx.rng()));
    BufferPtr device = ctx.Allocate(batch.bytes());
    ctx.Write(device->mem(), 0, batch.bytes(), batch.data());
    Blob top(ctx);
    top.Reshape(transformer.OutputShape(1, image.channels, image.height, image.width));
    transformer.Transform(batch, device->mem(), &top);
    top.ReadData();
  });
  return 0;
}
