#!/usr/bin/env python3
"""Generate the model zoo scenarios/models/*.json (format: docs/model-format.md).

Standard library only.  Run from anywhere:  python3 scripts/gen_models.py
Each model function below encodes the architecture from its published definition and cites its
source; the parameter totals are asserted against the published figures before anything is written.

Conventions (applied to every model):
  * FLOPs count a multiply-add as 2 FLOPs (docs/model-format.md).
  * Convolution: 2 * k*k * Cin/groups * Cout * Hout * Wout.  Linear: 2 * in * out per row.
  * BatchNorm / LayerNorm: NORM_FLOPS_PER_ELEMENT (5) FLOPs per output element.  This is an
    approximation (batch/row statistics, normalise, scale and shift), the same one the bn1 entry of
    the example in docs/model-format.md uses (4 014 080 = 5 * 64*112*112).
  * Element-wise activations (ReLU, GELU, tanh), residual additions, softmax, dropout and
    losses are not counted (each well under 1 % of a model's total).
  * Pooling: one FLOP per window element per output element (approximation; max pooling does
    comparisons).
  * backward_flops_per_sample is omitted (the simulator's default is 2x forward) except where the
    true backward is cheaper: a layer whose input needs no gradient (the first conv of an image
    model: weight gradient only, 1x forward) and frozen layers (faster-rcnn: no backward at all,
    or input gradient only).
  * Layer and tensor names are those of the reference implementation's state_dict
    (torchvision / HuggingFace transformers), so a tensor can be matched against a real model.
"""

import json
import os
import sys

NORM_FLOPS_PER_ELEMENT = 5

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.normpath(os.path.join(HERE, "..", "scenarios", "models"))


class Model:
    def __init__(self, name, description, source, sample):
        self.name = name
        self.description = description
        self.source = source
        self.sample = sample
        self.layers = []

    def layer(self, name, flops, params=(), backward=None):
        """params: sequence of (tensor name, element count)."""
        flops = int(flops)
        assert flops > 0, (self.name, name, flops)
        entry = {"name": name, "forward_flops_per_sample": flops}
        if backward is not None:
            backward = int(backward)
            assert backward >= 0, (self.name, name, backward)
            entry["backward_flops_per_sample"] = backward
        entry["params"] = [{"name": n, "elements": int(e)} for n, e in params]
        for p in entry["params"]:
            assert p["elements"] > 0, (self.name, p)
        self.layers.append(entry)
        return entry

    # Totals -----------------------------------------------------------------------------------
    def total_parameters(self):
        return sum(p["elements"] for l in self.layers for p in l["params"])

    def parameter_tensors(self):
        return sum(len(l["params"]) for l in self.layers)

    def forward_flops(self):
        return sum(l["forward_flops_per_sample"] for l in self.layers)

    def check_unique_names(self):
        names = [l["name"] for l in self.layers]
        assert len(names) == len(set(names)), (self.name, "duplicate layer name")
        tensors = [p["name"] for l in self.layers for p in l["params"]]
        assert len(tensors) == len(set(tensors)), (self.name, "duplicate tensor name")

    # Output -----------------------------------------------------------------------------------
    def to_json_text(self):
        """Plain JSON, one layer per line (keeps the big files diff-able and small)."""
        head = [
            ("name", self.name),
            ("description", self.description),
            ("source", self.source),
            ("sample", self.sample),
            ("total_parameters", self.total_parameters()),
            ("parameter_tensors", self.parameter_tensors()),
        ]
        lines = ["{"]
        for k, v in head:
            lines.append("  %s: %s," % (json.dumps(k), json.dumps(v, ensure_ascii=False)))
        lines.append('  "layers": [')
        for i, l in enumerate(self.layers):
            sep = "," if i + 1 < len(self.layers) else ""
            lines.append("    " + json.dumps(l, separators=(", ", ": ")) + sep)
        lines.append("  ]")
        lines.append("}")
        text = "\n".join(lines) + "\n"
        json.loads(text)  # must round-trip as plain JSON
        return text


def conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


def conv_flops(k, cin, cout, hout, wout, groups=1):
    return 2 * k * k * (cin // groups) * cout * hout * wout


def close(value, published, rel):
    return abs(value - published) <= rel * published


# =============================================================================================
# ResNet-50 (also used as the Faster R-CNN backbone)
# =============================================================================================

def resnet50_body(m, prefix, h, w, bn_params, bn_flops_per_element, first_layer_no_input_grad,
                  frozen=lambda name: False, backward_override=None, blocks=(3, 4, 6, 3)):
    """Adds conv1 ... layer4 of torchvision's ResNet-50 (v1.5) to model m.

    Source: He et al. 2016, "Deep Residual Learning for Image Recognition", arXiv:1512.03385,
    Table 1 (50-layer: conv1 7x7/2 64; 3x3 max pool /2; [1x1 64, 3x3 64, 1x1 256] x3;
    [1x1 128, 3x3 128, 1x1 512] x4; [1x1 256, 3x3 256, 1x1 1024] x6; [1x1 512, 3x3 512, 1x1 2048] x3).
    torchvision/models/resnet.py (Bottleneck, expansion 4): v1.5 puts the stride in the 3x3 conv
    (conv2) and in the 1x1 downsample conv; convs have bias=False; downsample = conv1x1 + BN on the
    first block of every stage.  Forward order in Bottleneck.forward: conv1, bn1, conv2, bn2, conv3,
    bn3, downsample (applied to the block input), add, relu.

    bn_params: whether BN layers carry (weight, bias) parameters (False for FrozenBatchNorm2d).
    frozen(name): True if the conv's weight is frozen (requires_grad False: not listed as a tensor).
    backward_override(name, fwd_flops, is_conv): None or backward FLOPs for the layer.
    blocks: bottleneck blocks per stage ((3, 4, 23, 3) is ResNet-101, same Table 1).
    Returns (h, w, channels) of every stage output: [C2, C3, C4, C5].
    """
    outputs = []

    def bw(name, fwd, is_conv):
        return backward_override(name, fwd, is_conv) if backward_override else None

    def conv(name, k, cin, cout, hout, wout, no_input_grad=False):
        fwd = conv_flops(k, cin, cout, hout, wout)
        params = [] if frozen(name) else [(prefix + name + ".weight", k * k * cin * cout)]
        back = bw(name, fwd, True)
        if back is None and no_input_grad:
            back = fwd  # only the weight gradient is computed
        m.layer(prefix + name, fwd, params, back)

    def bn(name, c, hh, ww):
        fwd = bn_flops_per_element * c * hh * ww
        params = [(prefix + name + ".weight", c), (prefix + name + ".bias", c)] if bn_params else []
        m.layer(prefix + name, fwd, params, bw(name, fwd, False))

    # stem
    h, w = conv_out(h, 7, 2, 3), conv_out(w, 7, 2, 3)
    conv("conv1", 7, 3, 64, h, w, no_input_grad=first_layer_no_input_grad)
    bn("bn1", 64, h, w)
    h, w = conv_out(h, 3, 2, 1), conv_out(w, 3, 2, 1)
    fwd = 9 * 64 * h * w
    m.layer(prefix + "maxpool", fwd, [], bw("maxpool", fwd, False))

    inplanes = 64
    for stage, (planes, blocks, stride) in enumerate(zip((64, 128, 256, 512), blocks, (1, 2, 2, 2)), 1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = "layer%d.%d." % (stage, b)
            hin, win = h, w
            conv(p + "conv1", 1, inplanes, planes, hin, win)
            bn(p + "bn1", planes, hin, win)
            h, w = conv_out(hin, 3, s, 1), conv_out(win, 3, s, 1)
            conv(p + "conv2", 3, planes, planes, h, w)
            bn(p + "bn2", planes, h, w)
            conv(p + "conv3", 1, planes, planes * 4, h, w)
            bn(p + "bn3", planes * 4, h, w)
            if b == 0:  # s != 1 or inplanes != planes * 4
                conv(p + "downsample.0", 1, inplanes, planes * 4, h, w)
                bn(p + "downsample.1", planes * 4, h, w)
            inplanes = planes * 4
        outputs.append((h, w, inplanes))
    return outputs


def resnet50():
    # Source: He et al. 2016, arXiv:1512.03385, Table 1 (3.8e9 "FLOPs" there = multiply-adds of the
    # v1 variant); torchvision.models.resnet50 (IMAGENET1K_V1/V2 weights: 25 557 032 parameters,
    # 4.09 "GFLOPS" in the torchvision docs = 4.09 G multiply-adds for v1.5 at 224x224).
    m = Model(
        "resnet50",
        "ResNet-50 v1.5 (torchvision: stride in the 3x3 conv), ImageNet 1000 classes, 224x224 input. "
        "One layer per conv / BatchNorm / fc module (plus max pool and average pool) in forward order. "
        "BatchNorm FLOPs are an approximation (5 per output element); ReLU and residual additions are not counted.",
        "He et al. 2016, arXiv:1512.03385, Table 1; torchvision.models.resnet50 / torchvision/models/resnet.py "
        "(25 557 032 parameters, 161 tensors; 4.09 G multiply-adds at 224x224)",
        "image 224x224",
    )
    outs = resnet50_body(m, "", 224, 224, bn_params=True, bn_flops_per_element=NORM_FLOPS_PER_ELEMENT,
                         first_layer_no_input_grad=True)
    h, w, c = outs[-1]
    m.layer("avgpool", c * h * w)  # AdaptiveAvgPool2d((1,1)): 7x7 -> 1x1
    m.layer("fc", 2 * 2048 * 1000, [("fc.weight", 2048 * 1000), ("fc.bias", 1000)])

    assert m.total_parameters() == 25557032, m.total_parameters()
    assert m.parameter_tensors() == 161, m.parameter_tensors()
    # The documented example entries of docs/model-format.md.
    assert m.layers[0]["forward_flops_per_sample"] == 236027904
    assert m.layers[1]["forward_flops_per_sample"] == 4014080
    gemm = sum(l["forward_flops_per_sample"] for l in m.layers
               if l["name"].endswith(("conv1", "conv2", "conv3", "downsample.0")) or l["name"] == "fc")
    assert close(gemm / 2, 4.09e9, 0.01), gemm  # torchvision: 4.09 G multiply-adds
    assert 8.1e9 < m.forward_flops() < 8.4e9, m.forward_flops()
    return m


# =============================================================================================
# VGG-16
# =============================================================================================

def vgg16():
    # Source: Simonyan & Zisserman 2014, "Very Deep Convolutional Networks for Large-Scale Image
    # Recognition", arXiv:1409.1556, Table 1 configuration D (13 conv3x3 stride 1 pad 1 with bias:
    # 64,64,M,128,128,M,256x3,M,512x3,M,512x3,M; FC-4096, FC-4096, FC-1000), Table 2 (138 M params).
    # torchvision.models.vgg16 (cfg "D"): features.N / classifier.N module indices, 138 357 544
    # parameters, 15.47 "GFLOPS" (= G multiply-adds) at 224x224.  The AdaptiveAvgPool2d((7,7)) is the
    # identity at 224x224 and ReLU / Dropout have no parameters, so none of them gets an entry.
    m = Model(
        "vgg16",
        "VGG-16 (configuration D), ImageNet 1000 classes, 224x224 input. One layer per conv / max pool / "
        "fully-connected module in forward order (torchvision module indices); ReLU and dropout not counted.",
        "Simonyan & Zisserman 2014, arXiv:1409.1556, Table 1 (configuration D) and Table 2; torchvision.models.vgg16 "
        "(138 357 544 parameters, 32 tensors; 15.47 G multiply-adds at 224x224)",
        "image 224x224",
    )
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    h = w = 224
    cin = 3
    idx = 0
    first = True
    for v in cfg:
        if v == "M":
            h, w = h // 2, w // 2
            m.layer("features.%d" % idx, 4 * cin * h * w)  # MaxPool2d(2, 2)
            idx += 1
        else:
            fwd = conv_flops(3, cin, v, h, w)
            name = "features.%d" % idx
            m.layer(name, fwd, [(name + ".weight", 9 * cin * v), (name + ".bias", v)],
                    backward=fwd if first else None)  # first conv: the image needs no gradient
            first = False
            cin = v
            idx += 2  # Conv2d, ReLU
    fcs = [(0, 512 * 7 * 7, 4096), (3, 4096, 4096), (6, 4096, 1000)]  # Linear, ReLU, Dropout, ...
    for i, fin, fout in fcs:
        name = "classifier.%d" % i
        m.layer(name, 2 * fin * fout, [(name + ".weight", fin * fout), (name + ".bias", fout)])

    assert m.total_parameters() == 138357544, m.total_parameters()
    assert m.parameter_tensors() == 32, m.parameter_tensors()
    gemm = sum(l["forward_flops_per_sample"] for l in m.layers if l["params"])
    assert close(gemm / 2, 15.47e9, 0.005), gemm
    return m


# =============================================================================================
# Transformers
# =============================================================================================

def bert_large():
    # Source: Devlin et al. 2018, "BERT: Pre-training of Deep Bidirectional Transformers for Language
    # Understanding", arXiv:1810.04805, sec. 3 (BERT-LARGE: L=24, H=1024, A=16, 340 M parameters).
    # HuggingFace bert-large-uncased config.json: hidden_size 1024, num_hidden_layers 24,
    # num_attention_heads 16, intermediate_size 4096, vocab_size 30522, max_position_embeddings 512,
    # type_vocab_size 2.  Tensors follow transformers BertModel (modeling_bert.py): BertEmbeddings
    # (word/position/token_type embeddings, LayerNorm), per BertLayer: attention.self.{query,key,value},
    # attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}; BertPooler.dense.
    # Included: BertModel only (335 141 888 parameters, 391 tensors) -- no pre-training heads
    # (MLM transform/bias, NSP classifier) and no task head.
    d, L, heads, ff, vocab, pos, types, seq = 1024, 24, 16, 4096, 30522, 512, 2, 512
    m = Model(
        "bert-large",
        "BERT-Large uncased encoder (HuggingFace BertModel: embeddings, 24 layers, pooler; no pre-training or "
        "task heads), one sample = one sequence of 512 tokens. Linear FLOPs 2*in*out per token; attention "
        "scores and context 2*2*seq^2*hidden per layer, attached to the attention.self layer; LayerNorm FLOPs "
        "approximate (5 per element); GELU, softmax, dropout and residual additions not counted.",
        "Devlin et al. 2018, arXiv:1810.04805 (BERT-LARGE L=24, H=1024, A=16, 340M); HuggingFace "
        "bert-large-uncased config.json and transformers BertModel (335 141 888 parameters, 391 tensors)",
        "sequence of 512 tokens",
    )
    e = "embeddings."
    m.layer("embeddings",
            2 * seq * d + NORM_FLOPS_PER_ELEMENT * seq * d,  # word + position + token_type sums, LayerNorm
            [(e + "word_embeddings.weight", vocab * d), (e + "position_embeddings.weight", pos * d),
             (e + "token_type_embeddings.weight", types * d),
             (e + "LayerNorm.weight", d), (e + "LayerNorm.bias", d)])
    for i in range(L):
        p = "encoder.layer.%d." % i
        a = p + "attention.self."
        m.layer(p + "attention.self",
                3 * 2 * d * d * seq + 2 * 2 * seq * seq * d,  # Q, K, V projections + QK^T and AV
                [(a + "query.weight", d * d), (a + "query.bias", d),
                 (a + "key.weight", d * d), (a + "key.bias", d),
                 (a + "value.weight", d * d), (a + "value.bias", d)])
        o = p + "attention.output."
        m.layer(o + "dense", 2 * d * d * seq, [(o + "dense.weight", d * d), (o + "dense.bias", d)])
        m.layer(o + "LayerNorm", NORM_FLOPS_PER_ELEMENT * seq * d,
                [(o + "LayerNorm.weight", d), (o + "LayerNorm.bias", d)])
        m.layer(p + "intermediate.dense", 2 * d * ff * seq,
                [(p + "intermediate.dense.weight", d * ff), (p + "intermediate.dense.bias", ff)])
        m.layer(p + "output.dense", 2 * ff * d * seq,
                [(p + "output.dense.weight", ff * d), (p + "output.dense.bias", d)])
        m.layer(p + "output.LayerNorm", NORM_FLOPS_PER_ELEMENT * seq * d,
                [(p + "output.LayerNorm.weight", d), (p + "output.LayerNorm.bias", d)])
    m.layer("pooler.dense", 2 * d * d,  # applied to the [CLS] token only
            [("pooler.dense.weight", d * d), ("pooler.dense.bias", d)])

    assert m.total_parameters() == 335141888, m.total_parameters()
    assert m.parameter_tensors() == 5 + 16 * L + 2 == 391, m.parameter_tensors()
    assert close(m.total_parameters(), 335e6, 0.005)
    return m


def gpt_decoder(m, d, L, vocab, ctx, seq, ff=None):
    """GPT-2 style decoder (pre-LayerNorm blocks, learned positions, biases everywhere, lm head tied
    to wte).  Tensor names follow transformers GPT2Model (modeling_gpt2.py): wte, wpe,
    h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f.  Conv1D weights are
    [in, out]; element counts are the same.

    Attention: c_attn computes Q, K, V (2*d*3d per token); scores QK^T and context AV cost
    2*2*seq^2*d per sequence and are attached to the attention layer.  The full seq x seq score
    matrix is counted (the reference implementation computes it and masks the upper triangle).
    lm_head: logits over the vocabulary for every position, 2*d*vocab per token; its weight is wte
    (tied), so the lm_head entry lists no tensor and the gradient is communicated once, with wte."""
    ff = ff or 4 * d
    n = NORM_FLOPS_PER_ELEMENT
    m.layer("embeddings", seq * d,  # token + position embedding sum
            [("wte.weight", vocab * d), ("wpe.weight", ctx * d)])
    for i in range(L):
        p = "h.%d." % i
        m.layer(p + "ln_1", n * seq * d, [(p + "ln_1.weight", d), (p + "ln_1.bias", d)])
        m.layer(p + "attn", 2 * d * 3 * d * seq + 2 * 2 * seq * seq * d,
                [(p + "attn.c_attn.weight", d * 3 * d), (p + "attn.c_attn.bias", 3 * d)])
        m.layer(p + "attn.c_proj", 2 * d * d * seq,
                [(p + "attn.c_proj.weight", d * d), (p + "attn.c_proj.bias", d)])
        m.layer(p + "ln_2", n * seq * d, [(p + "ln_2.weight", d), (p + "ln_2.bias", d)])
        m.layer(p + "mlp.c_fc", 2 * d * ff * seq,
                [(p + "mlp.c_fc.weight", d * ff), (p + "mlp.c_fc.bias", ff)])
        m.layer(p + "mlp.c_proj", 2 * ff * d * seq,
                [(p + "mlp.c_proj.weight", ff * d), (p + "mlp.c_proj.bias", d)])
    m.layer("ln_f", n * seq * d, [("ln_f.weight", d), ("ln_f.bias", d)])
    m.layer("lm_head", 2 * d * vocab * seq)  # tied to wte.weight
    return m


def gpt2_xl():
    # Source: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", Table 2
    # (1542 M, 48 layers, d_model 1600); HuggingFace gpt2-xl config.json: n_embd 1600, n_layer 48,
    # n_head 25, vocab_size 50257, n_positions 1024 (n_inner null = 4*n_embd).  transformers
    # GPT2Model: 1 557 611 200 parameters, 580 tensors (the paper's Table 2 says 1542M; the count from
    # the released shapes is 1 557 611 200); GPT2LMHeadModel ties lm_head.weight to wte.weight.
    m = Model(
        "gpt2-xl",
        "GPT-2 XL decoder (48 layers, d_model 1600, 25 heads), one sample = one sequence of 1024 tokens. "
        "lm_head is tied to wte (gradient communicated once, with the embeddings). Linear FLOPs 2*in*out per "
        "token; attention scores and context 2*2*seq^2*d per layer (full matrix, causal mask not exploited) "
        "attached to the h.N.attn layer; LayerNorm FLOPs approximate (5 per element); GELU, softmax, dropout "
        "and residual additions not counted.",
        "Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners', Table 2; HuggingFace gpt2-xl "
        "config.json (n_embd 1600, n_layer 48, n_head 25, vocab 50257, n_positions 1024) and transformers "
        "GPT2Model / GPT2LMHeadModel (1 557 611 200 parameters with wte tied to lm_head, 580 tensors)",
        "sequence of 1024 tokens",
    )
    gpt_decoder(m, d=1600, L=48, vocab=50257, ctx=1024, seq=1024)
    assert m.total_parameters() == 1557611200, m.total_parameters()
    assert m.parameter_tensors() == 2 + 12 * 48 + 2 == 580, m.parameter_tensors()
    return m


def gpt3_175b():
    # Source: Brown et al. 2020, "Language Models are Few-Shot Learners", arXiv:2005.14165, Table 2.1
    # (GPT-3 175B: n_params 175.0B, n_layers 96, d_model 12288, n_heads 96, d_head 128, n_ctx 2048)
    # and sec. 2.1 ("the same model and architecture as GPT-2 ... with the exception that we use
    # alternating dense and locally banded sparse attention patterns"); GPT-2 BPE vocabulary of 50257
    # tokens; d_ff = 4 * d_model.  Modelled with GPT-2 tensor shapes (biases, tied lm head, learned
    # positions) and dense attention in every layer (the sparse layers are not modelled: attention-score
    # FLOPs are an upper bound).  12*L*d^2 + 13*L*d + (vocab + ctx)*d + 2d = 174 604 259 328.
    m = Model(
        "gpt3-175b",
        "GPT-3 175B-shaped decoder (96 layers, d_model 12288, 96 heads of 128, d_ff 49152, GPT-2 architecture and "
        "50257-token BPE vocabulary, lm_head tied to wte), one sample = one sequence of 2048 tokens. Dense "
        "attention in every layer (GPT-3's alternating locally banded sparse layers are not modelled). Linear "
        "FLOPs 2*in*out per token; attention scores and context 2*2*seq^2*d per layer attached to the h.N.attn "
        "layer; LayerNorm FLOPs approximate (5 per element); GELU, softmax and residual additions not counted.",
        "Brown et al. 2020, 'Language Models are Few-Shot Learners', arXiv:2005.14165, Table 2.1 (175.0B, "
        "n_layers 96, d_model 12288, n_heads 96, d_head 128, n_ctx 2048) and sec. 2.1; tensor shapes as "
        "transformers GPT2Model (174 604 259 328 parameters, 580 tensors)",
        "sequence of 2048 tokens",
    )
    gpt_decoder(m, d=12288, L=96, vocab=50257, ctx=2048, seq=2048)
    assert m.total_parameters() == 174604259328, m.total_parameters()
    assert close(m.total_parameters(), 175.0e9, 0.005), m.total_parameters()
    assert m.parameter_tensors() == 2 + 12 * 96 + 2 == 1156, m.parameter_tensors()
    assert len(m.layers) <= 600, len(m.layers)
    # Kaplan et al. 2020: forward ~ 2*N*seq (+ attention); check the order of magnitude.
    assert close(m.forward_flops(), 2 * m.total_parameters() * 2048, 0.05), m.forward_flops()
    return m


# =============================================================================================
# Faster R-CNN ResNet-50 FPN (torchvision, v1)
# =============================================================================================

def faster_rcnn_r50_fpn_build(H, W, rois, training):
    """torchvision.models.detection.fasterrcnn_resnet50_fpn (weights COCO_V1), as fine-tuned:

    * Backbone: torchvision ResNet-50 (resnet50_body above) with FrozenBatchNorm2d (weight, bias,
      running stats are buffers: no trainable parameters; forward x*scale+shift = 2 FLOPs per
      element) and trainable_backbone_layers=3 (resnet_fpn_backbone: parameters outside
      layer2/layer3/layer4 get requires_grad False, i.e. conv1 and layer1 are frozen).
      Frozen tensors have no gradient to communicate and are not listed; the frozen layers are still
      listed for their forward FLOPs, with backward 0 (nothing before them needs a gradient).
      FrozenBN in layer2-4 computes the input gradient only (1 FLOP per element).  layer2.0.conv1,
      layer2.0.downsample.0 and fpn.inner_blocks.0 read the frozen layer1 output: weight gradient only.
    * FPN (torchvision.ops.FeaturePyramidNetwork, in_channels [256, 512, 1024, 2048], out 256):
      inner_blocks.i 1x1 conv + bias, layer_blocks.i 3x3 conv + bias; forward order top-down
      (inner_blocks.3, layer_blocks.3, inner_blocks.2, ...); extra block LastLevelMaxPool (P6 =
      max_pool2d(P5, 1, 2)).  Upsample + add of the top-down path counted as 1 FLOP per element.
    * RPN head (torchvision RPNHead, 3 anchors per location): conv 3x3 256->256 + bias, cls_logits 1x1
      256->3, bbox_pred 1x1 256->12, shared over the 5 levels P2..P6 (FLOPs summed over the levels).
    * RoI heads: MultiScaleRoIAlign 7x7, sampling_ratio 2 (approx. 4 samples x 8 FLOPs bilinear +
      average = 36 FLOPs per output element), TwoMLPHead fc6 256*7*7->1024, fc7 1024->1024,
      FastRCNNPredictor cls_score 1024->91, bbox_pred 1024->364; `rois` RoIs per image.
    Not counted: image normalisation, anchor generation, proposal decoding / NMS, box sampling,
    losses, ReLUs.  Parameter layout (state_dict names) of torchvision >= 0.13
    (Conv2dNormActivation wrappers: "inner_blocks.0.0.weight", "rpn.head.conv.0.0.weight").
    """
    m = Model("faster-rcnn-r50-fpn", "", "", "")
    frozen_prefixes = ("conv1", "layer1.")
    frozen = []  # (name, elements) of frozen parameter tensors

    def is_frozen(name):
        return name.startswith(frozen_prefixes)


    def backward_override(name, fwd, is_conv):
        if not training:
            return None
        if is_frozen(name) or name in ("bn1", "maxpool"):
            return 0  # conv1, bn1, maxpool, layer1: no parameter or input gradient needed
        if is_conv:
            if name in ("layer2.0.conv1", "layer2.0.downsample.0"):
                return fwd  # input is layer1's output, which needs no gradient: weight gradient only
            return None  # default 2x
        if name.endswith(("bn1", "bn2", "bn3", "downsample.1")):
            return fwd // 2  # FrozenBN: input gradient only, 1 FLOP per element (forward is 2)
        return None

    outs = resnet50_body(m, "backbone.body.", H, W, bn_params=False, bn_flops_per_element=2,
                         first_layer_no_input_grad=True, frozen=is_frozen,
                         backward_override=backward_override)
    # Frozen conv weights, recomputed for the published total (conv1 + layer1 convs).
    frozen.append(("backbone.body.conv1.weight", 7 * 7 * 3 * 64))
    inplanes = 64
    for b in range(3):
        p = "backbone.body.layer1.%d." % b
        frozen += [(p + "conv1.weight", inplanes * 64), (p + "conv2.weight", 9 * 64 * 64),
                   (p + "conv3.weight", 64 * 256)]
        if b == 0:
            frozen.append((p + "downsample.0.weight", inplanes * 256))
        inplanes = 256

    # FPN ------------------------------------------------------------------------------------
    C = 256
    levels = outs  # [(h, w, c)] for C2..C5
    f = "backbone.fpn."
    for i in reversed(range(4)):
        h, w, cin = levels[i]
        name = f + "inner_blocks.%d" % i
        fwd = conv_flops(1, cin, C, h, w) + (C * h * w if i < 3 else 0)  # + top-down upsample/add
        back = fwd if (training and i == 0) else None  # C2 (layer1 output) needs no gradient
        m.layer(name, fwd, [(name + ".0.weight", cin * C), (name + ".0.bias", C)], back)
        name = f + "layer_blocks.%d" % i
        m.layer(name, conv_flops(3, C, C, h, w), [(name + ".0.weight", 9 * C * C), (name + ".0.bias", C)])
    h5, w5, _ = levels[3]
    h6, w6 = conv_out(h5, 1, 2, 0), conv_out(w5, 1, 2, 0)
    m.layer(f + "extra_blocks", C * h6 * w6)  # LastLevelMaxPool, kernel 1 stride 2
    feature_area = sum(h * w for h, w, _ in levels) + h6 * w6

    # RPN ------------------------------------------------------------------------------------
    A = 3
    r = "rpn.head."
    m.layer(r + "conv", 2 * 9 * C * C * feature_area, [(r + "conv.0.0.weight", 9 * C * C), (r + "conv.0.0.bias", C)])
    m.layer(r + "cls_logits", 2 * C * A * feature_area, [(r + "cls_logits.weight", C * A), (r + "cls_logits.bias", A)])
    m.layer(r + "bbox_pred", 2 * C * 4 * A * feature_area,
            [(r + "bbox_pred.weight", C * 4 * A), (r + "bbox_pred.bias", 4 * A)])

    # RoI heads ------------------------------------------------------------------------------
    rep = C * 7 * 7
    m.layer("roi_heads.box_roi_pool", 36 * rep * rois)
    for name, fin, fout in [("roi_heads.box_head.fc6", rep, 1024), ("roi_heads.box_head.fc7", 1024, 1024),
                            ("roi_heads.box_predictor.cls_score", 1024, 91),
                            ("roi_heads.box_predictor.bbox_pred", 1024, 91 * 4)]:
        m.layer(name, 2 * fin * fout * rois, [(name + ".weight", fin * fout), (name + ".bias", fout)])
    return m, frozen


def faster_rcnn_r50_fpn():
    # Source: Ren et al. 2015, "Faster R-CNN", arXiv:1506.01497; Lin et al. 2017, "Feature Pyramid
    # Networks for Object Detection", arXiv:1612.03144 (sec. 4: FPN with RPN and 2-fc RoI head);
    # torchvision.models.detection.fasterrcnn_resnet50_fpn (faster_rcnn.py, backbone_utils.py,
    # rpn.py, roi_heads.py, ops/feature_pyramid_network.py, ops/poolers.py): 41 755 286 parameters
    # counted by torchvision (frozen conv1/layer1 weights included, FrozenBatchNorm2d buffers not),
    # 134.38 "GFLOPS" in the torchvision docs.
    #
    # Training sample: one COCO image resized to min side 800 / max side 1333
    # (GeneralizedRCNNTransform) and padded to a multiple of 32: 800x1333 -> 800x1344;
    # box_batch_size_per_image = 512 sampled RoIs per image go through the box head.
    H, W, ROIS = 800, 1344, 512
    m, frozen = faster_rcnn_r50_fpn_build(H, W, ROIS, training=True)

    trainable = m.total_parameters()
    frozen_elems = sum(e for _, e in frozen)
    assert trainable + frozen_elems == 41755286, (trainable, frozen_elems)
    assert m.parameter_tensors() + len(frozen) == 83, (m.parameter_tensors(), len(frozen))
    assert (trainable, m.parameter_tensors(), frozen_elems, len(frozen)) == (41532886, 72, 222400, 11)

    # Cross-check the FLOP model against torchvision's published 134.38 G (multiply-adds, as for
    # resnet50's "4.09"), which matches eval mode on an image resized to 800x800 with the
    # rpn_post_nms_top_n_test = 1000 proposals through the box head, counting convs and linears.
    ev, _ = faster_rcnn_r50_fpn_build(800, 800, 1000, training=False)
    not_gemm = ("bn1", "bn2", "bn3", "downsample.1", "maxpool", "extra_blocks", "box_roi_pool")
    ev_gemm = sum(l["forward_flops_per_sample"] for l in ev.layers if not l["name"].endswith(not_gemm))
    assert close(ev_gemm / 2, 134.38e9, 0.01), ev_gemm / 2

    m.description = (
        "Faster R-CNN ResNet-50 FPN v1 (torchvision fasterrcnn_resnet50_fpn, 91 COCO classes), fine-tuned as "
        "torchvision does by default: FrozenBatchNorm2d (no trainable parameters) and trainable_backbone_layers=3 "
        "(conv1 and layer1 frozen). Only trainable tensors are listed (they are the gradients communicated): "
        "%d parameters in %d tensors; the frozen conv1/layer1 weights (%d parameters, %d tensors) make up "
        "torchvision's total of 41 755 286 in 83 tensors. Frozen layers keep their forward FLOPs and have "
        "backward 0. One sample = one image 800x1333 padded to 800x1344, 512 sampled RoIs through the box head "
        "(training). FLOPs approximate: FrozenBN 2 per element, RoIAlign ~36 per output element, top-down FPN "
        "add 1 per element; anchors, NMS, sampling, losses and ReLUs not counted. Same FLOP model gives 134.4 G "
        "multiply-adds at 800x800 with 1000 proposals (eval), torchvision's published 134.38 'GFLOPS'."
        % (trainable, m.parameter_tensors(), frozen_elems, len(frozen)))
    m.source = (
        "Ren et al. 2015, arXiv:1506.01497; Lin et al. 2017, arXiv:1612.03144; "
        "torchvision.models.detection.fasterrcnn_resnet50_fpn (COCO_V1 weights: 41 755 286 parameters incl. "
        "frozen, 134.38 G multiply-adds at 800x800; resnet_fpn_backbone trainable_layers=3, FrozenBatchNorm2d, "
        "RPNHead 3 anchors, TwoMLPHead 1024, FastRCNNPredictor 91 classes, box_batch_size_per_image 512)")
    m.sample = "image 800x1333 (padded to 800x1344), 512 RoIs"
    return m


# =============================================================================================

MODELS = [
    ("resnet50.json", resnet50),
    ("vgg16.json", vgg16),
    ("bert-large.json", bert_large),
    ("gpt2-xl.json", gpt2_xl),
    ("gpt3-175b.json", gpt3_175b),
    ("faster-rcnn-r50-fpn.json", faster_rcnn_r50_fpn),
]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for filename, fn in MODELS:
        m = fn()
        m.check_unique_names()
        text = m.to_json_text()
        path = os.path.join(OUT_DIR, filename)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
        print("%-26s %16d params %5d tensors %4d layers %14.3f GFLOPs fwd/sample"
              % (filename, m.total_parameters(), m.parameter_tensors(), len(m.layers), m.forward_flops() / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
