#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/net.hpp"
#include "util/error_of.hpp"
#include "util/hdf5_test_files.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Row r of file f: label 100 f + r; data values 1000 f + 10 r + k (k < 6),
// so that every delivered value says where it came from.
double Label(int f, int r) { return 100 * f + r; }
double Value(int f, int r, int k) { return 1000 * f + 10 * r + k; }

// File f of `rows` rows: "data" rows × 2 × 3 float, "label" rows double.
std::string MakeFile(const std::string& dir, int f, int rows) {
  H5Dataset data{"data", {uint64_t(rows), 2, 3}, {}, H5T_NATIVE_FLOAT};
  H5Dataset label{"label", {uint64_t(rows)}, {}, H5T_NATIVE_DOUBLE};
  for (int r = 0; r < rows; ++r) {
    label.values.push_back(Label(f, r));
    for (int k = 0; k < 6; ++k) data.values.push_back(Value(f, r, k));
  }
  const std::string path = dir + "/file" + std::to_string(f) + ".h5";
  WriteH5(path, {data, label});
  return path;
}

// Files of the given row counts and their list; returns the list's path.
std::string MakeFiles(const std::string& dir, const std::vector<int>& rows) {
  std::string list;
  for (size_t f = 0; f < rows.size(); ++f) list += MakeFile(dir, int(f), rows[f]) + "\n";
  WriteText(dir + "/list.txt", list);
  return dir + "/list.txt";
}

std::string LayerText(const std::string& source, int batch, const std::string& extra = "",
                      const std::string& phase = "TEST") {
  return "name: 'h5' type: 'HDF5Data' top: 'data' top: 'label' phase: " + phase +
         " hdf5_data_param { source: '" + source + "' batch_size: " + std::to_string(batch) + " " +
         extra + " }";
}

struct Row {
  int file, row;
  bool operator==(const Row& o) const { return file == o.file && row == o.row; }
  bool operator<(const Row& o) const { return file < o.file || (file == o.file && row < o.row); }
};

// The next batch, each row checked (data consistent with its label) and
// named by its label.
std::vector<Row> NextRows(Layer& layer, Blob& data, Blob& label) {
  layer.Forward({}, {&data, &label});
  const std::vector<float> d = data.ReadData(), l = label.ReadData();
  std::vector<Row> rows;
  for (size_t i = 0; i < l.size(); ++i) {
    const int f = int(l[i]) / 100, r = int(l[i]) % 100;
    EXPECT_EQ(l[i], float(Label(f, r)));
    for (int k = 0; k < 6; ++k) EXPECT_EQ(d[i * 6 + k], float(Value(f, r, k))) << "row " << i;
    rows.push_back({f, r});
  }
  return rows;
}

std::vector<Row> ReadRows(Layer& layer, Blob& data, Blob& label, int batches) {
  std::vector<Row> rows;
  for (int b = 0; b < batches; ++b) {
    const std::vector<Row> batch = NextRows(layer, data, label);
    rows.insert(rows.end(), batch.begin(), batch.end());
  }
  return rows;
}

}  // namespace

TEST(HDF5DataLayer, ReadsRowsInOrderAcrossFilesAndWrapsAround) {
  const std::string dir = TempDir();
  const std::string list = MakeFiles(dir, {4, 3});
  auto layer = MakeLayer(LayerText(list, 3));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), std::vector<int>({3, 2, 3}));
  EXPECT_EQ(label.shape(), std::vector<int>({3}));
  // 7 rows in batches of 3: the third batch wraps around to the first file.
  const std::vector<Row> want = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1},
                                 {1, 2}, {0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}};
  EXPECT_EQ(ReadRows(*layer, data, label, 4), want);
  EXPECT_EQ(data.shape(), std::vector<int>({3, 2, 3}));
}

TEST(HDF5DataLayer, OneFileSmallerThanABatch) {
  const std::string dir = TempDir();
  auto layer = MakeLayer(LayerText(MakeFiles(dir, {2}), 5));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  const std::vector<Row> want = {{0, 0}, {0, 1}, {0, 0}, {0, 1}, {0, 0}};
  EXPECT_EQ(NextRows(*layer, data, label), want);
}

TEST(HDF5DataLayer, AnyRankAndNumericTypeReadAsFloat) {
  const std::string dir = TempDir();
  // 3 rows of a 4-D double dataset (values that float rounds), an int
  // dataset of 1-D rows and a float one.
  H5Dataset images{"images", {3, 2, 1, 2}, {}, H5T_NATIVE_DOUBLE};
  H5Dataset ids{"ids", {3, 2}, {7, -8, 70000, 3, 0, 2147483}, H5T_NATIVE_INT};
  H5Dataset score{"score", {3}, {0.5, -1.25, 3e-3}, H5T_NATIVE_FLOAT};
  for (int i = 0; i < 12; ++i) images.values.push_back(0.1 * i - 0.35);
  WriteH5(dir + "/mixed.h5", {images, ids, score});
  WriteText(dir + "/list.txt", "  " + dir + "/mixed.h5 \r\n\n");  // blanks around, blank line
  auto layer = MakeLayer(
      "name: 'h5' type: 'HDF5Data' top: 'images' top: 'ids' top: 'score' "
      "hdf5_data_param { source: '" +
      dir + "/list.txt' batch_size: 4 }");
  Blob a(TestContext()), b(TestContext()), c(TestContext());
  layer->SetUp({}, {&a, &b, &c});
  EXPECT_EQ(a.shape(), std::vector<int>({4, 2, 1, 2}));
  EXPECT_EQ(b.shape(), std::vector<int>({4, 2}));
  EXPECT_EQ(c.shape(), std::vector<int>({4}));
  layer->Forward({}, {&a, &b, &c});
  const std::vector<float> got_a = a.ReadData(), got_b = b.ReadData(), got_c = c.ReadData();
  for (int i = 0; i < 4; ++i) {
    const int row = i % 3;  // wraps around after 3 rows
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(got_a[i * 4 + k], float(images.values[row * 4 + k])) << i << " " << k;
    for (int k = 0; k < 2; ++k) EXPECT_EQ(got_b[i * 2 + k], float(ids.values[row * 2 + k]));
    EXPECT_EQ(got_c[i], float(score.values[row]));
  }
}

TEST(HDF5DataLayer, RelativePathsAreRelativeToTheWorkingDirectory) {
  const std::string dir = TempDir();
  MakeFile(dir, 0, 2);
  WriteText(dir + "/list.txt", "file0.h5\n");
  char cwd[4096];
  ASSERT_TRUE(getcwd(cwd, sizeof(cwd)));
  ASSERT_EQ(chdir(dir.c_str()), 0);
  std::string error;
  std::vector<Row> rows;
  Blob data(TestContext()), label(TestContext());
  error = ErrorOf([&] {
    auto layer = MakeLayer(LayerText("list.txt", 2));
    layer->SetUp({}, {&data, &label});
    rows = NextRows(*layer, data, label);
  });
  ASSERT_EQ(chdir(cwd), 0);
  EXPECT_EQ(error, "(no error)");
  EXPECT_EQ(rows, std::vector<Row>({{0, 0}, {0, 1}}));
}

TEST(HDF5DataLayer, ShuffleIsASeededPermutationOfFilesAndRows) {
  const std::string dir = TempDir();
  const std::string list = MakeFiles(dir, {5, 4, 3});
  auto read = [&](uint64_t seed, int epochs) {
    TestContext().Seed(seed);
    auto layer = MakeLayer(LayerText(list, 3, "shuffle: true"));
    Blob data(TestContext()), label(TestContext());
    layer->SetUp({}, {&data, &label});
    return ReadRows(*layer, data, label, 4 * epochs);  // 12 rows an epoch
  };
  const std::vector<Row> rows = read(7, 3);
  EXPECT_EQ(read(7, 3), rows);  // the same seed, the same order
  EXPECT_NE(read(8, 3), rows);
  std::vector<Row> all;
  for (int f = 0; f < 3; ++f)
    for (int r = 0; r < 5 - f; ++r) all.push_back({f, r});
  std::set<std::vector<Row>> epochs;
  for (int e = 0; e < 3; ++e) {
    std::vector<Row> epoch(rows.begin() + 12 * e, rows.begin() + 12 * (e + 1));
    epochs.insert(epoch);
    // A file's rows come together, in a shuffled order.
    std::vector<int> files;
    for (const Row& row : epoch)
      if (files.empty() || files.back() != row.file) files.push_back(row.file);
    EXPECT_EQ(files.size(), 3u) << "epoch " << e;
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, all) << "epoch " << e << " is not a permutation of the rows";
  }
  EXPECT_GT(epochs.size(), 1u) << "every epoch was drawn alike";
  std::vector<Row> first(rows.begin(), rows.begin() + 12);
  std::vector<Row> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(first, sorted) << "shuffle left the rows in order";
}

TEST(HDF5DataLayer, ExactResumeOfShuffledReading) {
  const std::string dir = TempDir();
  const std::string list = MakeFiles(dir, {5, 4});
  const std::string text = LayerText(list, 2, "shuffle: true");
  TestContext().Seed(3);
  auto layer = MakeLayer(text);
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  ReadRows(*layer, data, label, 3);
  auto* resumable = dynamic_cast<ResumableDataLayer*>(layer.get());
  ASSERT_NE(resumable, nullptr);
  const DataReaderState state = resumable->ReaderState();
  const std::vector<Row> want = ReadRows(*layer, data, label, 10);  // past two epochs

  TestContext().Seed(99);
  auto other = MakeLayer(text);
  Blob data2(TestContext()), label2(TestContext());
  other->SetUp({}, {&data2, &label2});
  dynamic_cast<ResumableDataLayer*>(other.get())
      ->RestoreReaderState(DataReaderState::Parse(state.Serialize()));
  EXPECT_EQ(ReadRows(*other, data2, label2, 10), want);

  DataReaderState bad = state;
  bad.next_key = "position 3 of 9";
  const std::string what =
      ErrorOf([&] { dynamic_cast<ResumableDataLayer*>(other.get())->RestoreReaderState(bad); });
  EXPECT_NE(what.find("layer 'h5'"), std::string::npos) << what;
  EXPECT_NE(what.find("position 3 of 9"), std::string::npos) << what;
}

TEST(HDF5DataLayer, ReplicasReadDisjointSharesOfOneShuffledOrder) {
  const std::string dir = TempDir();
  const std::string list = MakeFiles(dir, {5, 4});
  std::vector<std::vector<Row>> shares;
  for (int r = 0; r < 3; ++r) {
    auto ctx = Context::Create("");
    ctx->set_replica({r, 3, 42});
    ctx->Seed(100 + r);  // the replicas' own generators differ
    auto layer =
        LayerRegistry::Create(LayerParam(LayerText(list, 3, "shuffle: true", "TRAIN")), *ctx);
    Blob data(*ctx), label(*ctx);
    layer->SetUp({}, {&data, &label});
    shares.push_back(NextRows(*layer, data, label));
  }
  std::vector<Row> all;
  for (const auto& share : shares) all.insert(all.end(), share.begin(), share.end());
  std::sort(all.begin(), all.end());
  std::vector<Row> want;
  for (int f = 0; f < 2; ++f)
    for (int r = 0; r < 5 - f; ++r) want.push_back({f, r});
  EXPECT_EQ(all, want);  // one epoch, split three ways
}

TEST(HDF5DataLayer, RunsInTheTestPhaseOfANet) {
  const std::string dir = TempDir();
  const std::string list = MakeFiles(dir, {3});
  Net net(NetFromText("name: 'n' layer { name: 'h5' type: 'HDF5Data' top: 'data' top: 'label' "
                      "include { phase: TEST } hdf5_data_param { source: '" +
                          list +
                          "' batch_size: 2 } }"
                          "layer { name: 'flat' type: 'Flatten' bottom: 'data' top: 'flat' }",
                      caffe::TEST),
          TestContext());
  net.Forward();
  net.Forward();  // rows 2, 0
  const std::vector<float> flat = net.blob_by_name("flat")->ReadData();
  const std::vector<float> label = net.blob_by_name("label")->ReadData();
  ASSERT_EQ(flat.size(), 12u);
  EXPECT_EQ(label, std::vector<float>({float(Label(0, 2)), float(Label(0, 0))}));
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(flat[k], float(Value(0, 2, k)));
    EXPECT_EQ(flat[6 + k], float(Value(0, 0, k)));
  }
}

TEST(HDF5DataLayer, ErrorsNameTheLayerAndTheFile) {
  const std::string dir = TempDir();
  Blob data(TestContext()), label(TestContext());
  auto setup = [&](const std::string& text) {
    return ErrorOf([&] { MakeLayer(text)->SetUp({}, {&data, &label}); });
  };
  auto expect = [](const std::string& what, const std::vector<std::string>& parts) {
    EXPECT_NE(what.find("layer 'h5' (HDF5Data)"), std::string::npos) << what;
    for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  };

  expect(setup(LayerText(dir + "/no_list.txt", 2)), {"cannot open", dir + "/no_list.txt"});

  WriteText(dir + "/empty.txt", "\n  \n");
  expect(setup(LayerText(dir + "/empty.txt", 2)), {"names no files", dir + "/empty.txt"});

  const std::string good = MakeFile(dir, 0, 3);
  WriteText(dir + "/missing.txt", good + "\n" + dir + "/gone.h5\n");
  expect(setup(LayerText(dir + "/missing.txt", 2)),
         {"cannot open HDF5 file " + dir + "/gone.h5", "does not exist", "line 2 of"});

  WriteText(dir + "/text.h5", "not hdf5 at all");
  WriteText(dir + "/not_h5.txt", dir + "/text.h5\n");
  expect(setup(LayerText(dir + "/not_h5.txt", 2)), {dir + "/text.h5", "not an HDF5 file"});

  WriteH5(dir + "/nolabel.h5", {{"data", {2, 1}, {1, 2}}});
  WriteText(dir + "/nolabel.txt", dir + "/nolabel.h5\n");
  expect(setup(LayerText(dir + "/nolabel.txt", 2)), {dir + "/nolabel.h5", "no dataset 'label'"});

  WriteH5(dir + "/rows.h5", {{"data", {3, 2}, {1, 2, 3, 4, 5, 6}}, {"label", {2}, {1, 2}}});
  WriteText(dir + "/rows.txt", dir + "/rows.h5\n");
  expect(setup(LayerText(dir + "/rows.txt", 2)),
         {dir + "/rows.h5", "'label' has 2 rows", "'data' has 3"});

  // A later file whose rows differ in shape from the first file's.
  WriteH5(dir + "/wide.h5", {{"data", {1, 7}, {1, 2, 3, 4, 5, 6, 7}}, {"label", {1}, {1}}});
  WriteText(dir + "/shapes.txt", good + "\n" + dir + "/wide.h5\n");
  expect(setup(LayerText(dir + "/shapes.txt", 2)), {dir + "/wide.h5", "(7)", "(2 3)"});

  expect(setup(LayerText(good, 0)), {"batch_size"});
}

}  // namespace test
}  // namespace dlcaffe
