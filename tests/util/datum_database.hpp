// Small LMDB databases of raw Datum records for the tests that train through
// a Data layer (and of other records, for AnnotatedData).
#pragma once
#include <functional>
#include <string>

#include "caffe.pb.h"

namespace dlcaffe {
namespace test {

// A raw (uint8) Datum: channels × height × width pixels (C, H, W order),
// the pixel at flat index j being pixel(j).
caffe::Datum RawDatum(int channels, int height, int width, int label,
                      const std::function<int(int j)>& pixel);

// A new LMDB at `path` of `count` records, record i made by make(i), under
// the keys "00000000", "00000001", ... (so in index order).
void WriteDatumDatabase(const std::string& path, int count,
                        const std::function<caffe::Datum(int i)>& make);

// The same for records of any message (AnnotatedDatum): record i is make(i)'s
// serialized bytes.
void WriteRecordDatabase(const std::string& path, int count,
                         const std::function<std::string(int i)>& make);

}  // namespace test
}  // namespace dlcaffe
