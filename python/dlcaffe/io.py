"""pycaffe's caffe.io: images in and out of a net's input layout, and numpy
arrays in and out of Caffe's protobuf messages (BlobProto, BlobProtoVector,
Datum).

Images are float H x W x C arrays in [0, 1] (load_image); a net's input is
N x C x H x W. A Transformer turns one into the other the way pycaffe does,
in this order: resize to the input's spatial size, transpose, channel swap,
raw scale, mean subtraction, input scale (deprocess undoes them in reverse).
"""
import numpy as np

from .proto import caffe_pb2

__all__ = ["Transformer", "load_image", "resize_image", "oversample", "blobproto_to_array",
           "array_to_blobproto", "arraylist_to_blobprotovector_str",
           "blobprotovector_str_to_arraylist", "array_to_datum", "datum_to_array"]


# ---- protobuf messages <-> arrays ----

def blobproto_to_array(blob, return_diff=False):
    """The values of a BlobProto (its diff with return_diff=True) as a numpy
    array of the blob's shape: the legacy num/channels/height/width when any
    of them is set, else shape.dim (no dims: a single value, shape ()).
    Raises ValueError when the count of values does not fit the shape."""
    if return_diff:
        values = blob.diff if len(blob.diff) or not len(blob.double_diff) else blob.double_diff
    else:
        values = blob.data if len(blob.data) or not len(blob.double_data) else blob.double_data
    array = np.array(values)
    legacy = any(blob.HasField(f) for f in ("num", "channels", "height", "width"))
    shape = ((blob.num, blob.channels, blob.height, blob.width) if legacy
             else tuple(blob.shape.dim))
    return array.reshape(shape)


def array_to_blobproto(arr, diff=None):
    """A BlobProto holding `arr` (shape.dim = arr.shape, data = its values as
    float32) and, when given, `diff` (an array of the same size) as the diff."""
    arr = np.asarray(arr)
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(int(d) for d in arr.shape)
    blob.data.extend(arr.astype(float).flat)
    if diff is not None:
        diff = np.asarray(diff)
        if diff.size != arr.size:
            raise ValueError("array_to_blobproto: diff has %d values, the array %d"
                             % (diff.size, arr.size))
        blob.diff.extend(diff.astype(float).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist):
    """A serialized BlobProtoVector (bytes) of the arrays in `arraylist`."""
    vector = caffe_pb2.BlobProtoVector()
    vector.blobs.extend(array_to_blobproto(a) for a in arraylist)
    return vector.SerializeToString()


def blobprotovector_str_to_arraylist(str):  # pylint: disable=redefined-builtin
    """The arrays of a serialized BlobProtoVector (bytes), as a list."""
    vector = caffe_pb2.BlobProtoVector()
    vector.ParseFromString(str)
    return [blobproto_to_array(blob) for blob in vector.blobs]


def array_to_datum(arr, label=None):
    """A Datum of a C x H x W array: a uint8 array goes into `data` (raw
    bytes), any other type into `float_data`; `label` is set when given.
    Raises ValueError unless the array has three dimensions."""
    arr = np.asarray(arr)
    if arr.ndim != 3:
        raise ValueError("Incorrect array shape: a Datum holds C x H x W, got %s"
                         % (arr.shape,))
    datum = caffe_pb2.Datum()
    datum.channels, datum.height, datum.width = (int(d) for d in arr.shape)
    if arr.dtype == np.uint8:
        datum.data = np.ascontiguousarray(arr).tobytes()
    else:
        datum.float_data.extend(arr.astype(float).flat)
    if label is not None:
        datum.label = label
    return datum


def datum_to_array(datum):
    """The C x H x W array of a Datum: uint8 from `data` when it has bytes,
    else float64 from `float_data` (the label is not part of it).
    Raises ValueError for an encoded (JPEG/PNG) Datum."""
    shape = (datum.channels, datum.height, datum.width)
    if datum.encoded:
        raise ValueError("datum_to_array: the Datum holds an encoded image (encoded: true); "
                         "decode its data bytes with an image library instead")
    if len(datum.data):
        return np.frombuffer(datum.data, dtype=np.uint8).reshape(shape).copy()
    return np.array(datum.float_data, dtype=float).reshape(shape)


# ---- images ----

def load_image(filename, color=True):
    """An image file as float32 H x W x C in [0, 1]: RGB (C = 3) with
    color=True (a gray image repeated into 3 channels), one gray channel
    with color=False; an alpha channel is dropped."""
    import skimage.color
    import skimage.io
    image = skimage.img_as_float(skimage.io.imread(filename)).astype(np.float32)
    if image.ndim == 3 and image.shape[2] in (2, 4):  # gray+alpha, RGB+alpha
        image = image[:, :, :image.shape[2] - 1]
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
        if color:
            image = np.tile(image, (1, 1, 3))
    elif not color:
        image = skimage.color.rgb2gray(image).astype(np.float32)[:, :, np.newaxis]
    return image


def resize_image(im, new_dims, interp_order=1):
    """`im` (H x W x K) resized to new_dims (height, width) with spline
    interpolation of order interp_order (0 nearest, 1 bilinear, ...), as a
    float32 array: images of 1 or 3 channels through skimage (scaled into
    [0, 1] and back, so any value range works), others through scipy's zoom.
    A constant image stays that constant."""
    im = np.asarray(im)
    new_dims = tuple(int(d) for d in new_dims)
    if im.shape[-1] in (1, 3):
        low, high = im.min(), im.max()
        if high <= low:  # constant: nothing to interpolate (and no 0 division)
            return np.full(new_dims[:2] + (im.shape[-1],), low, dtype=np.float32)
        from skimage.transform import resize
        unit = (im - low) / (high - low)
        resized = resize(unit, new_dims, order=interp_order, mode="constant")
        resized = resized * (high - low) + low
    else:
        from scipy.ndimage import zoom
        factors = tuple(np.array(new_dims, dtype=float) / np.array(im.shape[:2]))
        resized = zoom(im, factors + (1,) * (im.ndim - 2), order=interp_order)
    return resized.astype(np.float32)


def oversample(images, crop_dims):
    """Ten crops of crop_dims (height, width) from each H x W x K image: the
    four corners (top-left, top-right, bottom-left, bottom-right) and the
    center, then the same five mirrored left to right. Returns a float32
    array of (10 * len(images)) x crop_h x crop_w x K, ten per image in turn."""
    images = list(images)
    shape = np.array(images[0].shape)
    crop_h, crop_w = (int(d) for d in crop_dims)
    rows, cols = (0, int(shape[0]) - crop_h), (0, int(shape[1]) - crop_w)
    starts = [(r, c) for r in rows for c in cols]
    # The center crop starts at center - crop / 2, truncated toward zero.
    starts.append((int(shape[0] / 2.0 - crop_h / 2.0), int(shape[1] / 2.0 - crop_w / 2.0)))
    crops = np.empty((10 * len(images), crop_h, crop_w, shape[-1]), dtype=np.float32)
    index = 0
    for image in images:
        for r, c in starts:
            crops[index] = image[r:r + crop_h, c:c + crop_w, :]
            crops[index + 5] = crops[index][:, ::-1, :]
            index += 1
        index += 5
    return crops


# ---- Transformer ----

class Transformer:
    """Turns images into a net's input layout and back (pycaffe's
    caffe.io.Transformer). `inputs` maps each input blob name to its shape
    (N, C, H, W), e.g. {'data': net.blobs['data'].data.shape}.

    preprocess applies, for the named input and in this order: resize of the
    image's first two axes to the input's H x W, transpose, channel swap,
    raw scale, mean subtraction, input scale. Steps not set are skipped.
    """

    def __init__(self, inputs):
        self.inputs = inputs
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def __check_input(self, in_):
        if in_ not in self.inputs:
            raise Exception("{} is not one of the net inputs: {}".format(in_, self.inputs))

    def _shape(self, in_):
        return tuple(int(d) for d in self.inputs[in_])

    def preprocess(self, in_, data):
        """One image `data` (H x W x K, as load_image gives) as input `in_`
        takes it (K x H' x W' once transposed (2, 0, 1)), float32. The caller's
        array is not changed."""
        self.__check_input(in_)
        out = np.array(data, dtype=np.float32, copy=True)
        spatial = self._shape(in_)[2:]
        if tuple(out.shape[:2]) != spatial:
            out = resize_image(out, spatial)
        transpose = self.transpose.get(in_)
        if transpose is not None:
            out = out.transpose(transpose)
        channel_swap = self.channel_swap.get(in_)
        if channel_swap is not None:
            out = out[list(channel_swap), :, :]
        raw_scale = self.raw_scale.get(in_)
        if raw_scale is not None:
            out = out * raw_scale
        mean = self.mean.get(in_)
        if mean is not None:
            out = out - mean
        input_scale = self.input_scale.get(in_)
        if input_scale is not None:
            out = out * input_scale
        return np.asarray(out, dtype=np.float32)

    def deprocess(self, in_, data):
        """Undoes preprocess (all but the resize) on one item of input `in_`
        (dimensions of size 1 squeezed away): back to H x W x K image order."""
        self.__check_input(in_)
        out = np.array(data, copy=True).squeeze()
        input_scale = self.input_scale.get(in_)
        if input_scale is not None:
            out = out / input_scale
        mean = self.mean.get(in_)
        if mean is not None:
            out = out + mean
        raw_scale = self.raw_scale.get(in_)
        if raw_scale is not None:
            out = out / raw_scale
        channel_swap = self.channel_swap.get(in_)
        if channel_swap is not None:
            out = out[np.argsort(channel_swap), :, :]
        transpose = self.transpose.get(in_)
        if transpose is not None:
            out = out.transpose(np.argsort(transpose))
        return out

    def set_transpose(self, in_, order):
        """The axis order preprocess gives the image, e.g. (2, 0, 1) for
        H x W x C -> C x H x W; one entry per axis of an item of the input."""
        self.__check_input(in_)
        if len(order) != len(self.inputs[in_]) - 1:
            raise Exception("Transpose order needs to have the same number of dimensions "
                            "as the input.")
        self.transpose[in_] = order

    def set_channel_swap(self, in_, order):
        """The channel order after the transpose, e.g. (2, 1, 0) for RGB ->
        BGR; one entry per channel of the input."""
        self.__check_input(in_)
        if len(order) != self.inputs[in_][1]:
            raise Exception("Channel swap needs to have the same number of dimensions as "
                            "the input channels.")
        self.channel_swap[in_] = order

    def set_raw_scale(self, in_, scale):
        """The factor applied after the channel swap and before the mean, e.g.
        255 for [0, 1] images and a mean of [0, 255] pixels."""
        self.__check_input(in_)
        self.raw_scale[in_] = scale

    def set_mean(self, in_, mean):
        """The mean subtracted after the raw scale: one value per channel
        (a vector of C) or a whole C x H x W (or H x W) array of the input's
        item shape. Raises ValueError for a shape that does not fit."""
        self.__check_input(in_)
        mean = np.asarray(mean)
        shape = mean.shape
        if mean.ndim == 1:
            if shape[0] != self.inputs[in_][1]:
                raise ValueError("Mean channels incompatible with input.")
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if len(shape) == 2:
                shape = (1,) + shape
            if len(shape) != 3:
                raise ValueError("Mean shape invalid")
            if tuple(shape) != self._shape(in_)[1:]:
                raise ValueError("Mean shape incompatible with input shape.")
        self.mean[in_] = mean

    def set_input_scale(self, in_, scale):
        """The factor applied last, after the mean subtraction."""
        self.__check_input(in_)
        self.input_scale[in_] = scale
