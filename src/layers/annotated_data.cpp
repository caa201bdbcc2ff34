// AnnotatedData (Caffe SSD "AnnotatedData"): Data's LMDB reading, of
// AnnotatedDatum records (convert_annoset writes them), with Caffe SSD's
// augmentation on the prefetch thread (data/ssd_augmentation.hpp), in its
// order: distort_param, expand_param, one window drawn among the batch
// samplers' (the image itself when none is found), the resize to
// resize_param's size, mirror. Tops: data (N x C x height x width) and the
// boxes, 1 x 1 x G x 8 rows (image in the batch, label, instance, xmin, ymin,
// xmax, ymax, difficult), normalized to the image; one row of -1s when the
// batch has none. Records without annotations (no type, no anno_type) give
// Data's N labels instead.
#include <opencv2/imgproc.hpp>

#include "data/datum_mat.hpp"
#include "data/ssd_augmentation.hpp"
#include "dlcaffe/io.hpp"
#include "layers/data_layer.hpp"

namespace dlcaffe {

class AnnotatedDataLayer : public DataLayer {
 public:
  using DataLayer::DataLayer;
  const char* type() const override { return "AnnotatedData"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::TransformationParameter& t = param_.transform_param();
    DLC_REQUIRE(t.crop_size() == 0 && !param_.data_param().has_crop_size(),
                Where() << "crop_size is not supported with annotated images: crop with "
                           "annotated_data_param's batch_sampler (docs/detection.md)");
    DLC_REQUIRE(!t.has_resize_param() ||
                    (t.resize_param().resize_mode() == caffe::SsdResizeParameter::WARP &&
                     t.resize_param().prob() == 1.f && t.resize_param().height() > 0 &&
                     t.resize_param().width() > 0),
                Where() << "transform_param.resize_param must be resize_mode WARP with prob 1 "
                           "and a height and width (FIT_SMALL_SIZE and "
                           "FIT_LARGE_SIZE_AND_PAD are not supported; docs/detection.md)");
    DLC_REQUIRE(t.noise_param().prob() <= 0.f,
                Where() << "transform_param.noise_param is not supported (docs/detection.md)");
    const caffe::AnnotatedDataParameter& a = param_.annotated_data_param();
    if (a.has_label_map_file()) {
      caffe::LabelMap map;
      try {
        ReadProtoFromTextFile(a.label_map_file(), &map);
      } catch (const Error& e) {
        DLC_FAIL(Where() << "annotated_data_param.label_map_file: " << e.what());
      }
    }
    for (float v : t.mean_value()) fill_.push_back(v);
    DataLayer::LayerSetUp(bottom, top);
  }

 protected:
  void ShapeTops(std::string_view record, const std::vector<Blob*>& top) override {
    caffe::AnnotatedDatum first;
    Parse(record, RecordName(), &first);
    boxes_ = first.has_type() || param_.annotated_data_param().has_anno_type();
    DatumImage image;
    try {
      DecodeDatum(first.datum(), transformer_->color(), RecordName(), &image);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    const caffe::TransformationParameter& t = param_.transform_param();
    const int height = t.has_resize_param() ? t.resize_param().height() : image.height;
    const int width = t.has_resize_param() ? t.resize_param().width() : image.width;
    transformer_->CheckInput(image.channels, height, width);
    top[0]->Reshape(transformer_->OutputShape(batch_size_, image.channels, height, width));
    if (top.size() > 1) {
      if (boxes_)
        top[1]->Reshape({1, 1, 1, 8});
      else
        top[1]->Reshape({batch_size_});
    }
  }

  void ReadRecord(int index, const std::string& record, const std::string& first_record,
                  PrefetchBatch* batch) override {
    caffe::AnnotatedDatum datum;
    Parse(cursor_->value(), record, &datum);
    try {
      DecodeDatum(datum.datum(), transformer_->color(), record, &image_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    DLC_REQUIRE(!image_.is_float, Where() << record << " holds float pixels; AnnotatedData "
                                          "augments 8-bit images");
    const caffe::TransformationParameter& t = param_.transform_param();
    cv::Mat image = MatFromPixels(image_);
    std::vector<ssd::LabeledBox> boxes = Boxes(datum);
    const caffe::EmitConstraint& emit = t.emit_constraint();
    if (t.has_distort_param()) {
      DLC_REQUIRE(image.channels() == 3, Where() << record << " has " << image.channels()
                                                 << " channels; distort_param needs color "
                                                    "(BGR) images");
      image = ssd::Distort(image, t.distort_param(), rng_);
    }
    if (t.has_expand_param()) {
      ssd::Box canvas;
      image = ssd::Expand(image, t.expand_param(), fill_, rng_, &canvas);
      boxes = ssd::SeenThrough(boxes, canvas, emit, false);
    }
    const auto& samplers = param_.annotated_data_param().batch_sampler();
    if (!samplers.empty()) {
      std::vector<ssd::Box> objects;
      for (const ssd::LabeledBox& b : boxes) objects.push_back(b.box);
      const std::vector<ssd::Box> windows = ssd::SampleWindows(objects, samplers, rng_);
      if (!windows.empty()) {
        ssd::Box cropped;
        image = ssd::Crop(image, windows[rng_() % windows.size()], &cropped);
        boxes = ssd::SeenThrough(boxes, cropped, emit, false);
      }
    }
    if (t.has_resize_param()) image = Resize(image, t.resize_param());
    PixelsFromMat(image, &image_);
    image_.label = datum.datum().label();
    PlaceImage(index, record, first_record, batch->images);
    const ImageCrop crop = transformer_->Draw(image_.height, image_.width, rng_);
    batch->images.SetCrop(index, crop);
    // The boxes as the top sees the image: clipped, and mirrored with it.
    boxes = ssd::SeenThrough(boxes, ssd::Box{0, 0, 1, 1}, emit, crop.mirror);
    if (index == 0) batch->box_rows.clear();
    for (const ssd::LabeledBox& b : boxes)
      batch->box_rows.insert(batch->box_rows.end(),
                             {float(index), float(b.label), float(b.instance), b.box.xmin,
                              b.box.ymin, b.box.xmax, b.box.ymax, b.difficult ? 1.f : 0.f});
  }

  void ForwardBatch(const PrefetchBatch& batch, const std::vector<Blob*>& top) override {
    if (!boxes_) return DataLayer::ForwardBatch(batch, top);
    transformer_->Transform(batch.images, device_batch(), top[0]);
    if (top.size() < 2) return;
    if (batch.box_rows.empty()) {
      top[1]->Reshape({1, 1, 1, 8});
      top[1]->SetData(-1.f);
      return;
    }
    top[1]->Reshape({1, 1, static_cast<int>(batch.box_rows.size() / 8), 8});
    top[1]->WriteData(batch.box_rows);
  }

 private:
  void Parse(std::string_view bytes, const std::string& record, caffe::AnnotatedDatum* datum) {
    DLC_REQUIRE(datum->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                Where() << record << " is not an AnnotatedDatum (convert_annoset writes them)");
  }

  std::vector<ssd::LabeledBox> Boxes(const caffe::AnnotatedDatum& datum) const {
    std::vector<ssd::LabeledBox> boxes;
    for (const caffe::AnnotationGroup& group : datum.annotation_group())
      for (const caffe::Annotation& a : group.annotation()) {
        ssd::LabeledBox b;
        b.box = {a.bbox().xmin(), a.bbox().ymin(), a.bbox().xmax(), a.bbox().ymax()};
        b.label = group.group_label();
        b.instance = a.instance_id();
        b.difficult = a.bbox().difficult();
        boxes.push_back(b);
      }
    return boxes;
  }

  // WARP to resize_param's size, by an interpolation drawn among those
  // listed (LINEAR when none is).
  cv::Mat Resize(const cv::Mat& image, const caffe::SsdResizeParameter& r) {
    int mode = caffe::SsdResizeParameter::LINEAR;
    if (r.interp_mode_size() > 0) mode = r.interp_mode(static_cast<int>(rng_() % r.interp_mode_size()));
    static const int kOpenCv[] = {0, cv::INTER_LINEAR, cv::INTER_AREA, cv::INTER_NEAREST,
                                  cv::INTER_CUBIC, cv::INTER_LANCZOS4};
    cv::Mat out;
    cv::resize(image, out, cv::Size(static_cast<int>(r.width()), static_cast<int>(r.height())), 0,
               0, kOpenCv[mode]);
    return out;
  }

  bool boxes_ = true;        // AnnotatedDatum BBOX records; false: Data's labels
  std::vector<float> fill_;  // the expansion's canvas: the mean values
};

REGISTER_LAYER_CLASS(AnnotatedData);

}  // namespace dlcaffe
