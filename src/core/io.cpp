#include "dlcaffe/io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glog/logging.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

// Collects the first parse error with its line and column.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!has_error) {
      has_error = true;
      this->line = line + 1;  // protobuf counts from 0
      this->column = column + 1;
      this->message = message;
    }
  }
  bool has_error = false;
  int line = 0, column = 0;
  std::string message;
};

std::string ReadWholeFile(const std::string& path, bool binary) {
  std::ifstream in(path, binary ? std::ios::binary : std::ios::in);
  DLC_REQUIRE(in, "cannot open file " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void ReadProtoFromTextString(const std::string& text, const std::string& name,
                             google::protobuf::Message* proto) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, proto)) {
    DLC_FAIL(name << ":" << errors.line << ":" << errors.column << ": "
                  << errors.message << " (parsing " << proto->GetTypeName() << ")");
  }
}

void ReadProtoFromTextFile(const std::string& path, google::protobuf::Message* proto) {
  ReadProtoFromTextString(ReadWholeFile(path, false), path, proto);
}

void ReadProtoFromBinaryFile(const std::string& path, google::protobuf::Message* proto) {
  int fd = open(path.c_str(), O_RDONLY);
  DLC_REQUIRE(fd >= 0, "cannot open file " << path);
  google::protobuf::io::FileInputStream raw(fd);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);  // models can exceed protobuf's 64 MB default
  const bool ok = proto->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  close(fd);
  DLC_REQUIRE(ok, path << ": not a valid binary " << proto->GetTypeName()
                       << " (truncated or corrupt file?)");
}

void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  DLC_REQUIRE(fd >= 0, "cannot write file " << tmp);
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      close(fd);
      unlink(tmp.c_str());
      DLC_FAIL("cannot write file " << tmp << " (disk full?)");
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    DLC_FAIL("cannot write file " << path);
  }
}

void WriteProtoToTextFile(const google::protobuf::Message& proto, const std::string& path) {
  std::string text;
  CHECK(google::protobuf::TextFormat::PrintToString(proto, &text));
  WriteFileAtomically(path, text);
}

void WriteProtoToBinaryFile(const google::protobuf::Message& proto,
                            const std::string& path) {
  std::string bytes;
  DLC_REQUIRE(proto.SerializeToString(&bytes), "cannot serialise " << proto.GetTypeName());
  WriteFileAtomically(path, bytes);
}

}  // namespace dlcaffe
