#!/usr/bin/env python3
"""Writes a tiny random-weight LLaMA model as GGUF, for tests (no model can
be downloaded here, and none is committed).

    make-tiny-model.py LLAMA_SHARE OUT.gguf [--seed N]

LLAMA_SHARE is the share/ directory packaging/dev/llama-server.sh prints:
llama.cpp's Python GGUF writer (gguf-py) and its vocabulary-only file
ggml-vocab-llama-spm.gguf, whose tokenizer the model takes. About 17 MB:
a 32,000-token vocabulary, 64-wide embeddings, two layers."""
import argparse
import os
import sys

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("share")
parser.add_argument("out")
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
sys.path.insert(0, os.path.join(args.share, "gguf-py"))
import gguf  # noqa: E402

vocab = gguf.GGUFReader(os.path.join(args.share, "ggml-vocab-llama-spm.gguf"))


def field(name):
    f = vocab.fields[name]
    return [f.parts[i] for i in f.data]


tokens = [bytes(p).decode("utf-8") for p in field("tokenizer.ggml.tokens")]
scores = [float(p[0]) for p in field("tokenizer.ggml.scores")]
types = [int(p[0]) for p in field("tokenizer.ggml.token_type")]

n_vocab, n_embd, n_layer, n_head, n_ff = len(tokens), 64, 2, 4, 128
rng = np.random.default_rng(args.seed)


def weights(*shape):
    return (rng.standard_normal(shape) * 0.02).astype(np.float32)


w = gguf.GGUFWriter(args.out, "llama")
w.add_name("Einsora tiny test model")
w.add_context_length(256)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)

w.add_tensor("token_embd.weight", weights(n_vocab, n_embd))
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
w.add_tensor("output.weight", weights(n_vocab, n_embd))
for i in range(n_layer):
    w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(f"blk.{i}.{name}.weight", weights(n_embd, n_embd))
    w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor(f"blk.{i}.ffn_gate.weight", weights(n_ff, n_embd))
    w.add_tensor(f"blk.{i}.ffn_up.weight", weights(n_ff, n_embd))
    w.add_tensor(f"blk.{i}.ffn_down.weight", weights(n_embd, n_ff))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
