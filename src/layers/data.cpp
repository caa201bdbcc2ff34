// Caffe's "Data" layer: src/layers/data_layer.hpp (AnnotatedData extends it).
#include "layers/data_layer.hpp"

namespace dlcaffe {

REGISTER_LAYER_CLASS(Data);

}  // namespace dlcaffe
