#include "dlcaffe/data/data_state.hpp"

#include <sstream>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

std::string ToHex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex.push_back(digits[b >> 4]);
    hex.push_back(digits[b & 15]);
  }
  return hex;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string FromHex(const std::string& hex) {
  DLC_REQUIRE(hex.size() % 2 == 0, "data reader state: odd-length key '" << hex << "'");
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    DLC_REQUIRE(hi >= 0 && lo >= 0, "data reader state: bad hex key '" << hex << "'");
    bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  return bytes;
}

}  // namespace

std::string DataReaderState::Serialize() const {
  std::ostringstream out;
  out << "key " << ToHex(next_key) << "\n"
      << "epoch " << epoch << "\n"
      << "records " << records_read << "\n"
      << "rng " << rng_state << "\n";
  return out.str();
}

DataReaderState DataReaderState::Parse(const std::string& text) {
  DataReaderState state;
  std::istringstream in(text);
  std::string line;
  bool has_key = false, has_epoch = false, has_records = false, has_rng = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const std::string field = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (field == "key") {
      state.next_key = FromHex(value);
      has_key = true;
    } else if (field == "epoch" || field == "records") {
      std::istringstream number(value);
      uint64_t n = 0;
      DLC_REQUIRE((number >> n) && number.eof(),
                  "data reader state: bad " << field << " '" << value << "'");
      (field == "epoch" ? state.epoch : state.records_read) = n;
      (field == "epoch" ? has_epoch : has_records) = true;
    } else if (field == "rng") {
      Rng check;
      LoadRng(value, &check);
      state.rng_state = value;
      has_rng = true;
    } else {
      DLC_FAIL("data reader state: unknown field '" << field << "'");
    }
  }
  DLC_REQUIRE(has_key && has_epoch && has_records && has_rng,
              "data reader state: needs the fields key, epoch, records and rng");
  return state;
}

std::string DataReaderState::SaveRng(const Rng& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

void DataReaderState::LoadRng(const std::string& text, Rng* rng) {
  std::istringstream in(text);
  Rng loaded;
  in >> loaded;
  DLC_REQUIRE(!in.fail(), "data reader state: bad generator state");
  *rng = loaded;
}

}  // namespace dlcaffe
