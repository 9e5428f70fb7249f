#!/usr/bin/env python3
"""Generate ResNet-101 and Inception-v3 for the model zoo (scenarios/models/*.json).

Standard library only; same conventions and Model class as scripts/gen_models.py (FLOPs: a multiply-add
is 2; BatchNorm 5 per output element; pooling 1 per window element per output; ReLU, concatenation and
dropout not counted; the first conv computes only its weight gradient).  Run:  python3 scripts/gen_cnn_models.py
The parameter totals are asserted against the published torchvision figures before anything is written.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import (NORM_FLOPS_PER_ELEMENT, OUT_DIR, Model, close, conv_out,  # noqa: E402
                        resnet50_body)


def resnet101():
    # Source: He et al. 2016, "Deep Residual Learning for Image Recognition", arXiv:1512.03385, Table 1
    # (101-layer: bottleneck blocks [3, 4, 23, 3]); torchvision.models.resnet101 (IMAGENET1K_V1/V2
    # weights: 44 549 160 parameters, 7.80 "GFLOPS" = G multiply-adds at 224x224, v1.5 stride placement).
    m = Model(
        "resnet101",
        "ResNet-101 v1.5 (torchvision: stride in the 3x3 conv), ImageNet 1000 classes, 224x224 input. "
        "One layer per conv / BatchNorm / fc module (plus max pool and average pool) in forward order. "
        "BatchNorm FLOPs are an approximation (5 per output element); ReLU and residual additions are not counted.",
        "He et al. 2016, arXiv:1512.03385, Table 1 (101-layer); torchvision.models.resnet101 / "
        "torchvision/models/resnet.py (44 549 160 parameters, 314 tensors; 7.80 G multiply-adds at 224x224)",
        "image 224x224",
    )
    outs = resnet50_body(m, "", 224, 224, bn_params=True, bn_flops_per_element=NORM_FLOPS_PER_ELEMENT,
                         first_layer_no_input_grad=True, blocks=(3, 4, 23, 3))
    h, w, c = outs[-1]
    m.layer("avgpool", c * h * w)
    m.layer("fc", 2 * 2048 * 1000, [("fc.weight", 2048 * 1000), ("fc.bias", 1000)])
    assert m.total_parameters() == 44549160, m.total_parameters()
    # ResNet-50's 161 tensors + 17 more bottleneck blocks x (3 conv weights + 3 BN weight/bias pairs).
    assert m.parameter_tensors() == 161 + 17 * 9 == 314, m.parameter_tensors()
    gemm = sum(l["forward_flops_per_sample"] for l in m.layers
               if l["name"].endswith(("conv1", "conv2", "conv3", "downsample.0")) or l["name"] == "fc")
    assert close(gemm / 2, 7.80e9, 0.01), gemm / 2
    return m


def inception_v3():
    # Source: Szegedy et al. 2016, "Rethinking the Inception Architecture for Computer Vision",
    # arXiv:1512.00567, Table 1 and figs. 5-7 (299x299 input, auxiliary classifier on the 17x17 grid);
    # torchvision.models.inception_v3 / torchvision/models/inception.py (Inception3 with aux_logits=True:
    # 27 161 264 parameters; 5.71 "GFLOPS" = G multiply-adds at 299x299 without the auxiliary head).
    # BasicConv2d = Conv2d(bias=False) + BatchNorm2d (weight, bias) + ReLU.  Module order and names as
    # Inception3.__init__ / _forward; each branch's convs in the order the forward runs them.  The
    # AuxLogits head runs in training right after Mixed_6e (before Mixed_7a) and is trained, so its
    # gradients are communicated: it is part of this model (23 834 568 parameters without it).
    m = Model(
        "inception-v3",
        "Inception-v3 (torchvision Inception3, aux_logits=True as trained), ImageNet 1000 classes, 299x299 input. "
        "One layer per conv / BatchNorm / pool / fc module in forward order; the auxiliary classifier after "
        "Mixed_6e is included (training). BatchNorm FLOPs approximate (5 per output element); pooling 1 FLOP per "
        "window element; ReLU and concatenation not counted.",
        "Szegedy et al. 2016, arXiv:1512.00567, Table 1; torchvision.models.inception_v3 / "
        "torchvision/models/inception.py (27 161 264 parameters with AuxLogits, 23 834 568 without; "
        "5.71 G multiply-adds at 299x299)",
        "image 299x299",
    )
    first = [True]

    def conv(name, cin, cout, h, w, kh, kw, stride=1, ph=0, pw=0):
        """BasicConv2d: returns the output size."""
        ho, wo = conv_out(h, kh, stride, ph), conv_out(w, kw, stride, pw)
        fwd = 2 * kh * kw * cin * cout * ho * wo
        m.layer(name + ".conv", fwd, [(name + ".conv.weight", kh * kw * cin * cout)],
                backward=fwd if first[0] else None)  # the image needs no gradient
        first[0] = False
        m.layer(name + ".bn", NORM_FLOPS_PER_ELEMENT * cout * ho * wo,
                [(name + ".bn.weight", cout), (name + ".bn.bias", cout)])
        return ho, wo

    def pool(name, c, h, w, k, stride, pad=0):
        ho, wo = conv_out(h, k, stride, pad), conv_out(w, k, stride, pad)
        m.layer(name, k * k * c * ho * wo)
        return ho, wo

    h = w = 299
    h, w = conv("Conv2d_1a_3x3", 3, 32, h, w, 3, 3, stride=2)
    h, w = conv("Conv2d_2a_3x3", 32, 32, h, w, 3, 3)
    h, w = conv("Conv2d_2b_3x3", 32, 64, h, w, 3, 3, ph=1, pw=1)
    h, w = pool("maxpool1", 64, h, w, 3, 2)
    h, w = conv("Conv2d_3b_1x1", 64, 80, h, w, 1, 1)
    h, w = conv("Conv2d_4a_3x3", 80, 192, h, w, 3, 3)
    h, w = pool("maxpool2", 192, h, w, 3, 2)
    assert (h, w) == (35, 35)

    def inception_a(p, cin, pool_features):
        conv(p + "branch1x1", cin, 64, h, w, 1, 1)
        conv(p + "branch5x5_1", cin, 48, h, w, 1, 1)
        conv(p + "branch5x5_2", 48, 64, h, w, 5, 5, ph=2, pw=2)
        conv(p + "branch3x3dbl_1", cin, 64, h, w, 1, 1)
        conv(p + "branch3x3dbl_2", 64, 96, h, w, 3, 3, ph=1, pw=1)
        conv(p + "branch3x3dbl_3", 96, 96, h, w, 3, 3, ph=1, pw=1)
        pool(p + "avg_pool", cin, h, w, 3, 1, 1)
        conv(p + "branch_pool", cin, pool_features, h, w, 1, 1)
        return 64 + 64 + 96 + pool_features

    c = inception_a("Mixed_5b.", 192, 32)
    c = inception_a("Mixed_5c.", c, 64)
    c = inception_a("Mixed_5d.", c, 64)
    assert c == 288
    # InceptionB: 35x35 -> 17x17
    p = "Mixed_6a."
    ho, wo = conv(p + "branch3x3", c, 384, h, w, 3, 3, stride=2)
    conv(p + "branch3x3dbl_1", c, 64, h, w, 1, 1)
    conv(p + "branch3x3dbl_2", 64, 96, h, w, 3, 3, ph=1, pw=1)
    conv(p + "branch3x3dbl_3", 96, 96, h, w, 3, 3, stride=2)
    pool(p + "max_pool", c, h, w, 3, 2)
    h, w, c = ho, wo, 384 + 96 + c
    assert (h, w, c) == (17, 17, 768)

    def inception_c(p, c7):
        conv(p + "branch1x1", 768, 192, h, w, 1, 1)
        conv(p + "branch7x7_1", 768, c7, h, w, 1, 1)
        conv(p + "branch7x7_2", c7, c7, h, w, 1, 7, pw=3)
        conv(p + "branch7x7_3", c7, 192, h, w, 7, 1, ph=3)
        conv(p + "branch7x7dbl_1", 768, c7, h, w, 1, 1)
        conv(p + "branch7x7dbl_2", c7, c7, h, w, 7, 1, ph=3)
        conv(p + "branch7x7dbl_3", c7, c7, h, w, 1, 7, pw=3)
        conv(p + "branch7x7dbl_4", c7, c7, h, w, 7, 1, ph=3)
        conv(p + "branch7x7dbl_5", c7, 192, h, w, 1, 7, pw=3)
        pool(p + "avg_pool", 768, h, w, 3, 1, 1)
        conv(p + "branch_pool", 768, 192, h, w, 1, 1)

    for name, c7 in (("Mixed_6b.", 128), ("Mixed_6c.", 160), ("Mixed_6d.", 160), ("Mixed_6e.", 192)):
        inception_c(name, c7)
    # InceptionAux (training): avg_pool2d(5, stride 3) 17 -> 5, conv0 1x1 768->128, conv1 5x5 128->768 -> 1x1,
    # adaptive average pool, fc 768 -> 1000.
    a = "AuxLogits."
    ah, aw = pool(a + "avg_pool", 768, h, w, 5, 3)
    conv(a + "conv0", 768, 128, ah, aw, 1, 1)
    conv(a + "conv1", 128, 768, ah, aw, 5, 5)
    m.layer(a + "fc", 2 * 768 * 1000, [(a + "fc.weight", 768 * 1000), (a + "fc.bias", 1000)])
    # InceptionD: 17x17 -> 8x8
    p = "Mixed_7a."
    conv(p + "branch3x3_1", 768, 192, h, w, 1, 1)
    ho, wo = conv(p + "branch3x3_2", 192, 320, h, w, 3, 3, stride=2)
    conv(p + "branch7x7x3_1", 768, 192, h, w, 1, 1)
    conv(p + "branch7x7x3_2", 192, 192, h, w, 1, 7, pw=3)
    conv(p + "branch7x7x3_3", 192, 192, h, w, 7, 1, ph=3)
    conv(p + "branch7x7x3_4", 192, 192, h, w, 3, 3, stride=2)
    pool(p + "max_pool", 768, h, w, 3, 2)
    h, w, c = ho, wo, 320 + 192 + 768
    assert (h, w, c) == (8, 8, 1280)

    def inception_e(p, cin):
        conv(p + "branch1x1", cin, 320, h, w, 1, 1)
        conv(p + "branch3x3_1", cin, 384, h, w, 1, 1)
        conv(p + "branch3x3_2a", 384, 384, h, w, 1, 3, pw=1)
        conv(p + "branch3x3_2b", 384, 384, h, w, 3, 1, ph=1)
        conv(p + "branch3x3dbl_1", cin, 448, h, w, 1, 1)
        conv(p + "branch3x3dbl_2", 448, 384, h, w, 3, 3, ph=1, pw=1)
        conv(p + "branch3x3dbl_3a", 384, 384, h, w, 1, 3, pw=1)
        conv(p + "branch3x3dbl_3b", 384, 384, h, w, 3, 1, ph=1)
        pool(p + "avg_pool", cin, h, w, 3, 1, 1)
        conv(p + "branch_pool", cin, 192, h, w, 1, 1)
        return 320 + 768 + 768 + 192

    c = inception_e("Mixed_7b.", c)
    c = inception_e("Mixed_7c.", c)
    assert c == 2048
    m.layer("avgpool", c * h * w)
    m.layer("fc", 2 * 2048 * 1000, [("fc.weight", 2048 * 1000), ("fc.bias", 1000)])

    aux = sum(p["elements"] for l in m.layers if l["name"].startswith("AuxLogits.") for p in l["params"])
    assert m.total_parameters() == 27161264, m.total_parameters()
    assert m.total_parameters() - aux == 23834568, m.total_parameters() - aux
    gemm = sum(l["forward_flops_per_sample"] for l in m.layers
               if (l["name"].endswith(".conv") or l["name"].endswith("fc")) and not l["name"].startswith("AuxLogits."))
    assert close(gemm / 2, 5.71e9, 0.01), gemm / 2
    return m


MODELS = [("resnet101.json", resnet101), ("inception-v3.json", inception_v3)]


def main():
    for filename, fn in MODELS:
        m = fn()
        m.check_unique_names()
        path = os.path.join(OUT_DIR, filename)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(m.to_json_text())
        print("%-20s %12d params %5d tensors %4d layers %10.3f GFLOPs fwd/sample"
              % (filename, m.total_parameters(), m.parameter_tensors(), len(m.layers), m.forward_flops() / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
