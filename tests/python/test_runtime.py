"""Devices, seeds and logs: caffe.set_mode_cpu/gpu, set_device, devices(),
set_random_seed and init_log."""
import numpy as np
import pytest

import caffe
from conftest import LINEAR_NET


@pytest.fixture(autouse=True)
def default_device():
    yield
    caffe.set_device(caffe.devices()[0]["name"])  # later tests: the first device again


def test_devices_lists_what_opencl_reports():
    devices = caffe.devices()
    assert devices, "no OpenCL device"
    for index, device in enumerate(devices):
        assert device["index"] == index
        assert device["name"].startswith("ocl:") and device["type"] in ("gpu", "cpu", "other")


def test_set_mode_cpu_and_gpu_pick_devices_by_type(write_file):
    devices = caffe.devices()
    cpus = [d for d in devices if d["type"] == "cpu"]
    gpus = [d for d in devices if d["type"] == "gpu"]
    caffe.set_mode_cpu()
    if cpus:
        # The only CPU device, or with several the fastest by measurement.
        assert any(caffe.current_device().startswith(c["name"] + " ") for c in cpus)
        caffe.Net(write_file("n.prototxt", LINEAR_NET), caffe.TEST)
    else:
        with pytest.raises(caffe.Error, match="no OpenCL CPU device"):
            caffe.current_device()
    caffe.set_mode_gpu()
    if gpus:
        assert caffe.current_device().startswith(gpus[0]["name"] + " ")
    else:
        with pytest.raises(caffe.Error, match="no OpenCL GPU number 0"):
            caffe.current_device()
    caffe.set_device(len(gpus))  # one past the last GPU
    with pytest.raises(caffe.Error, match="no OpenCL GPU number %d" % len(gpus)):
        caffe.current_device()


def test_set_device_takes_dlcaffes_names():
    last = caffe.devices()[-1]
    caffe.set_device(last["name"])
    assert caffe.current_device().startswith(last["name"] + " ")
    caffe.set_device("ocl:9:9")
    with pytest.raises(caffe.Error, match="ocl:9:9"):
        caffe.current_device()


def test_set_random_seed_repeats_the_fillers(write_file):
    path = write_file("n.prototxt", LINEAR_NET)
    caffe.set_random_seed(11)
    first = caffe.Net(path, caffe.TEST).params["fc"][0].data.copy()
    caffe.set_random_seed(11)
    second = caffe.Net(path, caffe.TEST).params["fc"][0].data.copy()
    third = caffe.Net(path, caffe.TEST).params["fc"][0].data.copy()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(second, third)


def test_init_log_filters_the_lines_python_sees(write_file, capsys):
    path = write_file("n.prototxt", LINEAR_NET)
    caffe.init_log(2)
    caffe.Net(path, caffe.TEST)
    caffe.log("hidden at level 2")
    assert capsys.readouterr().err == ""
    caffe.init_log(0)
    caffe.Net(path, caffe.TEST)
    caffe.log("shown at level 0")
    err = capsys.readouterr().err
    assert "Network 'linear' initialized" in err and "shown at level 0" in err
    caffe.init_log(0, stdout=True)
    caffe.log("to stdout")
    assert "to stdout" in capsys.readouterr().out
    caffe.init_log(0)
