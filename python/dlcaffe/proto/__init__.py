"""caffe_pb2, the protobuf messages of proto/caffe.proto (generated into the
built package by CMake, not kept in the source tree)."""
