// Reading and writing prototxt (text) and binary protos (.caffemodel,
// .solverstate, .binaryproto). Errors name the file (and line and column for
// text); binary writes are atomic (temporary file + rename).
#pragma once
#include <google/protobuf/message.h>

#include <string>

namespace dlcaffe {

void ReadProtoFromTextFile(const std::string& path, google::protobuf::Message* proto);
// Parses `text` as if it were the content of file `name` (for messages).
void ReadProtoFromTextString(const std::string& text, const std::string& name,
                             google::protobuf::Message* proto);
void ReadProtoFromBinaryFile(const std::string& path, google::protobuf::Message* proto);
void WriteProtoToTextFile(const google::protobuf::Message& proto, const std::string& path);
void WriteProtoToBinaryFile(const google::protobuf::Message& proto, const std::string& path);
// Writes `bytes` to `path` via a temporary file in the same folder and rename.
void WriteFileAtomically(const std::string& path, const std::string& bytes);
bool FileExists(const std::string& path);

}  // namespace dlcaffe
