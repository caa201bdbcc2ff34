"""HDF5 from Python: net.save_hdf5/load_hdf5 in Caffe's layout (read back by
h5py), and the HDF5Data and HDF5Output layers on files h5py writes and reads."""
import h5py
import numpy as np
import pytest

import caffe
from conftest import LINEAR_NET


def test_save_hdf5_writes_caffes_layout_and_load_hdf5_reads_it(write_file, tmp_path):
    path = write_file("linear.prototxt", LINEAR_NET)
    net = caffe.Net(path, caffe.TRAIN)
    net.params["fc"][0].data[...] = np.arange(6).reshape(2, 3)
    net.params["fc"][1].data[...] = [7, 8]
    net.params["fc"][0].diff[...] = -1
    weights = str(tmp_path / "w.h5")
    net.save_hdf5(weights, write_diff=True)
    with h5py.File(weights, "r") as f:
        np.testing.assert_array_equal(f["data/fc/0"][()], np.arange(6).reshape(2, 3))
        np.testing.assert_array_equal(f["data/fc/1"][()], [7, 8])
        np.testing.assert_array_equal(f["diff/fc/0"][()], -np.ones((2, 3)))
    other = caffe.Net(path, caffe.TEST)
    other.load_hdf5(weights)
    np.testing.assert_array_equal(other.params["fc"][1].data, [7, 8])
    third = caffe.Net(path, caffe.TEST, weights=weights)  # weights by the file's signature
    np.testing.assert_array_equal(third.params["fc"][0].data, np.arange(6).reshape(2, 3))


def test_load_hdf5_names_a_shape_mismatch(write_file, tmp_path):
    weights = str(tmp_path / "bad.h5")
    with h5py.File(weights, "w") as f:
        f["data/fc/0"] = np.zeros((3, 3), np.float32)
        f["data/fc/1"] = np.zeros(2, np.float32)
    net = caffe.Net(write_file("linear.prototxt", LINEAR_NET), caffe.TEST)
    with pytest.raises(caffe.Error, match="fc"):
        net.load_hdf5(weights)


def test_hdf5_data_feeds_what_h5py_wrote_and_hdf5_output_writes_it_back(write_file, tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(6, 3).astype(np.float32)
    y = rng.randn(6, 2).astype(np.float64)  # converted to float by the layer
    data_file = str(tmp_path / "train.h5")
    with h5py.File(data_file, "w") as f:
        f["data"] = x
        f["label"] = y
    source = write_file("list.txt", data_file + "\n")
    out_file = str(tmp_path / "out.h5")
    net = caffe.Net(write_file("h5.prototxt", """
        layer { name: "in" type: "HDF5Data" top: "data" top: "label"
                hdf5_data_param { source: "%s" batch_size: 4 } }
        layer { name: "out" type: "HDF5Output" bottom: "data" bottom: "label"
                hdf5_output_param { file_name: "%s" } }
    """ % (source, out_file)), caffe.TEST)
    net.forward()
    np.testing.assert_array_equal(net.blobs["data"].data, x[:4])
    np.testing.assert_array_equal(net.blobs["label"].data, y[:4].astype(np.float32))
    with h5py.File(out_file, "r") as f:
        np.testing.assert_array_equal(f["data"][()].reshape(4, 3), x[:4])
        np.testing.assert_array_equal(f["label"][()].reshape(4, 2), y[:4].astype(np.float32))
    net.forward()  # rows 4, 5 and then 0, 1 again
    np.testing.assert_array_equal(net.blobs["data"].data, np.concatenate([x[4:], x[:2]]))
