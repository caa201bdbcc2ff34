// DatumImage (Caffe's C x H x W bytes) to and from OpenCV's interleaved
// 8-bit images, for the host code that edits pixels with OpenCV.
#pragma once
#include <opencv2/core.hpp>

#include "dlcaffe/data/datum.hpp"

namespace dlcaffe {

// Copies an 8-bit image into `image` (its label untouched).
void PixelsFromMat(const cv::Mat& mat, DatumImage* image);
// The inverse (uint8 images only).
cv::Mat MatFromPixels(const DatumImage& image);

}  // namespace dlcaffe
