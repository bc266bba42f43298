#!/usr/bin/env python3
"""An independent reference for tessera's LLM engine (tests/llm_reference_test.cpp).

Reads a checkpoint folder (config.json + model.safetensors) and runs the model with numpy in
float64, written from the definitions of Hugging Face transformers' LlamaForCausalLM,
MistralForCausalLM, GPTJForCausalLM and FalconForCausalLM and of modeling_rope_utils' RoPE
types (default, linear, dynamic, llama3, yarn), not from tessera's code.

    llm_reference.py CHECKPOINT_DIR SCHEDULE_JSON

SCHEDULE_JSON is a list of chunks of token ids fed one after the other with a KV cache
(a prefill, further chunks, decode steps of one token). Prints a JSON list: the logits at the
last position of each chunk.
"""
import json
import math
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        dtype = info["dtype"]
        if dtype == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif dtype == "F16":
            a = np.frombuffer(raw, dtype="<f2")
        elif dtype == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit("unsupported dtype " + dtype)
        tensors[name] = a.astype(np.float64).reshape(info["shape"])
    return tensors


# ---- rotary embeddings (transformers' modeling_rope_utils) ----

def inv_frequencies(cfg, dim, seq_len):
    """The inverse frequencies and the attention factor for a forward pass whose largest
    position is seq_len - 1."""
    base = float(cfg.get("rope_theta", 10000.0))
    max_pos = cfg.get("max_position_embeddings") or cfg.get("n_positions") or 2048
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    exponents = np.arange(0, dim, 2, dtype=np.float64) / dim
    inv = 1.0 / base ** exponents
    factor = float(scaling.get("factor", 1.0))
    attention = 1.0
    if kind == "linear":
        inv = inv / factor
    elif kind == "dynamic":
        if seq_len > max_pos:
            base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
            inv = 1.0 / base ** exponents
    elif kind == "llama3":
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        inv = np.where(medium, blended, scaled)
    elif kind == "yarn":
        trained = max_pos
        if scaling.get("original_max_position_embeddings"):
            trained = scaling["original_max_position_embeddings"]
            factor = max_pos / trained
        attention = scaling.get("attention_factor") or (0.1 * math.log(factor) + 1.0)
        fast = scaling.get("beta_fast") or 32
        slow = scaling.get("beta_slow") or 1

        def correction(rotations):
            return dim * math.log(trained / (rotations * 2 * math.pi)) / (2 * math.log(base))

        lo = max(math.floor(correction(fast)), 0)
        hi = min(math.ceil(correction(slow)), dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        keep = 1 - ramp
        inv = (inv / factor) * (1 - keep) + inv * keep
    elif kind != "default":
        raise SystemExit("unknown rope type " + kind)
    return inv, attention


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_every_two(x):  # GPT-J
    x1, x2 = x[..., ::2], x[..., 1::2]
    return np.stack([-x2, x1], axis=-1).reshape(x.shape)


def apply_rope(x, positions, cfg, dim, interleaved):
    """x: [tokens, heads, head_dim]; rotates the first `dim` features."""
    inv, attention = inv_frequencies(cfg, dim, int(positions[-1]) + 1)
    angles = np.outer(positions, inv)  # [tokens, dim/2]
    if interleaved:
        angles = np.repeat(angles, 2, axis=-1)
        turn = rotate_every_two
    else:
        angles = np.concatenate([angles, angles], axis=-1)
        turn = rotate_half
    cos = (np.cos(angles) * attention)[:, None, :]
    sin = (np.sin(angles) * attention)[:, None, :]
    part = x[..., :dim]
    rotated = part * cos + turn(part) * sin
    return np.concatenate([rotated, x[..., dim:]], axis=-1)


# ---- building blocks ----

def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def silu(x):
    return x / (1 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


_erf = np.vectorize(math.erf)


def gelu_exact(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def attend(q, keys, values, positions, window):
    """q: [t, heads, hd]; keys/values: [total, kv_heads, hd] (the whole cache)."""
    heads, kv_heads, hd = q.shape[1], keys.shape[1], q.shape[2]
    rep = heads // kv_heads
    k = np.repeat(keys, rep, axis=1)  # repeat_kv
    v = np.repeat(values, rep, axis=1)
    scores = np.einsum("thd,shd->hts", q, k) / math.sqrt(hd)
    kpos = np.arange(keys.shape[0])[None, :]
    qpos = np.asarray(positions)[:, None]
    hidden = kpos > qpos
    if window:
        hidden = hidden | (qpos - kpos >= window)
    scores = np.where(hidden[None], -np.inf, scores)
    scores = scores - scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, v)


class Model:
    def __init__(self, folder):
        with open(folder + "/config.json") as f:
            self.cfg = json.load(f)
        self.w = read_safetensors(folder + "/model.safetensors")
        c = self.cfg
        self.type = c["model_type"]
        self.hidden = c.get("hidden_size") or c.get("n_embd")
        self.heads = c.get("num_attention_heads") or c.get("n_head")
        self.layers = c.get("num_hidden_layers") or c.get("n_layer")
        self.hd = self.hidden // self.heads
        if self.type in ("llama", "mistral"):
            self.kv_heads = c.get("num_key_value_heads") or self.heads
            self.eps = c.get("rms_norm_eps", 1e-6)
            self.window = c.get("sliding_window") if self.type == "mistral" else None
            self.rot_dim = self.hd
        elif self.type == "gptj":
            self.kv_heads = self.heads
            self.eps = c.get("layer_norm_epsilon", 1e-5)
            self.window = None
            self.rot_dim = c.get("rotary_dim") or self.hd
        else:  # falcon
            self.new_arch = c.get("new_decoder_architecture", False)
            if self.new_arch:
                self.kv_heads = c.get("num_kv_heads") or self.heads
            else:
                self.kv_heads = 1 if c.get("multi_query", True) else self.heads
            self.eps = c.get("layer_norm_epsilon", 1e-5)
            self.window = None
            self.rot_dim = self.hd
        self.cache = [([], []) for _ in range(self.layers)]
        self.length = 0

    def g(self, name):
        return self.w.get(name)

    def run(self, tokens):
        positions = np.arange(self.length, self.length + len(tokens))
        if self.type in ("llama", "mistral"):
            x = self.llama(tokens, positions)
        elif self.type == "gptj":
            x = self.gptj(tokens, positions)
        else:
            x = self.falcon(tokens, positions)
        self.length += len(tokens)
        return x[-1]

    def cached(self, i, k, v):
        ks, vs = self.cache[i]
        ks.append(k)
        vs.append(v)
        return np.concatenate(ks, 0), np.concatenate(vs, 0)

    def llama(self, tokens, positions):
        g, t = self.g, len(tokens)
        x = g("model.embed_tokens.weight")[tokens]
        for i in range(self.layers):
            p = "model.layers.%d." % i
            h = rms_norm(x, g(p + "input_layernorm.weight"), self.eps)
            q = linear(h, g(p + "self_attn.q_proj.weight"), g(p + "self_attn.q_proj.bias"))
            k = linear(h, g(p + "self_attn.k_proj.weight"), g(p + "self_attn.k_proj.bias"))
            v = linear(h, g(p + "self_attn.v_proj.weight"), g(p + "self_attn.v_proj.bias"))
            q = apply_rope(q.reshape(t, self.heads, self.hd), positions, self.cfg, self.rot_dim, False)
            k = apply_rope(k.reshape(t, self.kv_heads, self.hd), positions, self.cfg, self.rot_dim, False)
            keys, values = self.cached(i, k, v.reshape(t, self.kv_heads, self.hd))
            a = attend(q, keys, values, positions, self.window).reshape(t, -1)
            x = x + linear(a, g(p + "self_attn.o_proj.weight"), g(p + "self_attn.o_proj.bias"))
            h = rms_norm(x, g(p + "post_attention_layernorm.weight"), self.eps)
            m = silu(linear(h, g(p + "mlp.gate_proj.weight"))) * linear(h, g(p + "mlp.up_proj.weight"))
            x = x + linear(m, g(p + "mlp.down_proj.weight"))
        x = rms_norm(x, g("model.norm.weight"), self.eps)
        head = g("lm_head.weight")
        return linear(x, head if head is not None else g("model.embed_tokens.weight"))

    def gptj(self, tokens, positions):
        g, t = self.g, len(tokens)
        x = g("transformer.wte.weight")[tokens]
        for i in range(self.layers):
            p = "transformer.h.%d." % i
            h = layer_norm(x, g(p + "ln_1.weight"), g(p + "ln_1.bias"), self.eps)
            q = linear(h, g(p + "attn.q_proj.weight")).reshape(t, self.heads, self.hd)
            k = linear(h, g(p + "attn.k_proj.weight")).reshape(t, self.heads, self.hd)
            v = linear(h, g(p + "attn.v_proj.weight")).reshape(t, self.heads, self.hd)
            q = apply_rope(q, positions, self.cfg, self.rot_dim, True)
            k = apply_rope(k, positions, self.cfg, self.rot_dim, True)
            keys, values = self.cached(i, k, v)
            a = linear(attend(q, keys, values, positions, None).reshape(t, -1), g(p + "attn.out_proj.weight"))
            m = linear(gelu_tanh(linear(h, g(p + "mlp.fc_in.weight"), g(p + "mlp.fc_in.bias"))),
                       g(p + "mlp.fc_out.weight"), g(p + "mlp.fc_out.bias"))
            x = x + a + m
        x = layer_norm(x, g("transformer.ln_f.weight"), g("transformer.ln_f.bias"), self.eps)
        head = g("lm_head.weight")
        return linear(x, head if head is not None else g("transformer.wte.weight"), g("lm_head.bias"))

    def falcon(self, tokens, positions):
        g, t, hd = self.g, len(tokens), self.hd
        parallel = self.cfg.get("parallel_attn", True)
        x = g("transformer.word_embeddings.weight")[tokens]

        def ln(name, y):
            return layer_norm(y, g(name + ".weight"), g(name + ".bias"), self.eps)

        for i in range(self.layers):
            p = "transformer.h.%d." % i
            if self.new_arch:
                h_attn, h_mlp = ln(p + "ln_attn", x), ln(p + "ln_mlp", x)
            else:
                h_attn = ln(p + "input_layernorm", x)
                h_mlp = h_attn
            fused = linear(h_attn, g(p + "self_attention.query_key_value.weight"),
                           g(p + "self_attention.query_key_value.bias"))
            if self.new_arch:
                per = self.heads // self.kv_heads
                f = fused.reshape(t, self.kv_heads, per + 2, hd)
                q = f[:, :, :per].reshape(t, self.heads, hd)
                k, v = f[:, :, per], f[:, :, per + 1]
            elif self.kv_heads == self.heads:
                f = fused.reshape(t, self.heads, 3, hd)
                q, k, v = f[:, :, 0], f[:, :, 1], f[:, :, 2]
            else:
                f = fused.reshape(t, self.heads + 2, hd)
                q, k, v = f[:, :-2], f[:, -2:-1], f[:, -1:]
            q = apply_rope(q, positions, self.cfg, self.rot_dim, False)
            k = apply_rope(k, positions, self.cfg, self.rot_dim, False)
            keys, values = self.cached(i, k, v)
            a = linear(attend(q, keys, values, positions, None).reshape(t, -1),
                       g(p + "self_attention.dense.weight"), g(p + "self_attention.dense.bias"))
            if not parallel:
                x = x + a
                h_mlp = ln(p + "post_attention_layernorm", x)
            m = linear(gelu_exact(linear(h_mlp, g(p + "mlp.dense_h_to_4h.weight"), g(p + "mlp.dense_h_to_4h.bias"))),
                       g(p + "mlp.dense_4h_to_h.weight"), g(p + "mlp.dense_4h_to_h.bias"))
            x = x + a + m if parallel else x + m
        x = ln("transformer.ln_f", x)
        head = g("lm_head.weight")
        return linear(x, head if head is not None else g("transformer.word_embeddings.weight"))


def main():
    model = Model(sys.argv[1])
    schedule = json.loads(sys.argv[2])
    out = [model.run(np.asarray(chunk, dtype=np.int64)).tolist() for chunk in schedule]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
