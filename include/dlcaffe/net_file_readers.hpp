// How Net(path, phase, ...) reads a model file: a Caffe prototxt itself
// (with Caffe's upgrades of old formats), any other format through a reader
// that the code knowing it registers (the ONNX importer registers .onnx:
// src/import/onnx_net_reader.cpp). The Net itself knows no format but
// Caffe's.
#pragma once
#include <functional>
#include <string>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

struct NetFile {
  caffe::NetParameter param;
  // Remakes the description at other input shapes (a model with dynamic
  // dimensions: Net::set_input_shape_resolver); empty where they are fixed.
  Net::InputShapeResolver resolver;
};

// Reads `path` for a net in `phase` run with `options` into `file`; returns
// false, touching nothing, where the file is not of the reader's format.
using NetFileReader = std::function<bool(const std::string& path, caffe::Phase phase,
                                         const RunOptions& options, NetFile* file)>;
void RegisterNetFileReader(NetFileReader reader);

// A Caffe prototxt, upgraded from Caffe's older formats where it needs it.
caffe::NetParameter ReadCaffeNet(const std::string& path);
// The first registered reader's that takes `path`, else the prototxt.
NetFile ReadNetFile(const std::string& path, caffe::Phase phase, const RunOptions& options);

}  // namespace dlcaffe
