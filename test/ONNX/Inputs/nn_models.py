"""Hand-built single-op models of ONNX's NN family (nn-ops.test) with
PyTorch's results: python3 nn_models.py DIR writes, for each case NAME,
DIR/NAME.onnx, its inputs DIR/NAME.in<K>.npy and PyTorch's outputs
DIR/NAME.out<K>.npy (torch.nn.functional, nn.LSTM and nn.GRU on the same
inputs; asymmetric pads as an explicit F.pad first). It also writes DIR/train_sce.onnx (a 1-D
convolution with asymmetric pads, ReLU, a padded 1-D MaxPool and a
weighted SoftmaxCrossEntropyLoss over [N, C, L] with an ignore_index) with
DIR/train_sce.x.npy, DIR/train_sce.labels.npy, DIR/train_sce.loss.npy and
DIR/train_sce.w1.npy (the convolution's weight after one SGD step at lr 1
on the loss, by PyTorch), and DIR/train_seq.onnx (a bidirectional LSTM and
a dilated ceil-mode MaxPool over time) with DIR/train_seq.x.npy and
DIR/train_seq.{w1,r1}.npy (the LSTM's W and R after one SGD step at lr 1 on mean(y *
y), by PyTorch's nn.LSTM), and DIR/train_up.onnx (ConvTranspose,
Resize, LayerNormalization: train_up below).

python3 nn_models.py run AMPC DIR NAME RTOL runs `AMPC run DIR/NAME.onnx`
on the inputs and fails unless every output is within RTOL of the largest
magnitude of PyTorch's (printing the error)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if sys.argv[1:2] != ["run"]:  # `run` needs no torch (quicker to start)
    import torch
    import torch.nn.functional as F

FLOAT, INT64, INT32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32
rng = np.random.default_rng(7)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(out, name, op, inputs, outputs, attrs, opset=17, inits=()):
    """One `op` node reading inputs [(name, array)], writing outputs
    [(name, array)]; `inits` are initializers [(name, array)]."""
    ttype = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64,
             np.dtype(np.int32): INT32, np.dtype(bool): TensorProto.BOOL}
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in inits],
                            [n for n, _ in outputs], name=name, **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, ttype[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, ttype[np.asarray(a).dtype], np.asarray(a).shape)
         for n, a in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/{name}.onnx")
    for k, (_, a) in enumerate(inputs):
        np.save(f"{out}/{name}.in{k}.npy", a)
    for k, (_, a) in enumerate(outputs):
        np.save(f"{out}/{name}.out{k}.npy", np.asarray(a, dtype=np.asarray(a).dtype))


def t(a):
    return torch.from_numpy(a)


def losses(out):
    # Weighted SoftmaxCrossEntropyLoss over [N, C, d1, d2] with an
    # ignore_index, and its log_prob output.
    x, y, w = randn(3, 5, 2, 4), rng.integers(0, 5, (3, 2, 4)), rng.random(5).astype(np.float32)
    loss = F.cross_entropy(t(x), t(y), weight=t(w), ignore_index=2)
    save(out, "sce", "SoftmaxCrossEntropyLoss", [("x", x), ("y", y), ("w", w)],
         [("loss", loss.numpy()), ("logp", F.log_softmax(t(x), 1).numpy())],
         {"ignore_index": 2, "reduction": "mean"}, opset=13)
    # NegativeLogLikelihoodLoss, no weights, per element; and summed.
    x, y = randn(4, 6), rng.integers(0, 6, (4,))
    save(out, "nll_none", "NegativeLogLikelihoodLoss", [("x", x), ("y", y)],
         [("loss", F.nll_loss(t(x), t(y), reduction="none").numpy())],
         {"reduction": "none"}, opset=13)
    x, y = randn(2, 3, 5), rng.integers(0, 3, (2, 5))
    save(out, "nll_sum", "NegativeLogLikelihoodLoss", [("x", x), ("y", y)],
         [("loss", F.nll_loss(t(x), t(y), reduction="sum").numpy())],
         {"reduction": "sum"}, opset=13)


def norms(out):
    # LayerNormalization over dims 1.. with its Mean and InvStdDev.
    x, s, b = randn(2, 3, 4), randn(3, 4), randn(3, 4)
    xt = t(x).double()
    mean = xt.mean(dim=(1, 2), keepdim=True)
    var = ((xt - mean) ** 2).mean(dim=(1, 2), keepdim=True)
    y = F.layer_norm(t(x), (3, 4), t(s), t(b), eps=1e-3)
    save(out, "layernorm", "LayerNormalization", [("x", x), ("s", s), ("b", b)],
         [("y", y.numpy()), ("mean", mean.float().numpy()),
          ("inv", (1 / torch.sqrt(var + 1e-3)).float().numpy())],
         {"axis": 1, "epsilon": 1e-3})
    # MeanVarianceNormalization over the default axes [0, 2, 3].
    x = randn(3, 2, 4, 5)
    xt = t(x).double()
    m = xt.mean(dim=(0, 2, 3), keepdim=True)
    sd = torch.sqrt(((xt - m) ** 2).mean(dim=(0, 2, 3), keepdim=True))
    save(out, "mvn", "MeanVarianceNormalization", [("x", x)],
         [("y", ((xt - m) / (sd + 1e-9)).float().numpy())], {}, opset=13)
    # An inference Dropout (no training_mode) whose ratio is a graph input
    # and whose mask is an output: the identity and an all-true mask.
    x = randn(3, 4)
    save(out, "dropout_mask", "Dropout", [("x", x), ("r", np.array(0.3, np.float32))],
         [("y", x), ("mask", np.ones((3, 4), bool))], {}, opset=13)
    # Hardmax along axis 0, with a tie (the first maximum wins).
    x = randn(4, 5)
    x[3, 2] = x[1, 2] = x[:, 2].max() + 1
    y = F.one_hot(t(x).argmax(0), 4).T.float()
    save(out, "hardmax", "Hardmax", [("x", x)], [("y", y.numpy())], {"axis": 0}, opset=13)


def pools(out):
    # 3-D max pool: strides, dilation, pads and ceil mode.
    x = randn(1, 2, 6, 7, 8)
    y = F.max_pool3d(t(x), (2, 3, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), ceil_mode=True)
    save(out, "maxpool3d", "MaxPool", [("x", x)], [("y", y.numpy())],
         {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 0, 1],
          "dilations": [1, 2, 1], "ceil_mode": 1}, opset=12)
    # MaxPool's Indices output (flat over N, C, H, W), pads and strides.
    x = randn(2, 3, 7, 6)
    y, i = F.max_pool2d(t(x), 3, 2, 1, return_indices=True)
    plane = (np.arange(6).reshape(2, 3, 1, 1) * 7 * 6).astype(np.int64)
    save(out, "maxpool_indices", "MaxPool", [("x", x)],
         [("y", y.numpy()), ("i", i.numpy() + plane)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=12)
    # LRN over 5 channels of 7.
    x = randn(2, 7, 3, 4)
    y = F.local_response_norm(t(x), 5, alpha=0.01, beta=0.6, k=1.5)
    save(out, "lrn", "LRN", [("x", x)], [("y", y.numpy())],
         {"size": 5, "alpha": 0.01, "beta": 0.6, "bias": 1.5}, opset=13)
    # 1-D average pool, ceil mode, count_include_pad 0.
    x = randn(2, 3, 10)
    y = F.avg_pool1d(t(x), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    save(out, "avgpool1d", "AveragePool", [("x", x)], [("y", y.numpy())],
         {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1}, opset=11)
    # 2-D average pool with asymmetric pads, counting them.
    x = randn(1, 2, 5, 6)
    y = F.avg_pool2d(F.pad(t(x), (0, 2, 1, 0)), (2, 3), (1, 2))
    save(out, "avgpool_asym", "AveragePool", [("x", x)], [("y", y.numpy())],
         {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [1, 0, 0, 2],
          "count_include_pad": 1}, opset=11)


def convs(out):
    # 1-D convolution, SAME_UPPER with a stride (pads 1 before, 2 after).
    x, w, b = randn(2, 4, 9), randn(6, 2, 4), randn(6)
    y = F.conv1d(F.pad(t(x), (1, 2)), t(w), t(b), stride=2, groups=2)
    save(out, "conv1d_same", "Conv", [("x", x), ("w", w), ("b", b)], [("y", y.numpy())],
         {"auto_pad": "SAME_UPPER", "strides": [2], "group": 2}, opset=11)
    # 3-D convolution, dilation and asymmetric pads.
    x, w = randn(1, 2, 5, 6, 5), randn(3, 2, 2, 3, 2)
    y = F.conv3d(F.pad(t(x), (0, 1, 2, 0, 1, 1)), t(w), dilation=(1, 2, 1))
    save(out, "conv3d_pads", "Conv", [("x", x), ("w", w)], [("y", y.numpy())],
         {"pads": [1, 2, 0, 1, 0, 1], "dilations": [1, 2, 1]}, opset=11)
    # 1-D transposed convolution to an output_shape (output padding 1).
    x, w, b = randn(2, 3, 5), randn(3, 2, 3), randn(2)
    y = F.conv_transpose1d(t(x), t(w), t(b), stride=2, output_padding=1)
    save(out, "convt1d_shape", "ConvTranspose", [("x", x), ("w", w), ("b", b)],
         [("y", y.numpy())], {"strides": [2], "output_shape": [12]}, opset=11)
    # 3-D transposed convolution with asymmetric pads: the full output cut.
    x, w = randn(1, 2, 3, 4, 3), randn(2, 2, 3, 2, 2)
    full = F.conv_transpose3d(t(x), t(w), stride=(2, 1, 2))
    y = full[:, :, 1:full.shape[2] - 0, 0:full.shape[3] - 1, 1:full.shape[4] - 1]
    save(out, "convt3d_pads", "ConvTranspose", [("x", x), ("w", w)], [("y", y.numpy())],
         {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}, opset=11)


def resizes(out):
    x = randn(2, 3, 5, 6)
    empty = np.zeros(0, np.float32)
    # Bilinear with align_corners, to sizes.
    y = F.interpolate(t(x), size=(7, 4), mode="bilinear", align_corners=True)
    save(out, "resize_linear", "Resize", [("x", x)], [("y", y.numpy())],
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, opset=13,
         inits=[("roi", empty), ("scales", empty), ("sizes", np.array([2, 3, 7, 4], np.int64))])
    # Bicubic (A = -0.75, half_pixel), by a factor 2: PyTorch's bicubic.
    y = F.interpolate(t(x), scale_factor=2.0, mode="bicubic", align_corners=False)
    save(out, "resize_cubic", "Resize", [("x", x)], [("y", y.numpy())],
         {"mode": "cubic"}, opset=13,
         inits=[("roi", empty), ("scales", np.array([1, 1, 2, 2], np.float32))])
    # Nearest, asymmetric with floor, by 0.6 (PyTorch's "nearest").
    y = F.interpolate(t(x), size=(3, 4), mode="nearest")
    save(out, "resize_nearest", "Resize", [("x", x)], [("y", y.numpy())],
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, opset=13,
         inits=[("roi", empty), ("scales", empty), ("sizes", np.array([2, 3, 3, 4], np.int64))])


def recurrent(out):
    """Bidirectional LSTM with initial states and GRU (linear_before_reset
    1, PyTorch's) against torch.nn.LSTM and torch.nn.GRU; ONNX orders the
    gates i, o, f, c (LSTM) and z, r, h (GRU), PyTorch i, f, g, o and r, z,
    n."""
    seq, batch, inp, hid = 5, 3, 4, 6
    x = randn(seq, batch, inp)
    lstm = torch.nn.LSTM(inp, hid, bidirectional=True)
    h0, c0 = randn(2, batch, hid), randn(2, batch, hid)
    with torch.no_grad():
        y, (yh, yc) = lstm(t(x), (t(h0), t(c0)))
    sfx = ["", "_reverse"]
    p = {k: v.detach().numpy() for k, v in lstm.named_parameters()}
    w = np.stack([lstm_order(p["weight_ih_l0" + s]) for s in sfx])
    r = np.stack([lstm_order(p["weight_hh_l0" + s]) for s in sfx])
    b = np.stack([np.concatenate([lstm_order(p["bias_ih_l0" + s]),
                                  lstm_order(p["bias_hh_l0" + s])]) for s in sfx])
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0"], ["y", "yh", "yc"],
                            name="lstm", hidden_size=hid, direction="bidirectional")
    graph = helper.make_graph(
        [node], "lstm",
        [helper.make_tensor_value_info(n, FLOAT, a.shape)
         for n, a in [("x", x), ("w", w), ("r", r), ("b", b), ("h0", h0), ("c0", c0)]],
        [helper.make_tensor_value_info("y", FLOAT, [seq, 2, batch, hid]),
         helper.make_tensor_value_info("yh", FLOAT, [2, batch, hid]),
         helper.make_tensor_value_info("yc", FLOAT, [2, batch, hid])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/lstm.onnx")
    for k, a in enumerate([x, w, r, b, h0, c0]):
        np.save(f"{out}/lstm.in{k}.npy", a)
    # Y: [seq, batch, 2 * hid] -> [seq, 2, batch, hid].
    np.save(f"{out}/lstm.out0.npy",
            y.numpy().reshape(seq, batch, 2, hid).transpose(0, 2, 1, 3).copy())
    np.save(f"{out}/lstm.out1.npy", yh.numpy())
    np.save(f"{out}/lstm.out2.npy", yc.numpy())

    gru = torch.nn.GRU(inp, hid)
    with torch.no_grad():
        y, yh = gru(t(x))

    def gru_order(m):  # PyTorch r, z, n -> ONNX z, r, h
        r_, z, n = np.split(m, 3)
        return np.concatenate([z, r_, n])
    p = {k: v.detach().numpy() for k, v in gru.named_parameters()}
    w, r = gru_order(p["weight_ih_l0"])[None], gru_order(p["weight_hh_l0"])[None]
    b = np.concatenate([gru_order(p["bias_ih_l0"]), gru_order(p["bias_hh_l0"])])[None]
    save(out, "gru", "GRU", [("x", x), ("w", w), ("r", r), ("b", b)],
         [("y", y.numpy()[:, None]), ("yh", yh.numpy())],
         {"hidden_size": hid, "linear_before_reset": 1}, opset=14)


def train_sce(out):
    """Conv (1-D, pads [2, 0]) -> Relu -> MaxPool (k 2, s 2, pads [0, 1])
    -> SoftmaxCrossEntropyLoss (class weights, ignore_index 0, mean)."""
    x = randn(4, 3, 8)
    w = (randn(5, 3, 3) * 0.5).astype(np.float32)
    labels = rng.integers(0, 5, (4, 4)).astype(np.int32)
    cw = np.array([1.0, 0.5, 2.0, 1.5, 0.75], np.float32)
    nodes = [
        helper.make_node("Constant", [], ["cw"], name="cw",
                         value=numpy_helper.from_array(cw, "cw")),
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[2, 0]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2],
                         strides=[2], pads=[0, 1]),
        helper.make_node("SoftmaxCrossEntropyLoss", ["p", "labels", "cw"], ["loss"],
                         name="sce", ignore_index=0, reduction="mean"),
    ]
    graph = helper.make_graph(
        nodes, "train_sce",
        [helper.make_tensor_value_info("x", FLOAT, [4, 3, 8]),
         helper.make_tensor_value_info("labels", INT32, [4, 4])],
        [helper.make_tensor_value_info("loss", FLOAT, [])],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/train_sce.onnx")
    wt = t(w).clone().requires_grad_()
    c = F.conv1d(F.pad(t(x), (2, 0)), wt)
    p = F.max_pool1d(F.pad(F.relu(c), (0, 1), value=float("-inf")), 2, 2)
    loss = F.cross_entropy(p, t(labels).long(), weight=t(cw), ignore_index=0)
    loss.backward()
    np.save(f"{out}/train_sce.x.npy", x)
    np.save(f"{out}/train_sce.labels.npy", labels)
    np.save(f"{out}/train_sce.loss.npy", loss.detach().numpy())
    np.save(f"{out}/train_sce.w1.npy", (wt - wt.grad).detach().numpy())


def lstm_order(m):
    """PyTorch's LSTM gates i, f, g, o in ONNX's order i, o, f, c."""
    i, f, g, o = np.split(m, 4, axis=-2 if m.ndim > 1 else 0)
    return np.concatenate([i, o, f, g], axis=-2 if m.ndim > 1 else 0)


def train_seq(out):
    """A bidirectional LSTM (W, R, B initializers) then a MaxPool over time
    with dilation 2 and a ceil-mode window, exported by hand; with
    DIR/train_seq.w1.npy, the ONNX W after one SGD step at lr 1 on
    mean(y * y) by PyTorch (nn.LSTM and F.max_pool1d on the same
    weights)."""
    seq, batch, inp, hid = 6, 2, 3, 4
    x = randn(seq, batch, inp)
    lstm = torch.nn.LSTM(inp, hid, bidirectional=True)
    sfx = ["", "_reverse"]
    p = {k: v.detach().numpy() for k, v in lstm.named_parameters()}
    w = np.stack([lstm_order(p["weight_ih_l0" + s]) for s in sfx])
    r = np.stack([lstm_order(p["weight_hh_l0" + s]) for s in sfx])
    b = np.stack([np.concatenate([lstm_order(p["bias_ih_l0" + s]),
                                  lstm_order(p["bias_hh_l0" + s])]) for s in sfx])
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B"], ["y4"], name="lstm",
                         hidden_size=hid, direction="bidirectional"),
        # Y [seq, 2, batch, hid] -> [batch, 2 * hid, seq] for a pool over time.
        helper.make_node("Transpose", ["y4"], ["yt"], name="tr", perm=[2, 1, 3, 0]),
        helper.make_node("Constant", [], ["shape"], name="shape",
                         value=numpy_helper.from_array(np.array([batch, 2 * hid, seq]),
                                                       "shape")),
        helper.make_node("Reshape", ["yt", "shape"], ["y3"], name="reshape"),
        helper.make_node("MaxPool", ["y3"], ["y"], name="pool", kernel_shape=[2],
                         strides=[2], dilations=[2], ceil_mode=1),
    ]
    graph = helper.make_graph(
        nodes, "train_seq", [helper.make_tensor_value_info("x", FLOAT, [seq, batch, inp])],
        [helper.make_tensor_value_info("y", FLOAT, [batch, 2 * hid, 3])],
        initializer=[numpy_helper.from_array(a, n) for n, a in [("W", w), ("R", r), ("B", b)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/train_seq.onnx")
    y, _ = lstm(t(x))
    yt = y.reshape(seq, batch, 2, hid).permute(1, 2, 3, 0).reshape(batch, 2 * hid, seq)
    pooled = F.max_pool1d(yt, 2, 2, dilation=2, ceil_mode=True)
    (pooled * pooled).mean().backward()
    g = {k: v.grad.numpy() for k, v in lstm.named_parameters()}
    dw = np.stack([lstm_order(g["weight_ih_l0" + s]) for s in sfx])
    dr = np.stack([lstm_order(g["weight_hh_l0" + s]) for s in sfx])
    np.save(f"{out}/train_seq.x.npy", x)
    np.save(f"{out}/train_seq.w1.npy", w - dw)
    np.save(f"{out}/train_seq.r1.npy", r - dr)


def train_up(out):
    """ConvTranspose 1-D with asymmetric pads (its full output cut), a linear
    Resize (align_corners, to a size) and a LayerNormalization (scale and
    bias initializers); with DIR/train_up.x.npy and DIR/train_up.{w1,s1}.npy,
    the transposed convolution's weight and the norm's scale after one SGD
    step at lr 1 on mean(y * y), by PyTorch."""
    x = randn(2, 3, 5)
    w = (randn(3, 4, 3) * 0.5).astype(np.float32)
    scale, bias = randn(9), randn(9)
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w"], ["c"], name="convt", strides=[2],
                         pads=[1, 0]),
        helper.make_node("Resize", ["c", "roi", "", "sizes"], ["r"], name="resize",
                         mode="linear", coordinate_transformation_mode="align_corners"),
        helper.make_node("LayerNormalization", ["r", "scale", "bias"], ["y"], name="ln",
                         axis=-1),
    ]
    inits = [("w", w), ("scale", scale), ("bias", bias), ("roi", np.zeros(0, np.float32)),
             ("sizes", np.array([2, 4, 9], np.int64))]
    graph = helper.make_graph(
        nodes, "train_up", [helper.make_tensor_value_info("x", FLOAT, [2, 3, 5])],
        [helper.make_tensor_value_info("y", FLOAT, [2, 4, 9])],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, f"{out}/train_up.onnx")
    wt, st = t(w).clone().requires_grad_(), t(scale).clone().requires_grad_()
    full = F.conv_transpose1d(t(x), wt, stride=2)  # length 11; pads [1, 0]
    r = F.interpolate(full[:, :, 1:], size=9, mode="linear", align_corners=True)
    y = F.layer_norm(r, (9,), st, t(bias))
    (y * y).mean().backward()
    np.save(f"{out}/train_up.x.npy", x)
    np.save(f"{out}/train_up.w1.npy", (wt - wt.grad).detach().numpy())
    np.save(f"{out}/train_up.s1.npy", (st - st.grad).detach().numpy())


def bad(out):
    """Models the NN converters refuse (DIR/bad_NAME.onnx)."""
    def model(name, node, inputs, inits=(), opset=17):
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info(n, ty, s) for n, ty, s in inputs],
            [helper.make_tensor_value_info("y", FLOAT, [1])],
            initializer=[numpy_helper.from_array(a, n) for n, a in inits])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
                  f"{out}/bad_{name}.onnx")
    model("pool_big", helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[9]),
          [("x", FLOAT, [1, 2, 5])])
    model("loss_shape", helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"],
                                         name="nll"),
          [("x", FLOAT, [3, 4]), ("t", INT64, [4])])
    model("loss_weight", helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y"],
                                          name="sce"),
          [("x", FLOAT, [3, 4]), ("t", INT64, [3]), ("w", FLOAT, [5])])
    model("resize_zero", helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="rs",
                                          mode="linear"),
          [("x", FLOAT, [1, 1, 4, 4])],
          inits=[("roi", np.zeros(0, np.float32)), ("scales", np.array([1, 1, 0, 2], np.float32))])
    model("lstm_hidden", helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm",
                                          hidden_size=4),
          [("x", FLOAT, [2, 1, 3]), ("w", FLOAT, [1, 12, 3]), ("r", FLOAT, [1, 12, 3])])
    model("rnn_clip", helper.make_node("RNN", ["x", "w", "r"], ["y"], name="rnn",
                                       hidden_size=3, clip=1.0),
          [("x", FLOAT, [2, 1, 3]), ("w", FLOAT, [1, 3, 3]), ("r", FLOAT, [1, 3, 3])])
    model("conv_rank", helper.make_node("Conv", ["x", "w"], ["y"], name="conv"),
          [("x", FLOAT, [1, 3, 2, 2, 2, 2])], inits=[("w", np.zeros((1, 3, 1, 1, 1, 1), np.float32))])


def main(out):
    torch.manual_seed(0)
    losses(out)
    norms(out)
    pools(out)
    convs(out)
    resizes(out)
    recurrent(out)
    train_sce(out)
    train_seq(out)
    train_up(out)
    bad(out)


def run(ampc, out, name, rtol):
    import subprocess
    model = onnx.load(f"{out}/{name}.onnx")
    args = [ampc, "run", f"{out}/{name}.onnx", "--outputs-out", f"{out}/{name}.got"]
    for k, i in enumerate(model.graph.input):
        args += ["--input", f"{i.name}={out}/{name}.in{k}.npy"]
    subprocess.run(args, check=True)
    for k, o in enumerate(model.graph.output):
        ref = np.load(f"{out}/{name}.out{k}.npy").astype(np.float64)
        got = np.load(f"{out}/{name}.got/output_{k}.npy").astype(np.float64)
        if got.shape != ref.shape:
            raise SystemExit(f"{name} {o.name}: shape {got.shape} != {ref.shape}")
        err, scale = float(np.max(np.abs(got - ref))), float(np.max(np.abs(ref)))
        print(f"{name} {o.name}: max abs error {err:.3g}, largest |ref| {scale:.3g}")
        if err > rtol * scale:
            raise SystemExit(f"{name} {o.name}: error {err:.3g} exceeds {rtol} * {scale:.3g}")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        main(sys.argv[1])
