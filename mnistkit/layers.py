"""forward()'s layers for one input, from the same run as its probabilities, and each unit's weights.

Course step: 前向传播 (forward propagation), looked inside. The board's
Inside panel (mnistkit.board.inside) and the exports' second signature,
`inside` (mnistkit.export), show what forward() computes between x and y:
y1 (the hidden layer, after ReLU) and y (the logits, before softmax) for
the 784-500-10 network; conv1, pool1, conv2, pool2, fc1 and y for LeNet-5.

The layers are declared once, in the network's declaration
(networks.Network.inside: (name, kind) pairs in forward()'s order, with
the names forward() gives them, kinds in KINDS); forward() keeps the
course's lines and names nothing for us. They are found in the graph
forward() builds (graph_layers): the outputs of the ReLUs (dense, conv)
and max-pools (pool) that lead to the logits, in the order forward() made
them, matched one to one with the declaration, and forward()'s return
(logits); each with the line of forward() that made it (the op's
traceback), which the page quotes. A declaration that does not fit the
graph, or none, is one line (DataError), and the network is served
without its inside.

Three forms run them, each an Inside: run(pictures) -> the probabilities
and every layer from one run; weights() -> each layer's incoming weights in
TensorFlow's layout (dense [in, out], conv [height, width, in, out]):
  GraphInside  a checkpoint's session (mnist_app.Predictor), or a
               SavedModel's, whose `inside` signature names the layers;
  LiteInside   a .tflite file: the signature's output tensors, read after
               the one invoke; its weights from the file's operators (no
               TensorFlow imported).
unit() gives one unit's incoming and outgoing weights, whatever the form.
"""
import dataclasses
import linecache
import os
import threading

import numpy as np

from .errors import DataError
from .records import IMAGE_SIZE

KINDS = {"dense": "Relu", "conv": "Relu", "pool": "MaxPool", "logits": None}  # a kind -> the op whose output it is
WEIGHTED = ("MatMul", "Conv2D")  # the ops whose second input is a layer's incoming weights
SIGNATURE_KEY = "inside"  # the exports' second signature: one output per layer, named as forward() names it
SCOPE = "inside"  # the exports' layer tensors: inside/y1, inside/y, ...
INPUT_SHAPE = (IMAGE_SIZE, IMAGE_SIZE)  # how x's 784 values are shown: the 28x28 picture


@dataclasses.dataclass(frozen=True)
class Layer:
    """One layer of forward(): `name` (forward()'s: y1), `kind` (KINDS), `shape` (one input's values: (500,),
    (28, 28, 32)), `line` (forward()'s source line that computes it) and `at` (where: mnist_forward.py:64)."""
    name: str
    kind: str
    shape: tuple
    line: str = ""
    at: str = ""

    def to_record(self):
        """The layer as JSON-ready dict, as an export's record holds it."""
        return {**dataclasses.asdict(self), "shape": list(self.shape)}

    @classmethod
    def from_record(cls, record):
        """The Layer of a to_record dict; KeyError or TypeError when it is not one."""
        return cls(record["name"], record["kind"], tuple(int(d) for d in record["shape"]), record.get("line", ""),
                   record.get("at", ""))


def declared(network):
    """network.inside as ((name, kind), ...), checked; DataError (one line) when it declares none or not so."""
    pairs = tuple(tuple(pair) for pair in (network.inside or ()))
    if not pairs:
        raise DataError(f"{network.name} declares no layers to show: give its NETWORK inside=((name, kind), ...) "
                        f"in forward()'s order (docs/inside.md)")
    wrong = [pair for pair in pairs if len(pair) != 2 or pair[1] not in KINDS]
    if wrong or pairs[-1][1] != "logits" or any(kind == "logits" for _, kind in pairs[:-1]):
        raise DataError(f"{network.name}: its inside {list(map(list, pairs))} is not (name, kind) pairs of kinds "
                        f"{', '.join(KINDS)}, ending with forward()'s logits")
    return pairs


def graph_layers(network, logits):
    """[(Layer, tensor, incoming weights tensor or None)] of forward()'s graph, in order, for `network`.

    logits: forward()'s return, float32 [None, 10], in a graph built by
    network's forward module. The hidden layers are the ReLU and max-pool
    outputs the logits depend on, in the order forward() made them, matched
    with declared(network). Raises DataError (one line) when they do not fit.
    Reads the graph only (it may be finalized).
    """
    pairs = declared(network)
    ancestors, stack = set(), [logits.op]
    while stack:
        op = stack.pop()
        if op not in ancestors:
            ancestors.add(op)
            stack.extend(t.op for t in op.inputs)
    found = [op for op in logits.graph.get_operations() if op in ancestors and op.type in ("Relu", "MaxPool")]
    if [op.type for op in found] != [KINDS[kind] for _, kind in pairs[:-1]]:
        said = ", ".join(f"{name} ({kind}: {KINDS[kind]})" for name, kind in pairs[:-1])
        raise DataError(f"{network.name}: its inside declares {said or 'no hidden layer'} before the logits, but its "
                        f"forward() builds {', '.join(op.type for op in found) or 'no ReLU or max-pool'}; declare one "
                        f"(name, kind) per ReLU (dense, conv) and max-pool (pool), in order")
    tensors = [op.outputs[0] for op in found] + [logits]
    layers = []
    for (name, kind), tensor, before in zip(pairs, tensors, [None] + tensors[:-1]):
        layer = Layer(name, kind, tuple(tensor.shape.as_list()[1:]), *source_line(tensor.op, network.forward))
        layers.append((layer, tensor, None if kind == "pool" else weights_tensor(tensor.op, before)))
    return layers


def source_line(op, module):
    """(line, "file.py:N") of the statement of forward() in `module` (its import name) that made `op`."""
    frames = [f for f in op.traceback if f.name == "forward" and os.path.basename(f.filename) == module + ".py"]
    if not frames:
        return "", ""
    frame = frames[-1]
    return linecache.getline(frame.filename, frame.lineno).strip(), f"{module}.py:{frame.lineno}"


def weights_tensor(op, before=None):
    """The incoming weights (the second input of the MatMul or Conv2D) that `op`'s output is computed from,
    looking no further back than the tensor `before` (the layer before); None when there is none."""
    seen, stack = set(), [op]
    while stack:
        op = stack.pop(0)
        if op.type in WEIGHTED:
            return op.inputs[1]
        seen.add(op)
        stack.extend(t.op for t in op.inputs if t is not before and t.op not in seen)
    return None


class Refused:
    """The inside of a model that cannot show one: `problem` is the one line that says why (DataError)."""
    layers = ()

    def __init__(self, problem):
        self.problem = str(problem)

    def run(self, pictures):
        raise DataError(self.problem)

    def weights(self):
        raise DataError(self.problem)


class GraphInside:
    """The layers of a tf.Session's graph: `layers` (Layer), run() and weights(); thread-safe as session.run is.

    images, probabilities: the input float32 [None, 784] and output [None,
    10] (tensors, or their names); tensors: each layer's, weights: each
    layer's incoming weights tensor or None (graph_layers' order).
    """
    problem = None

    def __init__(self, sess, images, probabilities, layers, tensors, weights):
        self.sess, self.images, self.probabilities = sess, images, probabilities
        self.layers, self.tensors, self.weight_tensors = list(layers), list(tensors), list(weights)
        self.lock, self.held = threading.Lock(), None

    @classmethod
    def of_forward(cls, network, sess, images, probabilities):
        """The GraphInside of a graph forward() built (probabilities = softmax of its logits), or Refused."""
        try:
            found = graph_layers(network, probabilities.op.inputs[0])
        except DataError as e:
            return Refused(e)
        return cls(sess, images, probabilities, *zip(*found))

    def run(self, pictures):
        """(probabilities float32 [n, 10], [float32 [n, *layer.shape] per layer]) of pictures float32 [n, 784] in
        [0, 1], from one session.run."""
        values = self.sess.run([self.probabilities, *self.tensors], feed_dict={self.images: pictures})
        return values[0], values[1:]

    def weights(self):
        """{layer name: float32 incoming weights, TensorFlow's layout}, of the layers that have them; read once."""
        with self.lock:
            if self.held is None:
                wanted = {layer.name: w for layer, w in zip(self.layers, self.weight_tensors) if w is not None}
                self.held = self.sess.run(wanted)
            return self.held


def saved_model_inside(sess, meta_graph, record, path, images, probabilities):
    """The GraphInside of a loaded SavedModel (its `inside` signature, the layers its export record lists; images
    and probabilities: its serving_default tensors' names), or Refused naming path when it was exported without."""
    signature = meta_graph.signature_def.get(SIGNATURE_KEY)
    try:
        layers = [Layer.from_record(entry) for entry in (record or {}).get("inside") or ()]
        tensors = [sess.graph.get_tensor_by_name(signature.outputs[layer.name].name) for layer in layers]
    except (KeyError, TypeError, ValueError, AttributeError):
        layers = ()
    if not layers:
        return Refused(f"{path}: exported without its layers (no `{SIGNATURE_KEY}` signature); export it again "
                       f"with mnist_export.py")
    sources = [t.op.inputs[0] if t.op.type == "Identity" else t for t in tensors]
    weights = [None if layer.kind == "pool" else weights_tensor(t.op, before)
               for layer, t, before in zip(layers, sources, [None] + sources[:-1])]
    return GraphInside(sess, images, probabilities, layers, tensors, weights)


class LiteInside:
    """The layers of a .tflite file (deployed.LiteRTModel `model`): its `inside` outputs, read after the invoke that
    gives the probabilities (model.outputs), dequantized; its weights from its operators, in TensorFlow's layout."""
    problem = None

    def __init__(self, model, layers, details):
        self.model, self.layers, self.details = model, list(layers), list(details)
        self.lock, self.held = threading.Lock(), None

    @classmethod
    def of(cls, model):
        """The LiteInside of a LiteRTModel, or Refused when its file holds no inside (or a record of it that is
        not one)."""
        by_name = {d["name"]: d for d in model.interpreter.get_output_details()}
        try:
            layers = [Layer.from_record(entry) for entry in (model.record or {}).get("inside") or ()]
            details = [by_name[f"{SCOPE}/{layer.name}"] for layer in layers]
        except (KeyError, TypeError, ValueError, AttributeError):
            layers = ()
        if not layers:
            return Refused(f"{model.source}: exported without its layers (no `{SIGNATURE_KEY}` signature); export "
                           f"it again with mnist_export.py")
        return cls(model, layers, details)

    def run(self, pictures):
        """As GraphInside.run: the probabilities and the layers of one invoke."""
        values = self.model.outputs(pictures, [self.model.output, *self.details])
        return values[0], [v.reshape((len(v),) + layer.shape) for v, layer in zip(values[1:], self.layers)]

    def weights(self):
        """As GraphInside.weights, from the weights of the operator that computes each layer (lite_weights), read
        while no other thread uses the interpreter."""
        with self.lock:
            if self.held is None:
                with self.model.lock:
                    self.held = lite_weights(self.model, self.layers, self.details)
            return self.held


def lite_weights(model, layers, details):
    """{layer name: float32 weights, TensorFlow's layout} of a .tflite file's layers: the second input of the
    FULLY_CONNECTED ([out, in] there) or CONV_2D ([out, height, width, in]) operator that outputs each layer,
    dequantized per channel in an int8 file."""
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        from tensorflow.lite.python import schema_py_generated as schema
    root = schema.Model.GetRootAsModel(model.content, 0)
    graph = root.Subgraphs(0)
    made_by = {}
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        made_by.update({op.Outputs(j): op for j in range(op.OutputsLength())})
    codes = [root.OperatorCodes(i) for i in range(root.OperatorCodesLength())]
    layout = {schema.BuiltinOperator.FULLY_CONNECTED: (1, 0), schema.BuiltinOperator.CONV_2D: (1, 2, 3, 0)}
    tensors = {t["index"]: t for t in model.interpreter.get_tensor_details()}
    held = {}
    for layer, detail in zip(layers, details):
        op = made_by.get(detail["index"])
        code = None if op is None else max(codes[op.OpcodeIndex()].BuiltinCode(),
                                           codes[op.OpcodeIndex()].DeprecatedBuiltinCode())
        if layer.kind == "pool" or code not in layout:
            continue
        index = op.Inputs(1)
        values = dequantized(model.interpreter.get_tensor(index), tensors[index]["quantization_parameters"])
        held[layer.name] = values.transpose(layout[code])
    return held


def dequantized(values, quantization):
    """A LiteRT tensor's values as float32: int8 ones through their (per-channel) scales and zero points."""
    if values.dtype == np.float32 or not len(quantization["scales"]):
        return values.astype(np.float32)
    shape = [1] * values.ndim
    shape[quantization["quantized_dimension"]] = -1
    scales = np.asarray(quantization["scales"], np.float32).reshape(shape)
    zero_points = np.asarray(quantization["zero_points"], np.float32).reshape(shape)
    return ((values.astype(np.float32) - zero_points) * scales).astype(np.float32)


def unit(inside, layer_name, index):
    """One unit's weights: {"incoming": float32 array, "outgoing": float32 array or None, "to": next layer's name}.

    incoming: what the unit computes from: a dense unit's weights shaped as
    the layer before it (x: INPUT_SHAPE, 28x28; a pool: [h, w, channels]),
    a conv unit's filter [height, width, in]. outgoing: its weights into
    the next layer that has weights (a dense one after maps: through the
    flattening, [h, w, out]; a conv: [height, width, out]); None for the
    logits. Raises ValueError (one line) for an unknown layer, a pool (no
    weights of its own) or a unit past the layer's; DataError as
    inside.weights() does.
    """
    names = [layer.name for layer in inside.layers]
    if layer_name not in names:
        raise ValueError(f"no layer {layer_name[:40]!r}; the layers are {', '.join(names)}")
    at = names.index(layer_name)
    layer = inside.layers[at]
    if layer.kind == "pool":
        raise ValueError(f"{layer.name} has no weights of its own (a max-pool takes the largest of each window): ask "
                         f"for the unit of {names[at - 1]} it pools")
    if not (isinstance(index, int) and 0 <= index < layer.shape[-1]):
        raise ValueError(f"{layer.name} has units 0 to {layer.shape[-1] - 1}, not {index}")
    weights = inside.weights()
    before = inside.layers[at - 1].shape if at else INPUT_SHAPE
    w = weights[layer.name]
    incoming = w[..., index] if layer.kind == "conv" else w[:, index].reshape(before)
    following = next((i for i in range(at + 1, len(names)) if inside.layers[i].kind != "pool"), None)
    if following is None:
        return {"incoming": incoming, "outgoing": None, "to": None}
    nxt = weights[names[following]]
    if inside.layers[following].kind == "conv":
        outgoing = nxt[:, :, index, :]
    elif layer.kind == "conv":  # maps flattened into a dense layer: this map's [h, w] rows
        flat = inside.layers[following - 1].shape
        outgoing = nxt.reshape(*flat, nxt.shape[-1])[:, :, index, :]
    else:
        outgoing = nxt[index]
    return {"incoming": incoming, "outgoing": outgoing, "to": names[following]}
