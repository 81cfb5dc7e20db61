"""The GPT example (examples/char_gpt.py) on the real Jargon File: a few training steps lower
the loss, and its pieces (vocabulary, unigram entropy, causal attention, sampling) work."""
import os
import sys

import numpy as np
import pytest

import gt
from conftest import ROOT, check

sys.path.insert(0, os.path.join(ROOT, "examples"))
import char_gpt  # noqa: E402

needs_corpus = pytest.mark.skipif(not os.path.exists(char_gpt.CORPUS),
                                  reason="the Debian package jargon-text is not installed")


def test_vocabulary_round_trip_and_unigram_entropy():
    v = char_gpt.Vocabulary("hello world")
    assert v.decode(v.encode("low hell")) == "low hell"
    ab = char_gpt.Vocabulary("ab")
    # add-one smoothed frequencies in "aaab": p(a) = 4/6, p(b) = 2/6
    expected = -(np.log(4 / 6) + np.log(2 / 6)) / 2
    assert abs(char_gpt.unigram_entropy(ab.encode("aaab"), ab.encode("ab"), len(ab)) - expected) < 1e-12


def test_attention_is_causal():
    gt.manual_seed(0)
    attn = char_gpt.CausalSelfAttention(embd=8, heads=2, block_size=6)
    x = np.random.default_rng(0).standard_normal((1, 6, 8)).astype(np.float32)
    y = attn(gt.tensor(x)).numpy()
    x2 = x.copy()
    x2[0, 4:] += 10.0  # changing later positions must not change earlier outputs
    y2 = attn(gt.tensor(x2)).numpy()
    check(y2[0, :4], y[0, :4].astype(np.float64), atol=1e-5)
    assert np.abs(y2[0, 4:] - y[0, 4:]).max() > 1e-3


@needs_corpus
def test_a_few_steps_lower_the_loss_and_sample():
    args = char_gpt.parse(["--steps", "40", "--batch-size", "16", "--block-size", "32", "--layers", "1",
                           "--embd", "64", "--eval-every", "40", "--sample", "20", "--lr", "1e-2"])
    result = char_gpt.train(args)
    h = result["history"]
    assert len(h) == 40 and np.isfinite(h).all()
    assert h[0] > np.log(100)  # about ln(155), the vocabulary, at the start
    assert np.mean(h[-5:]) < np.mean(h[:3]) - 1.0
    assert result["val"] < result["unigram"] + 0.3  # already close to the unigram model
