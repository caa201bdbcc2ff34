// convert_annoset: Caffe SSD's tool that turns a folder of images and their
// box annotations into an LMDB of AnnotatedDatum records for AnnotatedData.
//
//   convert_annoset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
//
// LISTFILE lines are "image_path annotation_path" (relative to ROOTFOLDER).
// Annotations are PASCAL VOC XML files (--label_type=xml: each <object>'s
// <name>, found in --label_map_file, its <difficult> and <bndbox>, divided by
// <size>'s width and height) or text files (--label_type=txt: a line
// "label xmin ymin xmax ymax" in pixels per box). Boxes are grouped by label
// (groups in the order labels first appear, instances counted within each).
// Images are stored as convert_imageset stores them (tools/image_list.hpp).
// A missing image is skipped, as in convert_imageset; a missing or wrong
// annotation stops the tool, naming the file.
#include <glog/logging.h>
#include <tinyxml2.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "dlcaffe/io.hpp"
#include "image_list.hpp"

DEFINE_bool(gray, false, "When this option is on, treat images as grayscale ones");
DEFINE_bool(shuffle, false, "Randomly shuffle the order of images and their labels");
DEFINE_int64(shuffle_seed, -1,
             "With --shuffle: the seed of the order; -1 (the default) draws a fresh order");
DEFINE_string(backend, "lmdb", "The backend for storing the result (lmdb)");
DEFINE_string(anno_type, "detection", "The type of annotation (detection; for classification "
                                      "use convert_imageset)");
DEFINE_string(label_type, "xml", "The annotation files' format: xml (PASCAL VOC) or txt");
DEFINE_string(label_map_file, "", "A LabelMap prototxt: each class's name and label");
DEFINE_bool(check_label, false, "Check that the label map repeats no name and no label");
DEFINE_int32(min_dim, 0, "Not supported (resize keeping the aspect ratio): must be 0");
DEFINE_int32(max_dim, 0, "Not supported (resize keeping the aspect ratio): must be 0");
DEFINE_int32(resize_width, 0, "Width images are resized to");
DEFINE_int32(resize_height, 0, "Height images are resized to");
DEFINE_bool(check_size, false, "When this option is on, check that all the datum have the same size");
DEFINE_bool(encoded, false, "When this option is on, the encoded image will be save in datum");
DEFINE_string(encode_type, "", "Optional: What type should we encode the image as ('png','jpg',...).");

namespace dlcaffe {
namespace {

struct AnnotatedEntry {
  std::string image, annotation;  // relative to the root folder
  int line = 0;
};

std::vector<AnnotatedEntry> ReadAnnotatedList(const std::string& path) {
  std::ifstream in(path);
  DLC_REQUIRE(in, "cannot open list file " << path);
  std::vector<AnnotatedEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(TrimRight(line));
    AnnotatedEntry e;
    e.line = number;
    if (!(fields >> e.image)) continue;  // a blank line
    std::string extra;
    DLC_REQUIRE(fields >> e.annotation && !(fields >> extra),
                path << ":" << number << ": '" << TrimRight(line)
                     << "' must be 'image_path annotation_path'");
    entries.push_back(e);
  }
  DLC_REQUIRE(!entries.empty(), "list file " << path << " lists no images");
  return entries;
}

std::map<std::string, int> ReadLabelMap(const std::string& path, bool check) {
  DLC_REQUIRE(!path.empty(), "--label_map_file is needed to turn object names into labels");
  caffe::LabelMap map;
  ReadProtoFromTextFile(path, &map);
  std::map<std::string, int> labels;
  std::set<int> seen;
  for (const caffe::LabelMapItem& item : map.item()) {
    DLC_REQUIRE(!check || (!labels.count(item.name()) && !seen.count(item.label())),
                path << ": --check_label: name '" << item.name() << "' or label " << item.label()
                     << " appears twice");
    labels[item.name()] = item.label();
    seen.insert(item.label());
  }
  DLC_REQUIRE(!labels.empty(), path << " maps no names to labels (item { name: label: })");
  return labels;
}

struct PixelBox {
  int label = 0;
  bool difficult = false;
  float xmin = 0, ymin = 0, xmax = 0, ymax = 0;
};

const tinyxml2::XMLElement* Child(const tinyxml2::XMLElement* parent, const char* name,
                                  const std::string& file) {
  const tinyxml2::XMLElement* child = parent->FirstChildElement(name);
  DLC_REQUIRE(child, file << ": <" << parent->Name() << "> at line " << parent->GetLineNum()
                           << " has no <" << name << ">");
  return child;
}

std::string Text(const tinyxml2::XMLElement* e, const std::string& file) {
  DLC_REQUIRE(e->GetText(), file << ":" << e->GetLineNum() << ": <" << e->Name() << "> is empty");
  return e->GetText();
}

float Number(const tinyxml2::XMLElement* e, const std::string& file) {
  Text(e, file);
  float v = 0;
  DLC_REQUIRE(e->QueryFloatText(&v) == tinyxml2::XML_SUCCESS,
              file << ":" << e->GetLineNum() << ": <" << e->Name() << "> '" << e->GetText()
                   << "' is not a number");
  return v;
}

// A VOC annotation: its image size and boxes.
std::vector<PixelBox> ReadVoc(const std::string& file, const std::map<std::string, int>& labels,
                              int* width, int* height) {
  tinyxml2::XMLDocument doc;
  DLC_REQUIRE(doc.LoadFile(file.c_str()) == tinyxml2::XML_SUCCESS,
              file << ": cannot read the XML annotation: " << doc.ErrorStr());
  const tinyxml2::XMLElement* root = doc.FirstChildElement("annotation");
  DLC_REQUIRE(root, file << ": no <annotation> element (a PASCAL VOC annotation)");
  const tinyxml2::XMLElement* size = Child(root, "size", file);
  *width = static_cast<int>(Number(Child(size, "width", file), file));
  *height = static_cast<int>(Number(Child(size, "height", file), file));
  std::vector<PixelBox> boxes;
  for (const tinyxml2::XMLElement* o = root->FirstChildElement("object"); o;
       o = o->NextSiblingElement("object")) {
    const std::string name = Text(Child(o, "name", file), file);
    const auto found = labels.find(name);
    DLC_REQUIRE(found != labels.end(), file << ":" << o->GetLineNum() << ": object '" << name
                                            << "' is not in the label map");
    PixelBox b;
    b.label = found->second;
    if (const tinyxml2::XMLElement* d = o->FirstChildElement("difficult"); d && d->GetText())
      b.difficult = Number(d, file) != 0.f;
    const tinyxml2::XMLElement* box = Child(o, "bndbox", file);
    b.xmin = Number(Child(box, "xmin", file), file);
    b.ymin = Number(Child(box, "ymin", file), file);
    b.xmax = Number(Child(box, "xmax", file), file);
    b.ymax = Number(Child(box, "ymax", file), file);
    boxes.push_back(b);
  }
  return boxes;
}

// A text annotation: "label xmin ymin xmax ymax" per line, in pixels.
std::vector<PixelBox> ReadText(const std::string& file) {
  std::ifstream in(file);
  DLC_REQUIRE(in, file << ": cannot open the annotation");
  std::vector<PixelBox> boxes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (TrimRight(line).empty()) continue;
    std::istringstream fields(line);
    PixelBox b;
    std::string extra;
    DLC_REQUIRE(fields >> b.label >> b.xmin >> b.ymin >> b.xmax >> b.ymax && !(fields >> extra),
                file << ":" << number << ": '" << TrimRight(line)
                     << "' must be 'label xmin ymin xmax ymax'");
    boxes.push_back(b);
  }
  return boxes;
}

// Boxes normalized by the image size and grouped by label, as Caffe SSD.
void AddAnnotations(const std::vector<PixelBox>& boxes, int width, int height,
                    const std::string& file, caffe::AnnotatedDatum* datum) {
  datum->set_type(caffe::AnnotatedDatum::BBOX);
  for (const PixelBox& b : boxes) {
    DLC_REQUIRE(b.xmin <= b.xmax && b.ymin <= b.ymax,
                file << ": box " << b.xmin << " " << b.ymin << " " << b.xmax << " " << b.ymax
                     << " has its corners swapped");
    if (b.xmin < 0 || b.ymin < 0 || b.xmax > width || b.ymax > height)
      LOG(WARNING) << file << ": box " << b.xmin << " " << b.ymin << " " << b.xmax << " "
                   << b.ymax << " reaches outside the " << width << " x " << height << " image";
    caffe::AnnotationGroup* group = nullptr;
    for (caffe::AnnotationGroup& g : *datum->mutable_annotation_group())
      if (g.group_label() == b.label) group = &g;
    if (!group) {
      group = datum->add_annotation_group();
      group->set_group_label(b.label);
    }
    caffe::Annotation* a = group->add_annotation();
    a->set_instance_id(group->annotation_size() - 1);
    caffe::NormalizedBBox* box = a->mutable_bbox();
    box->set_xmin(b.xmin / width);
    box->set_ymin(b.ymin / height);
    box->set_xmax(b.xmax / width);
    box->set_ymax(b.ymax / height);
    box->set_difficult(b.difficult);
  }
}

void Convert(const std::string& root, const std::string& list_path, const std::string& db_path) {
  DLC_REQUIRE(FLAGS_anno_type == "detection",
              "--anno_type=" << FLAGS_anno_type
                             << " is not supported: detection only (convert_imageset writes "
                                "classification sets)");
  DLC_REQUIRE(FLAGS_label_type == "xml" || FLAGS_label_type == "txt",
              "--label_type=" << FLAGS_label_type << " is not supported: xml or txt");
  DLC_REQUIRE(FLAGS_min_dim == 0 && FLAGS_max_dim == 0,
              "--min_dim and --max_dim are not supported; --resize_width and --resize_height "
              "resize, and AnnotatedData's resize_param does too");
  const Options options = OptionsFromFlags();
  const std::string prefix = RootPrefix(root);
  const std::map<std::string, int> labels =
      FLAGS_label_type == "xml" ? ReadLabelMap(FLAGS_label_map_file, FLAGS_check_label)
                                : std::map<std::string, int>();
  std::vector<AnnotatedEntry> entries = ReadAnnotatedList(list_path);
  if (FLAGS_shuffle) {
    const uint64_t seed = FLAGS_shuffle_seed >= 0 ? static_cast<uint64_t>(FLAGS_shuffle_seed)
                                                  : std::random_device()();
    std::shuffle(entries.begin(), entries.end(), std::mt19937_64(seed));
  }
  LOG(INFO) << "A total of " << entries.size() << " images.";
  NewLmdbDataset db(db_path);
  const auto start = std::chrono::steady_clock::now();
  size_t skipped = 0, boxes_written = 0;
  caffe::AnnotatedDatum datum;
  std::string value;
  char key_prefix[16];
  for (size_t id = 0; id < entries.size(); ++id) {
    const AnnotatedEntry& entry = entries[id];
    const std::string where = list_path + ":" + std::to_string(entry.line);
    const std::string file = prefix + entry.image;
    ListedImage image;
    try {
      image = ReadListedImage(file, options);
    } catch (const Error& e) {
      LOG(WARNING) << where << ": " << e.what() << "; skipped";
      ++skipped;
      continue;
    }
    // Boxes are normalized by the size before any resize: the image's own
    // (the XML's <size> must agree with it).
    DatumImage original = image.pixels;
    if (options.resize_height > 0) ReadImageFile(file, 0, 0, options.is_color, &original);
    const std::string annotation = prefix + entry.annotation;
    int width = original.width, height = original.height;
    std::vector<PixelBox> boxes;
    if (FLAGS_label_type == "xml") {
      boxes = ReadVoc(annotation, labels, &width, &height);
      DLC_REQUIRE(width == original.width && height == original.height,
                  annotation << ": <size> says " << width << " x " << height << " but image "
                             << file << " is " << original.width << " x " << original.height);
    } else {
      boxes = ReadText(annotation);
    }
    datum.Clear();
    try {
      FillDatum(image, 0, options, file, datum.mutable_datum());
    } catch (const Error& e) {
      DLC_FAIL(where << ": " << file << ": " << e.what());
    }
    AddAnnotations(boxes, width, height, annotation, &datum);
    boxes_written += boxes.size();
    std::snprintf(key_prefix, sizeof(key_prefix), "%08d_", static_cast<int>(id));
    datum.SerializeToString(&value);
    db.Put(key_prefix + entry.image, value);
    if (db.size() % NewLmdbDataset::kCommitEvery == 0)
      LOG(INFO) << "Processed " << db.size() << " files.";
  }
  DLC_REQUIRE(db.size() > 0, "none of the " << entries.size() << " images in " << list_path
                                            << " could be read (see the warnings above)");
  db.Finish();
  LOG(INFO) << "Wrote " << db.size() << " images with " << boxes_written << " boxes to "
            << db_path << " in " << SecondsSince(start) << " s ("
            << ImagesPerSecond(db.size(), start) << " images/s)";
  if (skipped > 0)
    LOG(WARNING) << "Skipped " << skipped << " of " << entries.size()
                 << " images that could not be read (see the warnings above)";
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "convert_annoset",
      "Convert a set of images and their box annotations to the lmdb of AnnotatedDatum "
      "records that AnnotatedData reads.\n"
      "Usage:\n"
      "    convert_annoset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
      "LISTFILE lines are 'image_path annotation_path'.",
      3, 3, [](const std::vector<std::string>& args) {
        dlcaffe::Convert(args[0], args[1], args[2]);
      });
}
