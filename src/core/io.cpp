#include "dlcaffe/io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glog/logging.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
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
  DLC_REQUIRE(in, "cannot open file " << path << ": " << std::strerror(errno));
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
  DLC_REQUIRE(fd >= 0, "cannot open file " << path << ": " << std::strerror(errno));
  google::protobuf::io::FileInputStream raw(fd);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);  // models can exceed protobuf's 64 MB default
  const bool ok = proto->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  close(fd);
  DLC_REQUIRE(ok, path << ": not a valid binary " << proto->GetTypeName()
                       << " (truncated or corrupt file?)");
}

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// The folder that holds `path` ("." for a bare name).
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

// A reader sees the old file or the new one, never a torn one, and a crash
// (power loss included) leaves one of the two: the bytes go to a temporary
// file in the same folder (unique per process and call, so that threads and
// processes writing the same path do not share it), are fsync'd, renamed over
// `path`, and the folder is fsync'd so that the rename itself is durable. On
// any failure the temporary file is removed and the message names the file
// and the system's reason (errno). A process killed mid-write leaves only its
// temporary file, "<path>.tmp.<pid>.<n>", which nothing reads.
void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DLC_REQUIRE(fd >= 0, "cannot write " << path << ": cannot create " << tmp << ": "
                                       << ErrnoText(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      close(fd);
      unlink(tmp.c_str());
      DLC_FAIL("cannot write " << path << ": writing " << tmp << " failed after " << written
                               << " of " << bytes.size() << " bytes: " << ErrnoText(err)
                               << " (the temporary file was removed; " << path
                               << " is unchanged)");
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    unlink(tmp.c_str());
    DLC_FAIL("cannot write " << path << ": fsync of " << tmp << " failed: " << ErrnoText(err)
                             << " (the temporary file was removed; " << path
                             << " is unchanged)");
  }
  if (close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    DLC_FAIL("cannot write " << path << ": closing " << tmp << " failed: " << ErrnoText(err)
                             << " (the temporary file was removed; " << path
                             << " is unchanged)");
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    DLC_FAIL("cannot write " << path << ": renaming " << tmp << " to it failed: "
                             << ErrnoText(err));
  }
  // Make the rename durable. Some file systems refuse fsync on a folder
  // (EINVAL); the file itself is complete either way.
  const std::string dir = DirectoryOf(path);
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    if (fsync(dir_fd) != 0 && errno != EINVAL && errno != EROFS)
      LOG(WARNING) << "fsync of folder " << dir << " after writing " << path
                   << " failed: " << ErrnoText(errno);
    close(dir_fd);
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
