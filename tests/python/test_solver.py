"""Solvers from Python: each step against SGD's closed form, callbacks,
test nets, snapshots and restore, the solver classes."""
import os

import numpy as np
import pytest

import caffe
from conftest import LINEAR_NET

SOLVER = """
net: "{net}"
base_lr: 0.1
momentum: {momentum}
lr_policy: "fixed"
max_iter: 4
display: 1
snapshot_prefix: "{prefix}"
random_seed: 3
{extra}
"""

X = np.random.RandomState(0).randn(5, 3).astype(np.float32)
T = np.random.RandomState(1).randn(5, 2).astype(np.float32)


def make_solver(write_file, tmp_path, extra="", cls=caffe.SGDSolver, net_text=LINEAR_NET,
                momentum=0.9):
    net = write_file("net.prototxt", net_text)
    path = write_file("solver.prototxt", SOLVER.format(net=net, prefix=tmp_path / "snap",
                                                       extra=extra, momentum=momentum))
    solver = cls(path)
    solver.net.blobs["x"].data[...] = X
    solver.net.blobs["target"].data[...] = T
    return solver, path


def gradients(w, b):
    """The Euclidean loss's gradients for y = x W^T + b (loss = |y-t|^2/2/num)."""
    dy = (X @ w.T + b - T) / len(X)
    return dy.T @ X, dy.sum(0)


def test_sgd_steps_follow_the_closed_form(write_file, tmp_path):
    solver, _ = make_solver(write_file, tmp_path)
    w = solver.net.params["fc"][0].data.copy()
    b = solver.net.params["fc"][1].data.copy()
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    for _ in range(3):
        gw, gb = gradients(w, b)
        vw, vb = 0.9 * vw + 0.1 * gw, 0.9 * vb + 0.1 * gb
        w, b = w - vw, b - vb
        solver.step(1)
        np.testing.assert_allclose(solver.net.params["fc"][0].data, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(solver.net.params["fc"][1].data, b, rtol=1e-5, atol=1e-6)
    assert solver.iter == 3
    assert solver.type == "SGD" and isinstance(solver, caffe.SGDSolver)


def test_callbacks_run_before_the_passes_and_before_the_update(write_file, tmp_path):
    solver, _ = make_solver(write_file, tmp_path)
    events = []
    w0 = solver.net.params["fc"][0].data.copy()

    def on_start():
        events.append(("start", solver.iter))

    def on_gradients_ready():
        # Gradients are computed, the update has not happened yet.
        gw, _ = gradients(w0, solver.net.params["fc"][1].data)
        np.testing.assert_allclose(solver.net.params["fc"][0].diff, gw, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(solver.net.params["fc"][0].data, w0)
        events.append(("gradients", solver.iter))

    solver.add_callback(on_start, on_gradients_ready)
    solver.step(1)
    assert events == [("start", 0), ("gradients", 0)]


def test_a_callback_object_with_both_methods(write_file, tmp_path):
    solver, _ = make_solver(write_file, tmp_path)

    class Counter:
        starts = 0
        ready = 0

        def on_start(self):
            Counter.starts += 1

        def on_gradients_ready(self):
            Counter.ready += 1

    solver.add_callback(Counter())
    solver.step(2)
    assert (Counter.starts, Counter.ready) == (2, 2)


def test_apply_update_uses_the_diffs_set_in_python(write_file, tmp_path):
    solver, _ = make_solver(write_file, tmp_path, cls=caffe.get_solver)
    w = solver.net.params["fc"][0].data.copy()
    solver.net.params["fc"][0].diff[...] = 2.0
    solver.net.params["fc"][1].diff[...] = 0.0
    solver.apply_update()
    np.testing.assert_allclose(solver.net.params["fc"][0].data, w - 0.1 * 2.0, rtol=1e-6)
    assert solver.iter == 0


def test_snapshot_and_restore_resume_exactly(write_file, tmp_path):
    solver, path = make_solver(write_file, tmp_path)
    solver.step(2)
    solver.snapshot()
    state = str(tmp_path / "snap_iter_2.solverstate")
    assert os.path.exists(state) and os.path.exists(str(tmp_path / "snap_iter_2.caffemodel"))
    solver.step(1)
    expected = solver.net.params["fc"][0].data.copy()

    resumed = caffe.SGDSolver(path)
    resumed.net.blobs["x"].data[...] = X
    resumed.net.blobs["target"].data[...] = T
    resumed.restore(state)
    assert resumed.iter == 2
    resumed.step(1)
    np.testing.assert_array_equal(resumed.net.params["fc"][0].data, expected)


def test_test_nets_share_the_training_weights(write_file, tmp_path):
    solver, _ = make_solver(write_file, tmp_path,
                            extra='test_net: "%s"\ntest_iter: 1\ntest_interval: 1000'
                            % write_file("test.prototxt", LINEAR_NET))
    assert len(solver.test_nets) == 1
    solver.step(1)
    np.testing.assert_array_equal(solver.test_nets[0].params["fc"][0].data,
                                  solver.net.params["fc"][0].data)
    solver.net.params["fc"][1].data[...] = 9
    np.testing.assert_array_equal(solver.test_nets[0].params["fc"][1].data, 9)


def test_solver_classes_force_their_type_and_get_solver_reads_it(write_file, tmp_path):
    for cls, name in [(caffe.NesterovSolver, "Nesterov"), (caffe.AdaGradSolver, "AdaGrad"),
                      (caffe.RMSPropSolver, "RMSProp"), (caffe.AdaDeltaSolver, "AdaDelta"),
                      (caffe.AdamSolver, "Adam"), (caffe.AdamWSolver, "AdamW")]:
        solver, _ = make_solver(write_file, tmp_path, cls=cls,
                                momentum=0 if name in ("AdaGrad", "RMSProp") else 0.9)
        assert solver.type == name and isinstance(solver, cls)
        loss_before = solver.net.forward()["loss"].item()
        solver.step(3)
        assert solver.net.forward()["loss"].item() < loss_before, name
    solver, _ = make_solver(write_file, tmp_path, extra='type: "Adam"', cls=caffe.get_solver)
    assert isinstance(solver, caffe.AdamSolver)
    assert solver.param.type == "Adam" and solver.param.base_lr == pytest.approx(0.1)


def test_solve_trains_to_max_iter_and_logs_like_caffe(write_file, tmp_path, capsys):
    solver, _ = make_solver(write_file, tmp_path)
    solver.solve()
    assert solver.iter == 4
    err = capsys.readouterr().err  # through sys.stderr: a notebook shows it
    assert "Iteration 0" in err and "Optimization Done." in err


def test_a_bad_solver_file_names_itself(write_file):
    path = write_file("bad_solver.prototxt", "base_lr: oops")
    with pytest.raises(caffe.Error, match="bad_solver.prototxt"):
        caffe.get_solver(path)
