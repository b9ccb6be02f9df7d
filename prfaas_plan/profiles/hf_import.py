"""Import a Hugging Face ``config.json`` as a model profile.

Each supported family (keyed by ``model_type``; ``architectures`` is checked as a hint)
has a small handler that reads the family's keys into named mixer and FFN blocks and a
per-layer list of (mixer, ffn) names; shared code then writes the compact layer stack
(the shortest repeating pattern plus overrides) and the rest of the profile mapping.
Every key a handler needs is read through :class:`_Reader`, so a missing or malformed
key fails with a :class:`PlanInputError` naming that key and the model_type.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any

from ..errors import PlanInputError, show
from ..ranges import LAYERS, TOKENS, WIDTH
from .model import NONE_BLOCK

_MISSING = object()

# HF dtype names -> profile dtypes.
_TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
# quantization_config.quant_method -> (weights, routed experts or None = same as weights).
_QUANT_METHODS = {
    "fp8": ("fp8", None),
    "mxfp4": ("bf16", "fp4"),  # gpt-oss: MoE experts in MXFP4, everything else bf16
}
_KV_ASSUMPTION = "KV cached in bf16 (2 B/element), as the PrfaaS paper sizes it"
# The largest value a config key may hold: the profile's range for what it becomes (a width,
# by default), so an error names the config's key, not the profile field it turns into.
_MAX_INTEGER = int(WIDTH.hi)
_MAXIMA = {
    "num_hidden_layers": int(LAYERS.hi),
    "max_position_embeddings": int(TOKENS.hi),
    "sliding_window": int(TOKENS.hi),
    "index_topk": int(TOKENS.hi),
    "max_window_layers": int(LAYERS.hi),
    "first_k_dense_replace": int(LAYERS.hi),
    "decoder_sparse_step": int(LAYERS.hi),
}


class _Reader:
    """Typed access to the keys of one config mapping; errors name the key."""

    def __init__(self, data: dict, model_type: str, source: str | None, prefix: str = ""):
        self.data = data
        self.model_type = model_type
        self.source = source
        self.prefix = prefix

    def error(self, key: str, reason: str) -> PlanInputError:
        return PlanInputError(reason, source=self.source, field=self.prefix + key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, f"required by model_type '{self.model_type}' but missing")
            return default
        return value

    def integer(self, key: str, default: Any = _MISSING, *, minimum: int = 1) -> int:
        """An integer in [``minimum``, the key's maximum] (``default`` when absent or null, if given)."""
        value = self.raw(key, default)
        maximum = _MAXIMA.get(key, _MAX_INTEGER)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.error(key, f"expected an integer in [{minimum}, {maximum:,}], got {show(value)}")
        return value

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {show(value)}")
        return value

    def per_layer(self, key: str, length: int, names: dict) -> list:
        """A list (or string, one item per character) of ``length`` keys of ``names``, as the names it gives them."""
        value, allowed = self.raw(key), tuple(names)  # compared by ==: an entry may be a list
        if not isinstance(value, (list, str)):
            raise self.error(key, f"expected a list with one entry per layer, got {show(value)}")
        if len(value) != length:
            raise self.error(key, f"has {len(value)} entries but num_hidden_layers is {length}")
        for i, item in enumerate(value):
            if item not in allowed:
                known = ", ".join(repr(a) for a in allowed)
                raise self.error(key, f"entry {i} is {show(item)}, which is not understood (known: {known})")
        return [names[item] for item in value]

    def dtype(self, key: str) -> str:
        name = self.raw(key)
        if not isinstance(name, str) or name not in _TORCH_DTYPES:
            raise self.error(key, f"dtype {show(name)} is not understood (known: {', '.join(_TORCH_DTYPES)})")
        return _TORCH_DTYPES[name]


@dataclass
class _Model:
    """What a family handler extracts: blocks, per-layer names, and its assumptions."""

    mixers: dict[str, dict] = field(default_factory=dict)
    ffns: dict[str, dict] = field(default_factory=dict)
    layers: list[tuple[str, str]] = field(default_factory=list)  # (mixer, ffn) per layer
    assumptions: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------
# Shared block readers


def _head_dim(r: _Reader, key: str = "head_dim") -> tuple[int, str | None]:
    """``key`` if given, else hidden_size / num_attention_heads (with the assumption made)."""
    if r.has(key):
        return r.integer(key), None
    hidden, heads = r.integer("hidden_size"), r.integer("num_attention_heads")
    if hidden % heads:
        raise r.error(key, f"missing, and hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    return hidden // heads, f"{key} = hidden_size / num_attention_heads = {hidden // heads} (not given)"


def _gqa(
    r: _Reader,
    *,
    heads: str = "num_attention_heads",
    kv_heads: str = "num_key_value_heads",
    head_dim: int,
    v_head_dim: int | None = None,
    window: int | None = None,
    output_gate: bool = False,
) -> dict:
    """GQA block (SWA when ``window`` is given); dims in elements, window in tokens."""
    query, kv = r.integer(heads), r.integer(kv_heads)
    if query % kv:
        raise r.error(kv_heads, f"{kv} does not divide {heads} {query}")
    block: dict[str, Any] = {"type": "swa" if window else "gqa", "num_query_heads": query, "num_kv_heads": kv}
    block |= {"qk_head_dim": head_dim, "v_head_dim": v_head_dim or head_dim}
    if output_gate:
        block["output_gate"] = True
    if window:
        block["window_tokens"] = window
    return block


def _linear(kind: str, heads: int, key_heads: int, key_dim: int, value_dim: int, conv_kernel: int) -> dict:
    """Gated linear-attention block (dims in elements); its short convolution runs over the keys
    and queries (Mamba2: B and C) and the values (Mamba2: x): 2 key_heads key_dim + heads value_dim."""
    return {
        "type": "linear",
        "kind": kind,
        "num_heads": heads,
        "num_key_heads": key_heads,
        "key_head_dim": key_dim,
        "value_head_dim": value_dim,
        "conv_channels": 2 * key_heads * key_dim + heads * value_dim,
        "conv_kernel": conv_kernel,
        "output_gate": True,
    }


def _dense(r: _Reader, *, gated: bool = True) -> dict:
    return {"type": "dense", "intermediate_size": r.integer("intermediate_size")} | ({} if gated else {"gated": False})


def _moe(
    r: _Reader,
    *,
    experts: str,
    top_k: str,
    size: str,
    shared_count: str | None = None,
    shared_size: str | None = None,
) -> dict:
    """MoE block. Shared experts: ``shared_count`` of them at the expert size (DeepSeek),
    or one of ``shared_size`` when that key is above 0 (Qwen3.5; MiniMax's 0 = none)."""
    block: dict[str, Any] = {"type": "moe", "num_experts": r.integer(experts), "top_k": r.integer(top_k)}
    if block["top_k"] > block["num_experts"]:
        raise r.error(top_k, f"{block['top_k']} exceeds {experts} {block['num_experts']}")
    block["expert_intermediate_size"] = r.integer(size)
    block["shared_experts"] = r.integer(shared_count, 0, minimum=0) if shared_count else 0
    one_size = r.integer(shared_size, 0, minimum=0) if shared_size else 0
    if one_size:
        block["shared_experts"] = 1
        if one_size != block["expert_intermediate_size"]:
            block["shared_intermediate_size"] = one_size
    return block


def _blocks(names: list, builders: dict[str, Callable[[], dict]]) -> dict[str, dict]:
    """The blocks, in ``builders``' order, that the per-layer ``names`` use (each built, and its keys read, only then)."""
    return {name: build() for name, build in builders.items() if name in names}


def _ffns(r: _Reader, names: list[str], **moe: Any) -> dict[str, dict]:
    """The MoE (``_moe`` with the keys ``moe``) and dense FFN blocks that the per-layer ``names`` use."""
    return _blocks(names, {"moe": lambda: _moe(r, **moe), "dense": lambda: _dense(r)})


def _attention_layers(r: _Reader) -> list[str]:
    """Per-layer attention block names from ``layer_types``, or Qwen's
    use_sliding_window / max_window_layers rule (sliding from layer max_window_layers on)."""
    n = r.integer("num_hidden_layers")
    if r.has("layer_types"):
        return r.per_layer("layer_types", n, {"full_attention": "full", "sliding_attention": "swa"})
    if r.flag("use_sliding_window", False) and r.has("sliding_window"):
        first = r.integer("max_window_layers", minimum=0)
        return ["swa" if i >= first else "full" for i in range(n)]
    return ["full"] * n


def _attention_mixers(r: _Reader, names: list[str], **gqa: Any) -> dict[str, dict]:
    """The full (and, if used, sliding-window) GQA blocks for ``names`` from _attention_layers."""
    return _blocks(names, {"full": lambda: _gqa(r, **gqa), "swa": lambda: _gqa(r, window=r.integer("sliding_window"), **gqa)})


# ---------------------------------------------------------------------------------------
# Family handlers: (reader of the text-model keys) -> _Model


def _gqa_stack(r: _Reader, *, moe: bool = False) -> _Model:
    """Qwen3, Llama: GQA (optionally sliding on some layers) + dense SwiGLU FFN; with ``moe``,
    Qwen3-MoE: a MoE FFN except on mlp_only_layers / sparse-step layers (``_qwen_moe_ffns``)."""
    head_dim, note = _head_dim(r)
    names = _attention_layers(r)
    mixers = _attention_mixers(r, names, head_dim=head_dim)
    ffns, ffn_names = _qwen_moe_ffns(r) if moe else ({"dense": _dense(r)}, ["dense"] * len(names))
    return _Model(mixers, ffns, list(zip(names, ffn_names)), [note] if note else [])


def _qwen_moe_ffns(r: _Reader, **moe: Any) -> tuple[dict[str, dict], list[str]]:
    """Qwen MoE rule: a layer is dense (intermediate_size) if listed in mlp_only_layers or
    (index+1) is not a multiple of decoder_sparse_step; otherwise MoE. -> (blocks, per-layer names)"""
    n = r.integer("num_hidden_layers")
    dense_only = r.raw("mlp_only_layers", [])
    if not isinstance(dense_only, list) or not all(type(i) is int for i in dense_only):
        raise r.error("mlp_only_layers", f"expected a list of layer indices, got {show(dense_only)}")
    step = r.integer("decoder_sparse_step", 1)
    names = ["dense" if i in dense_only or (i + 1) % step else "moe" for i in range(n)]
    return _ffns(r, names, experts="num_experts", top_k="num_experts_per_tok", size="moe_intermediate_size", **moe), names


def _gdn(r: _Reader) -> dict:
    """Gated DeltaNet (its convolution runs over q, k and v)."""
    heads, key_heads = r.integer("linear_num_value_heads"), r.integer("linear_num_key_heads")
    key_dim, value_dim = r.integer("linear_key_head_dim"), r.integer("linear_value_head_dim")
    return _linear("gdn", heads, key_heads, key_dim, value_dim, r.integer("linear_conv_kernel_dim"))


def _qwen3_5_moe(r: _Reader) -> _Model:
    """Qwen3.5 MoE: layer_types of Gated DeltaNet (linear) and gated full attention."""
    names = r.per_layer("layer_types", r.integer("num_hidden_layers"), {"linear_attention": "gdn", "full_attention": "full"})
    gate = r.flag("attn_output_gate", True)
    notes = [] if r.has("attn_output_gate") else ["full-attention output gate assumed (attn_output_gate not given)"]
    mixers = _blocks(names, {"full": lambda: _gqa(r, head_dim=r.integer("head_dim"), output_gate=gate), "gdn": lambda: _gdn(r)})
    ffns, ffn_names = _qwen_moe_ffns(r, shared_size="shared_expert_intermediate_size")
    return _Model(mixers, ffns, list(zip(names, ffn_names)), notes)


def _minimax_m2(r: _Reader) -> _Model:
    """MiniMax-M2: full GQA + MoE on every layer; intermediate_size is the expert size."""
    m = _Model({"full": _gqa(r, head_dim=r.integer("head_dim"))})
    m.ffns["moe"] = _moe(
        r,
        experts="num_local_experts",
        top_k="num_experts_per_tok",
        size="intermediate_size",
        shared_size="shared_intermediate_size",
    )
    m.layers = [("full", "moe")] * r.integer("num_hidden_layers")
    return m


def _mimo_v2_flash(r: _Reader) -> _Model:
    """MiMo-V2-Flash: hybrid_layer_pattern (0 full, 1 SWA) and moe_layer_freq (0 dense, 1 MoE)."""
    n = r.integer("num_hidden_layers")
    names = r.per_layer("hybrid_layer_pattern", n, {0: "full", 1: "swa"})
    ffns = r.per_layer("moe_layer_freq", n, {0: "dense", 1: "moe"})
    m = _Model()
    if "full" in names:
        m.mixers["full"] = _gqa(r, head_dim=r.integer("head_dim"), v_head_dim=r.integer("v_head_dim"))
    if "swa" in names:
        swa_heads = "swa_num_attention_heads" if r.has("swa_num_attention_heads") else "num_attention_heads"
        m.mixers["swa"] = _gqa(
            r,
            heads=swa_heads,
            kv_heads="swa_num_key_value_heads",
            head_dim=r.integer("swa_head_dim"),
            v_head_dim=r.integer("swa_v_head_dim"),
            window=r.integer("sliding_window"),
        )
        m.assumptions.append("the SWA layers' attention-sink bias is ignored (no KV, negligible FLOPs)")
    m.ffns = _ffns(r, ffns, **_ROUTED_KEYS)
    m.layers = list(zip(names, ffns))
    return m


# the routed and shared experts of DeepSeek-style configs (DeepSeek-V3, Kimi K2, MiMo-V2-Flash)
_ROUTED_KEYS = {
    "experts": "n_routed_experts",
    "top_k": "num_experts_per_tok",
    "size": "moe_intermediate_size",
    "shared_count": "n_shared_experts",
}


def _deepseek(r: _Reader, *, sparse: bool = False) -> _Model:
    """DeepSeek-V3 / Kimi K2 (MLA) and, with ``sparse``, DeepSeek-V3.2 (MLA + indexer);
    layers before first_k_dense_replace (and off the moe_layer_freq grid) are dense."""
    mla: dict[str, Any] = {"type": "mla", "num_heads": r.integer("num_attention_heads")}
    mla |= {key: r.integer(key) for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")}
    if r.has("q_lora_rank"):
        mla["q_lora_rank"] = r.integer("q_lora_rank")
    notes = []
    if sparse:
        mla["type"] = "sparse"
        mla["index_num_heads"] = r.integer("index_n_heads")
        mla["index_head_dim"] = r.integer("index_head_dim")
        mla["index_topk_tokens"] = r.integer("index_topk")
        notes.append("indexer keys cached in the KV dtype (bf16); engines may store them in fp8")
    n, freq = r.integer("num_hidden_layers"), r.integer("moe_layer_freq", 1)
    first_moe = r.integer("first_k_dense_replace", 0, minimum=0)
    ffns = ["moe" if i >= first_moe and i % freq == 0 else "dense" for i in range(n)]
    return _Model({mla["type"]: mla}, _ffns(r, ffns, **_ROUTED_KEYS), [(mla["type"], f) for f in ffns], notes)


def _nemotron_h(r: _Reader) -> _Model:
    """Nemotron-H: hybrid_override_pattern, one character per layer: 'M' Mamba2 (no FFN),
    '*' GQA attention (no FFN), '-' no mixer + dense relu^2 FFN (2 matrices)."""
    by_char = {"M": ("mamba2", NONE_BLOCK), "*": ("full", NONE_BLOCK), "-": (NONE_BLOCK, "dense")}
    m = _Model(layers=r.per_layer("hybrid_override_pattern", r.integer("num_hidden_layers"), by_char))
    if by_char["M"] in m.layers:  # Mamba2: key heads = groups, key dim = state size, value dim = head dim
        heads, head_dim = r.integer("mamba_num_heads"), r.integer("mamba_head_dim")
        groups, state = r.integer("n_groups"), r.integer("ssm_state_size")
        m.mixers["mamba2"] = _linear("mamba2", heads, groups, state, head_dim, r.integer("conv_kernel"))
    if by_char["*"] in m.layers:
        head_dim, note = _head_dim(r, "attention_head_dim" if r.has("attention_head_dim") else "head_dim")
        m.mixers["full"] = _gqa(r, head_dim=head_dim)
        m.assumptions += [note] if note else []
    if by_char["-"] in m.layers:
        m.ffns["dense"] = _dense(r, gated=False)
    return m


def _gpt_oss(r: _Reader) -> _Model:
    """gpt-oss: alternating sliding/full GQA (layer_types) + MoE (intermediate_size = expert)."""
    names = _attention_layers(r)
    m = _Model(_attention_mixers(r, names, head_dim=r.integer("head_dim")))
    top_k = "experts_per_token" if r.has("experts_per_token") else "num_experts_per_tok"
    m.ffns["moe"] = _moe(r, experts="num_local_experts", top_k=top_k, size="intermediate_size")
    m.layers = [(name, "moe") for name in names]
    m.assumptions.append("attention sinks and biases are ignored (no KV, negligible parameters)")
    return m


# model_type -> (its handler, the architectures[] class that runs it)
_FAMILIES: dict[str, tuple[Callable[[_Reader], _Model], str]] = {
    "qwen3": (_gqa_stack, "Qwen3ForCausalLM"),
    "llama": (_gqa_stack, "LlamaForCausalLM"),
    "qwen3_moe": (partial(_gqa_stack, moe=True), "Qwen3MoeForCausalLM"),
    "qwen3_5_moe": (_qwen3_5_moe, "Qwen3_5MoeForConditionalGeneration"),
    "minimax_m2": (_minimax_m2, "MiniMaxM2ForCausalLM"),
    "mimo_v2_flash": (_mimo_v2_flash, "MiMoV2FlashForCausalLM"),
    "deepseek_v3": (_deepseek, "DeepseekV3ForCausalLM"),
    "kimi_k2": (_deepseek, "DeepseekV3ForCausalLM"),
    "deepseek_v32": (partial(_deepseek, sparse=True), "DeepseekV32ForCausalLM"),
    "nemotron_h": (_nemotron_h, "NemotronHForCausalLM"),
    "gpt_oss": (_gpt_oss, "GptOssForCausalLM"),
}
# architectures[] class -> the model_types it runs: the fallback when model_type is
# absent (the first), and a cross-check when it is given.
_ARCHITECTURES: dict[str, tuple[str, ...]] = {
    arch: tuple(t for t, (_, a) in _FAMILIES.items() if a == arch) for _, arch in _FAMILIES.values()
}
# Keys counting multi-token-prediction modules, which the profile does not model.
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


def _model_type(config: dict, source: str | None) -> str:
    """The supported model_type of ``config``; architectures is a fallback and a cross-check."""
    reader = _Reader(config, "", source)
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise reader.error("architectures", f"expected a list of class names, got {show(archs)}")
    known = ", ".join(sorted(_FAMILIES))
    model_type = config.get("model_type")
    if model_type is None:
        hinted = [_ARCHITECTURES[a][0] for a in archs if a in _ARCHITECTURES]
        if not hinted:
            reason = f"missing, and architectures {archs} names no supported model (supported model_type: {known})"
            raise reader.error("model_type", reason)
        return hinted[0]
    if not isinstance(model_type, str) or model_type not in _FAMILIES:
        reason = f"model_type {show(model_type)} (architectures {archs}) is not supported (supported: {known})"
        raise reader.error("model_type", reason)
    for arch in archs:
        runs = _ARCHITECTURES.get(arch, (model_type,))
        if model_type not in runs:
            reason = f"model_type {show(model_type)} contradicts architecture {show(arch)} (a {runs[0]!r} model)"
            raise reader.error("architectures", reason)
    return model_type


# ---------------------------------------------------------------------------------------
# Compact layer stack


def _ranges(indices: list[int]) -> tuple[str, int]:
    """[0, 1, 2, 5] -> ('0-2,5', 2 runs); ``indices`` ascending (a run keeps index - position)."""
    runs = [[i for _, i in run] for _, run in groupby(enumerate(indices), lambda pos_i: pos_i[1] - pos_i[0])]
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else f"{run[0]}" for run in runs), len(runs)


def _stack(layers: list[tuple[str, str]]) -> dict:
    """The ``layers`` mapping for a per-layer (mixer, ffn) list: the default ffn is the most
    common one; the pattern period minimises pattern items + override index runs (ties go to
    the shorter pattern); each residue class takes its most common (mixer, ffn)."""
    n = len(layers)
    default_ffn = Counter(f for _, f in layers).most_common(1)[0][0]
    best: tuple[int, list, dict] | None = None
    for period in range(1, n + 1):
        pattern = [Counter(layers[j::period]).most_common(1)[0][0] for j in range(period)]
        changes: dict[tuple[str | None, str | None], list[int]] = {}
        for i, (mixer, ffn) in enumerate(layers):
            p_mixer, p_ffn = pattern[i % period]
            if (mixer, ffn) != (p_mixer, p_ffn):
                key = (mixer if mixer != p_mixer else None, ffn if ffn != p_ffn else None)
                changes.setdefault(key, []).append(i)
        runs = {key: _ranges(indices) for key, indices in changes.items()}
        cost = period + sum(count for _, count in runs.values())
        if best is None or cost < best[0]:
            best = (cost, pattern, runs)
        if best[0] <= period + 1:  # a longer pattern costs at least period + 1
            break
    assert best is not None  # period 1 always sets it (n >= 1: default_ffn above needs a layer)
    _, pattern, runs = best
    stack: dict[str, Any] = {
        "count": n,
        "pattern": [mixer if ffn == default_ffn else f"{mixer}:{ffn}" for mixer, ffn in pattern],
        "ffn": default_ffn,
    }
    if runs:
        stack["overrides"] = [
            {"layers": spec} | {k: v for k, v in zip(("mixer", "ffn"), key) if v is not None} for key, (spec, _) in runs.items()
        ]
    return stack


# ---------------------------------------------------------------------------------------
# Public API


def _slug(text: str) -> str:
    """'Qwen/Qwen3-8B' -> 'qwen3-8b' (the last path component; '_' and other marks become '-')."""
    return re.sub(r"[^a-z0-9.]+", "-", text.rsplit("/", 1)[-1].lower()).strip("-.")


_SIZE_IN_NAME = re.compile(r"(?:^|-)\d+(?:\.\d+)?[bmt](?:-|$)")  # '-70b-', '-1.5b', '-1t'
_NAME_CHARS = 64  # an imported name is cut to this many characters


def spoken_size(params: float) -> str:
    """A parameter count as model names say it: below 10 (billions, or trillions from 10^12 on)
    to one decimal, rounded, without '.0' (8.03e9 -> '8b', 1.54e9 -> '1.5b', 1.026e12 -> '1t');
    from 10 to 999 billions truncated to whole billions, as names do (Llama 3.3 70B counts
    70.6e9 -> '70b'; Llama 3.1 405B 405.8e9 -> '405b')."""
    billions = params / 1e9
    if billions >= 1000:
        return f"{round(billions / 1000, 1):g}t"
    if billions >= 10:
        return f"{math.floor(billions + 1e-9)}b"
    return f"{round(billions, 1):g}b"


def _family(model_type: str) -> str:
    """The family word of a model_type ('qwen3_moe' -> 'qwen', 'kimi_k2' -> 'kimi')."""
    match = re.match(r"[a-z]+", model_type.lower())
    return match.group(0) if match else model_type.lower()


def _name_candidates(config: dict, path: str | Path | None) -> list[str]:
    """Names the config's own identifiers suggest, best first: ``_name_or_path`` (its first
    word: a repository id or a local folder), then the file's name as Hugging Face writes it
    (``org--Model-Name.config.json``; a ``config.json``: its folder, or the ``models--org--name``
    folder of the Hugging Face cache)."""
    out = []
    path_name = config.get("_name_or_path")
    if isinstance(path_name, str) and path_name.split():
        out.append(path_name.split()[0])
    if path is not None:
        path = Path(path)
        stem = path.name.removesuffix(".json").removesuffix(".config")
        if stem != "config":
            out.append(stem)
        else:
            cache = next((p.name for p in path.parents if p.name.startswith("models--")), None)
            out.append(cache if cache is not None else path.parent.name)
    return [_slug(c.rsplit("--", 1)[-1]) for c in out]


def imported_name(config: dict, path: str | Path | None = None, params: float | None = None) -> str:
    """The name of an imported model: the first of ``_name_candidates`` that names the model's
    family (its model_type's leading word, so a folder such as 'downloads' is not taken),
    else the model_type ('kimi_k2' -> 'kimi-k2'); then, unless the name already says a size
    ('70b'), the counted ``params`` as ``spoken_size`` says it ('kimi-k2-1t')."""
    model_type = str(config.get("model_type") or "model")
    family = _family(model_type)
    name = next((c for c in _name_candidates(config, path) if family in c.replace("-", "")), None)
    name = (name or _slug(model_type) or "model")[:_NAME_CHARS].strip("-.")
    if params is not None and not _SIZE_IN_NAME.search(name):
        name = f"{name}-{spoken_size(params)}"
    return name


def _first(readers: tuple[_Reader, ...], keys: tuple[str, ...]) -> tuple[_Reader, str] | None:
    """The first (reader, key) whose key is present, text model before top level."""
    return next(((rd, key) for rd in readers for key in keys if rd.has(key)), None)


def _dtypes(readers: tuple[_Reader, ...], has_linear: bool) -> tuple[dict, list[str]]:
    """Weights from quantization_config, else torch_dtype/dtype; KV bf16; state from
    mamba_ssm_dtype (else fp32); activations in the checkpoint dtype (else bf16)."""
    assumptions = [_KV_ASSUMPTION]
    found = _first(readers, ("torch_dtype", "dtype"))
    checkpoint = found[0].dtype(found[1]) if found else None
    dtypes: dict[str, str] = {"weights": checkpoint or "bf16"}
    found = _first(readers, ("quantization_config",))
    if found:
        rd, key = found
        quant = rd.raw(key)
        if not isinstance(quant, dict):
            raise rd.error(key, f"expected a mapping, got {show(quant)}")
        qr = _Reader(quant, rd.model_type, rd.source, f"{rd.prefix}{key}.")
        method = qr.raw("quant_method")
        if not isinstance(method, str) or method not in _QUANT_METHODS:
            raise qr.error("quant_method", f"{show(method)} is not understood (known: {', '.join(_QUANT_METHODS)})")
        dtypes["weights"], experts = _QUANT_METHODS[method]
        if experts:
            dtypes["experts"] = experts
    elif not checkpoint:
        assumptions.append("weights in bf16 (the config names no dtype)")
    dtypes["kv"] = "bf16"
    found = _first(readers, ("mamba_ssm_dtype",))
    dtypes["state"] = found[0].dtype(found[1]) if found else "fp32"
    if has_linear and not found:
        assumptions.append("recurrent state kept in fp32 (the config gives no mamba_ssm_dtype)")
    dtypes["activations"] = checkpoint or "bf16"
    return dtypes, assumptions


def profile_from_hf_config(config: dict, *, name: str | None = None, source: str | None = None) -> dict:
    """Return a model-profile mapping (plain dict, YAML-dumpable, keys in the schema's order).

    ``config`` is a parsed Hugging Face config.json (multimodal configs: its text_config);
    ``source`` (a path) is named in errors. The name defaults to ``imported_name`` without a
    size (``api.import_model`` adds the counted size where the name says none). Parameter counts are left out (optional).
    Raises PlanInputError naming the HF key that is missing or not understood.
    """
    if not isinstance(config, dict):
        raise PlanInputError(f"expected a JSON object, got {type(config).__name__}", source=source)
    model_type = _model_type(config, source)
    top = _Reader(config, model_type, source)
    nested = config.get("text_config")
    text = _Reader(nested, model_type, source, "text_config.") if isinstance(nested, dict) else top
    readers = (text, top) if text is not top else (top,)

    m = _FAMILIES[model_type][0](text)
    dtypes, assumptions = _dtypes(readers, any(b["type"] == "linear" for b in m.mixers.values()))
    others = [k for k, v in config.items() if k.endswith("_config") and k != "text_config" and isinstance(v, dict)]
    if text is not top and others:
        assumptions.append(f"text model only: {', '.join(others)} not modelled")
    mtp = sum(text.integer(k, 0, minimum=0) for k in _MTP_KEYS)
    if mtp:
        assumptions.append(f"the {mtp} multi-token-prediction module(s) are not modelled")
    tie = _first(readers, ("tie_word_embeddings",))
    if not tie:
        assumptions.append("word embeddings not tied (tie_word_embeddings not given)")

    n, hidden = text.integer("num_hidden_layers"), text.integer("hidden_size")
    if name is None:
        name = imported_name(config, source)
    archs = ", ".join(config.get("architectures") or []) or model_type
    return {
        "name": name,
        "description": f"{archs} ({model_type}): {n} layers, hidden {hidden}; from a Hugging Face config.json",
        "sources": [f"imported from Hugging Face config.json ({model_type})"],
        "assumptions": assumptions + m.assumptions,
        "hidden_size": hidden,
        "vocab_size": text.integer("vocab_size"),
        "tie_word_embeddings": tie[0].flag(tie[1]) if tie else False,
        "max_context_tokens": text.integer("max_position_embeddings"),
        "dtypes": dtypes,
        "mixers": m.mixers,
        "ffns": m.ffns,
        "layers": _stack(m.layers),
    }
