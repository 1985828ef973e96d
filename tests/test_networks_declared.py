"""A network's declaration (networks.Network's variables and split) checked against the graph its forward builds.

The graphs are built in this process, for training (mnist_backward.build_graph,
on one machine and as a cluster's worker that splits variables) and for
evaluation (mnist_test.evaluate); nothing is trained.
"""
import dataclasses
import subprocess
import sys
import types

import pytest

import mnist_backward
import mnist_forward
import mnist_test
import mnistkit.distributed
import mnistkit.networks
import mnistkit.records
from conftest import ROOT, wait_limit
from mnistkit.errors import DataError
from tf_compat import tf

GRAPH = "its variables: b1, b2, w1, w2"


def misdeclared(**fields):
    """A forward module like mnist_forward whose NETWORK has these fields instead (e.g. split=("W1",))."""
    return types.SimpleNamespace(NETWORK=dataclasses.replace(mnist_forward.NETWORK, **fields),
                                 INPUT_NODE=mnist_forward.INPUT_NODE, OUTPUT_NODE=mnist_forward.OUTPUT_NODE,
                                 forward=mnist_forward.forward)


def training_graph(net, data_dir, cluster=None):
    settings = mnist_backward.settings_for(net, steps=1, data_dir=data_dir, model_dir="model", pipeline="tfdata")
    data = mnistkit.records.training_data(data_dir)
    with tf.Graph().as_default():
        if cluster is None:
            return mnist_backward.build_graph(settings, data)
        return mnistkit.distributed.build_worker_graph(cluster, 0, settings, data, mnist_backward.build_graph,
                                                       sync_replicas=False)


@pytest.mark.parametrize("fields, named", [
    (dict(split=("W1",)), "names split 'W1'"),
    (dict(variables=("w1", "b1", "w2", "b_2")), "names variables 'b_2'"),
    (dict(variables=("w1", "b1", "w2", "b2", "w3"), split=("w0",)), "names variables 'w3', split 'w0'"),
], ids=["split", "variable", "both"])
def test_a_name_the_graph_lacks_is_one_error_when_training_starts(sample_workdir, fields, named):
    with pytest.raises(DataError) as raised:
        training_graph(misdeclared(**fields), str(sample_workdir / "data"))
    assert str(raised.value) == (f"mnist_forward.NETWORK {named}, which the graph of mnist_forward.forward lacks "
                                 f"({GRAPH}); correct the declaration")


def test_a_cluster_that_splits_checks_the_declaration_too(sample_workdir):
    cluster = tf.train.ClusterSpec({"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]})
    data = str(sample_workdir / "data")
    graph, _ = training_graph(mnist_forward, data, cluster)  # w1 split in two parts: still the declared w1
    assert graph.loss is not None
    with pytest.raises(DataError, match=rf"^mnist_forward.NETWORK names split 'W1', .* \({GRAPH}\)"):
        training_graph(misdeclared(split=("W1",)), data, cluster)


def test_the_evaluator_checks_the_declaration_before_reading_a_checkpoint(tmp_path):
    with pytest.raises(DataError, match=rf"^mnist_forward.NETWORK names variables 'b_2', .* \({GRAPH}\)"):
        mnist_test.evaluate(str(tmp_path / "no_model" / "mnist_model-1"), str(tmp_path / "none.tfrecords"),
                            net=misdeclared(variables=("w1", "b1", "w2", "b_2")))


# Imports the trainers as a script does, and names each function of mnistkit/networks.py that runs meanwhile.
IMPORT_TRACED = """
import os, sys
ran = set()
def profile(frame, event, arg):
    if event == "call" and os.path.basename(frame.f_code.co_filename) == "networks.py":
        ran.add(frame.f_code.co_name)
sys.setprofile(profile)
import mnist_backward, mnist_lenet5_backward
sys.setprofile(None)
print(sorted(ran - {"<module>", "Network"}))  # the module's own body and its class body are declarations
"""


@pytest.mark.quick
def test_declaring_the_course_networks_runs_no_function_of_networks_py():
    result = subprocess.run([sys.executable, "-c", IMPORT_TRACED], cwd=ROOT, capture_output=True, text=True,
                            timeout=wait_limit(300))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert (mnist_forward.NETWORK.name, mnist_forward.NETWORK.layers) == ("the 784-500-10 network", (784, 500, 10))
    assert mnist_forward.NETWORK == mnistkit.networks.MLP  # the course's declaration, at the course's sizes
